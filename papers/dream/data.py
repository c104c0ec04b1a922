"""MultiDigits: a two-digit multi-task set built from scikit-learn's 8x8 digits (a MultiMNIST substitute).

rng = default_rng(data_seed); perm = rng.permutation(1797); train pool perm[:1200], test pool perm[1200:].
Pairs (a, b) are drawn with replacement (train: a then b, 6000 each; test: 2000 each, after the train draws).
Canvas 8 x 12 of zeros; canvas[:, 0:8] = image a; canvas[:, 4:12] = max(canvas[:, 4:12], image b); flattened
row-major to 96 features in [0, 1]. Tasks: digit of a, digit of b, and optionally (a + b) mod 2.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["make_multidigits", "compose_pair", "draw_pairs"]


@lru_cache(maxsize=1)
def _digits():
    from sklearn.datasets import load_digits

    data = load_digits()
    return (data.images / 16.0).astype(np.float64), data.target.astype(np.int64)


def compose_pair(img_a: np.ndarray, img_b: np.ndarray) -> np.ndarray:
    """Overlay two 8x8 images on an 8x12 canvas (b shifted right by 4, max where they overlap), flattened."""
    canvas = np.zeros(img_a.shape[:-2] + (8, 12))
    canvas[..., :, 0:8] = img_a
    canvas[..., :, 4:12] = np.maximum(canvas[..., :, 4:12], img_b)
    return canvas.reshape(canvas.shape[:-2] + (96,))


def draw_pairs(n_train_pairs: int, n_test_pairs: int, data_seed: int = 0):
    """The pair draw of MultiDigits (and ConflictDigits): ((a_train, b_train), (a_test, b_test)), indices into the
    1797 scikit-learn digits. rng = default_rng(data_seed); perm = rng.permutation(1797); train pool perm[:1200],
    test pool perm[1200:]; then, in this order, a_train, b_train (``n_train_pairs`` each, with replacement from the
    train pool) and a_test, b_test (``n_test_pairs`` each from the test pool)."""
    for name, v in (("n_train_pairs", n_train_pairs), ("n_test_pairs", n_test_pairs)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    n_images = _digits()[0].shape[0]
    rng = np.random.default_rng(data_seed)
    perm = rng.permutation(n_images)
    train_pool, test_pool = perm[:1200], perm[1200:]
    a_tr = rng.choice(train_pool, n_train_pairs)
    b_tr = rng.choice(train_pool, n_train_pairs)
    a_te = rng.choice(test_pool, n_test_pairs)
    b_te = rng.choice(test_pool, n_test_pairs)
    return (a_tr, b_tr), (a_te, b_te)


@lru_cache(maxsize=4)
def make_multidigits(n_train_pairs: int = 6000, n_test_pairs: int = 2000, data_seed: int = 0):
    """(X_train (n, 96) float32, Y_train (n, 3) int64, X_test, Y_test); Y columns: digit a, digit b, parity."""
    if n_train_pairs < 1 or n_test_pairs < 1:
        raise ValueError("n_train_pairs and n_test_pairs must be >= 1")
    images, labels = _digits()
    (a_tr, b_tr), (a_te, b_te) = draw_pairs(n_train_pairs, n_test_pairs, data_seed)

    def build(a, b):
        X = compose_pair(images[a], images[b]).astype(np.float32)
        Y = np.stack([labels[a], labels[b], (labels[a] + labels[b]) % 2], axis=1)
        return X, Y

    X_train, Y_train = build(a_tr, b_tr)
    X_test, Y_test = build(a_te, b_te)
    return X_train, Y_train, X_test, Y_test
