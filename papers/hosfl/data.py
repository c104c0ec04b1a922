"""Digits (sklearn ``load_digits``, 1797 x 64, values / 16) with the spec's fixed train/test split, and the
client partitions (``shared.fed``)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from shared.fed import partition_dirichlet, partition_iid

__all__ = ["load_digits_split", "make_partition", "PARTITIONS"]

PARTITIONS = ("iid", "dirichlet")


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
