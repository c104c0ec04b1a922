"""Digits (sklearn ``load_digits``, 1797 x 64, values / 16) with the spec's fixed train/test split, the
``make_classification`` benchmark, and the client partitions (``shared.fed``)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from shared.fed import partition_dirichlet, partition_iid

__all__ = ["load_digits_split", "load_synthetic_split", "load_dataset", "make_partition", "PARTITIONS", "DATASETS"]

PARTITIONS = ("iid", "dirichlet")
DATASETS = ("digits", "synthetic")


@lru_cache(maxsize=1)
def _digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = d.data.astype(np.float64) / 16.0
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(x.shape[0])
    tr, te = perm[:1437], perm[1437:]
    return x[tr], y[tr], x[te], y[te]


def load_digits_split():
    """(x_train (1437, 64), y_train, x_test (360, 64), y_test): perm = default_rng(0).permutation(1797),
    train = perm[:1437], test = perm[1437:]. Copies, so callers may modify them."""
    return tuple(a.copy() for a in _digits())


@lru_cache(maxsize=2)
def _synthetic(n_samples, n_features, n_informative, n_classes):
    from sklearn.datasets import make_classification

    x, y = make_classification(n_samples=n_samples, n_features=n_features, n_informative=n_informative,
                               n_classes=n_classes, random_state=0)
    perm = np.random.default_rng(0).permutation(n_samples)
    n_test = n_samples // 5
    tr, te = perm[n_test:], perm[:n_test]
    mean, std = x[tr].mean(0), x[tr].std(0)
    std[std == 0] = 1.0
    x = (x - mean) / std
    return x[tr], y[tr].astype(np.int64), x[te], y[te].astype(np.int64)


def load_synthetic_split(n_samples: int = 50000, n_features: int = 256, n_informative: int = 64,
                         n_classes: int = 10):
    """The spec's larger benchmark: ``make_classification(n_samples, n_features, n_informative, n_classes,
    random_state=0)``; perm = default_rng(0).permutation(n_samples), test = the first n_samples // 5 of
    perm, train = the rest; features standardised with the training mean and standard deviation."""
    for name, v in (("n_samples", n_samples), ("n_features", n_features), ("n_informative", n_informative),
                    ("n_classes", n_classes)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if n_samples < 5:
        raise ValueError(f"n_samples must be at least 5 (a 20% test split), got {n_samples}")
    return tuple(a.copy() for a in _synthetic(int(n_samples), int(n_features), int(n_informative), int(n_classes)))


def load_dataset(name: str = "digits", **kwargs):
    """(x_train, y_train, x_test, y_test) of ``name``: "digits" (no options) or "synthetic"
    (:func:`load_synthetic_split` options)."""
    if name == "digits":
        if kwargs:
            raise ValueError(f"dataset 'digits' takes no options, got {sorted(kwargs)}")
        return load_digits_split()
    if name == "synthetic":
        return load_synthetic_split(**kwargs)
    raise ValueError(f"dataset must be one of {list(DATASETS)}, got {name!r}")


def make_partition(partition: str, labels, n_clients: int, seed, dirichlet_alpha: float = 0.1,
                   min_size: int = 10) -> list[np.ndarray]:
    """Client index sets: ``partition_iid(len(labels), n_clients, seed)`` or
    ``partition_dirichlet(labels, n_clients, dirichlet_alpha, seed, min_size)``."""
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {list(PARTITIONS)}, got {partition!r}")
    labels = np.asarray(labels)
    if partition == "iid":
        return partition_iid(labels.size, n_clients, seed)
    return partition_dirichlet(labels, n_clients, dirichlet_alpha, seed, min_size=min_size)
