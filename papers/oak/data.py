"""Package-shipped data: VADER lexicon words (MiniLM testbed) and scikit-learn digits (digits testbed)."""
from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path

import numpy as np

__all__ = ["VADER_SHA256", "vader_words", "sample_words", "word_labels", "digits_split", "rotate_images"]

#: SHA-256 of vaderSentiment/vader_lexicon.txt in vadersentiment 3.3.2
VADER_SHA256 = "1ec9c6e9ee19aade328f8beb393a6afa71a5bb3acf7d3cc22d4ef568df374bf5"


def _lexicon_path() -> Path:
    spec = importlib.util.find_spec("vaderSentiment")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the package vadersentiment is not installed; pip install vadersentiment==3.3.2")
    return Path(list(spec.submodule_search_locations)[0]) / "vader_lexicon.txt"


def vader_words(path=None, sha256: str = VADER_SHA256):
    """Words of the VADER lexicon matching ^[a-z]+$ with |mean valence| >= 1, first occurrence kept.

    Returns (words, mean valences). Raises RuntimeError on a checksum mismatch.
    """
    path = Path(path) if path is not None else _lexicon_path()
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256:
        raise RuntimeError(f"checksum mismatch for the VADER lexicon {path.name}: {digest}, expected {sha256}")
    words, means, seen = [], [], set()
    for line in raw.decode("utf-8", errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not re.fullmatch(r"[a-z]+", parts[0]):
            continue
        mean = float(parts[1])
        if abs(mean) < 1.0 or parts[0] in seen:
            continue
        seen.add(parts[0])
        words.append(parts[0])
        means.append(mean)
    return words, np.array(means)


def sample_words(n_pool: int, n_train: int, n_test: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of n_train + n_test distinct words out of n_pool (train first)."""
    if n_train < 1 or n_test < 1:
        raise ValueError(f"n_train and n_test must be >= 1, got {n_train} and {n_test}")
    if n_train + n_test > n_pool:
        raise ValueError(f"n_train + n_test = {n_train + n_test} is larger than the pool ({n_pool})")
    return rng.choice(n_pool, size=n_train + n_test, replace=False)


def word_labels(words, means, task: str) -> np.ndarray:
    """Labels in {-1, +1}: "sentiment" = sign(mean valence); "parity" = +1 iff len(word) is even."""
    if task == "sentiment":
        return np.where(np.asarray(means) > 0, 1.0, -1.0)
    if task == "parity":
        return np.array([1.0 if len(w) % 2 == 0 else -1.0 for w in words])
    raise ValueError(f"task must be 'sentiment' or 'parity', got {task!r}")


def digits_split(seed: int):
    """Digits 0-4 of sklearn's load_digits (pixels / 16), permuted with ``seed``: 450 pretraining images and
    the 451-image fine-tuning pool. Returns (x_pre, y_pre, x_pool (8x8 images), y_pool)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    keep = d.target <= 4
    x = d.images[keep] / 16.0
    y = d.target[keep]
    perm = np.random.default_rng(seed).permutation(len(y))
    x, y = x[perm], y[perm]
    return x[:450].reshape(450, 64), y[:450], x[450:], y[450:]


def rotate_images(images, alpha: float) -> np.ndarray:
    """Rotate 8x8 images by ``alpha`` degrees (scipy.ndimage.rotate, bilinear, zero fill); returns (n, 64)."""
    from scipy.ndimage import rotate

    if not np.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha!r}")
    images = np.asarray(images, dtype=np.float64)
    out = np.stack([rotate(img, alpha, reshape=False, order=1, mode="constant", cval=0.0) for img in images])
    return out.reshape(len(images), -1)
