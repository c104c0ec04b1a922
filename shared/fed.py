"""Federated-learning primitives shared by the papers that simulate a federation (dream, hosfl).

- :func:`partition_iid` and :func:`partition_dirichlet` split sample indices among clients;
- :func:`sample_clients` picks the participants of one round; :func:`draw_batch` one client's minibatch;
- :class:`ByteLedger` counts the bytes that travel, as on the wire (``FLOAT32_BYTES`` = 4 bytes per value
  whatever the compute dtype), by category, round and client, and gives tidy rows for the results CSV.

Every random draw goes through a ``numpy.random.Generator`` (or a seed turned into one by
``numpy.random.default_rng``), so a partition or a schedule is fixed by its seed.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable

import numpy as np

__all__ = ["FLOAT32_BYTES", "INT64_BYTES", "UINT32_BYTES", "partition_iid", "partition_dirichlet",
           "sample_clients", "draw_batch", "ByteLedger"]

FLOAT32_BYTES = 4
INT64_BYTES = 8
UINT32_BYTES = 4


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _rng(seed_or_rng) -> np.random.Generator:
    if isinstance(seed_or_rng, np.random.Generator):
        return seed_or_rng
    if isinstance(seed_or_rng, bool) or not isinstance(seed_or_rng, (int, np.integer, np.random.SeedSequence)):
        raise ValueError(f"seed must be a non-negative integer, a SeedSequence or a Generator, got {seed_or_rng!r}")
    if isinstance(seed_or_rng, (int, np.integer)) and seed_or_rng < 0:
        raise ValueError(f"seed must be non-negative, got {seed_or_rng}")
    return np.random.default_rng(seed_or_rng)


def partition_iid(n_samples: int, n_clients: int, seed) -> list[np.ndarray]:
    """IID split: a seeded permutation of ``range(n_samples)`` cut into ``n_clients`` near-equal parts.

    The parts are those of ``numpy.array_split(rng.permutation(n_samples), n_clients)`` (sizes differ by at
    most one, larger parts first), each returned sorted. ``rng = numpy.random.default_rng(seed)``.

    Returns a list of ``n_clients`` int64 index arrays that partition ``range(n_samples)``.
    """
    n_samples = _positive_int(n_samples, "n_samples")
    n_clients = _positive_int(n_clients, "n_clients")
    if n_clients > n_samples:
        raise ValueError(f"n_clients ({n_clients}) must not exceed n_samples ({n_samples})")
    perm = _rng(seed).permutation(n_samples)
    return [np.sort(part).astype(np.int64) for part in np.array_split(perm, n_clients)]


def partition_dirichlet(labels, n_clients: int, concentration: float, seed, min_size: int = 10,
                        max_tries: int = 100) -> list[np.ndarray]:
    """Label-skewed split by a Dirichlet draw per class (Hsu et al. 2019; Wang et al. 2020).

    For each class k in sorted label order, with n_k samples: shuffle the class's indices, draw
    p ~ Dir(concentration * 1_N) and cut the shuffled indices at floor(cumsum(p) * n_k) (the first N-1
    cuts), so client j gets about p_j n_k samples of class k. Small ``concentration`` gives clients few
    classes; large gives near-IID shares. The whole partition is redrawn (same generator, continuing)
    until every client has at least ``min_size`` samples; ValueError after ``max_tries`` draws.
    ``rng = numpy.random.default_rng(seed)``; every client's indices are returned sorted.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"labels must be a non-empty 1-D array, got shape {labels.shape}")
    n_clients = _positive_int(n_clients, "n_clients")
    concentration = float(concentration)
    if not math.isfinite(concentration) or concentration <= 0:
        raise ValueError(f"concentration must be a finite positive number (use partition_iid for the IID "
                         f"limit), got {concentration}")
    if isinstance(min_size, bool) or not isinstance(min_size, (int, np.integer)) or min_size < 0:
        raise ValueError(f"min_size must be a non-negative integer, got {min_size!r}")
    max_tries = _positive_int(max_tries, "max_tries")
    if min_size * n_clients > labels.size:
        raise ValueError(f"min_size={min_size} cannot be met: {n_clients} clients x {min_size} > "
                         f"{labels.size} samples")
    rng = _rng(seed)
    classes = np.unique(labels)
    by_class = [np.flatnonzero(labels == k) for k in classes]
    for _ in range(max_tries):
        parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        for idx in by_class:
            idx = idx.copy()
            rng.shuffle(idx)
            p = rng.dirichlet(np.full(n_clients, concentration))
            cuts = np.floor(np.cumsum(p)[:-1] * idx.size).astype(np.int64)
            for j, chunk in enumerate(np.split(idx, cuts)):
                parts[j].append(chunk)
        out = [np.sort(np.concatenate(chunks)).astype(np.int64) for chunks in parts]
        if min(o.size for o in out) >= min_size:
            return out
    raise ValueError(f"partition_dirichlet: min_size={min_size} not met in max_tries={max_tries} draws "
                     f"(n_clients={n_clients}, concentration={concentration}, {labels.size} samples)")


def sample_clients(n_clients: int, per_round: int, rng) -> np.ndarray:
    """The clients of one round: ``per_round`` of ``range(n_clients)`` without replacement, sorted.

    When ``per_round == n_clients`` all clients are returned and ``rng`` is not used (full participation
    draws nothing, so it does not shift the stream).
    """
    n_clients = _positive_int(n_clients, "n_clients")
    per_round = _positive_int(per_round, "per_round")
    if per_round > n_clients:
        raise ValueError(f"per_round must be in 1..n_clients={n_clients}, got {per_round}")
    if per_round == n_clients:
        return np.arange(n_clients, dtype=np.int64)
    return np.sort(_rng(rng).choice(n_clients, size=per_round, replace=False)).astype(np.int64)


def draw_batch(indices, batch_size: int, rng) -> np.ndarray:
    """A minibatch of ``batch_size`` entries of ``indices``: without replacement, or with replacement when the
    client holds fewer than ``batch_size`` samples."""
    indices = np.asarray(indices)
    if indices.ndim != 1 or indices.size == 0:
        raise ValueError(f"indices must be a non-empty 1-D array, got shape {indices.shape}")
    batch_size = _positive_int(batch_size, "batch_size")
    return _rng(rng).choice(indices, size=batch_size, replace=indices.size < batch_size)


class ByteLedger:
    """Bytes on the wire per (category, round, client).

    Categories are free strings such as ``"model.up"`` or ``"control.down"`` (the suffix ``.up`` / ``.down``
    gives the direction by convention). ``client=None`` books traffic not attributed to one client
    (e.g. a broadcast counted once). Counting is exact integer arithmetic.

    >>> ledger = ByteLedger()
    >>> ledger.add_floats("model.up", 10, round=0, client=1)   # 10 float32 values = 40 bytes
    >>> ledger.total("model.up")
    40
    """

    def __init__(self) -> None:
        self._bytes: dict[tuple[str, int, int | None], int] = defaultdict(int)

    def add(self, category: str, n_bytes: int, round: int, client: int | None = None) -> None:  # noqa: A002
        """Book ``n_bytes`` (a non-negative integer) under ``category`` at ``round`` for ``client``."""
        if not isinstance(category, str) or not category:
            raise ValueError(f"category must be a non-empty string, got {category!r}")
        if isinstance(n_bytes, bool) or not isinstance(n_bytes, (int, np.integer)) or n_bytes < 0:
            raise ValueError(f"n_bytes must be a non-negative integer, got {n_bytes!r}")
        if isinstance(round, bool) or not isinstance(round, (int, np.integer)) or round < 0:
            raise ValueError(f"round must be a non-negative integer, got {round!r}")
        if client is not None and (isinstance(client, bool) or not isinstance(client, (int, np.integer))
                                   or client < 0):
            raise ValueError(f"client must be None or a non-negative integer, got {client!r}")
        self._bytes[(category, int(round), None if client is None else int(client))] += int(n_bytes)

    def add_floats(self, category: str, n_values: int, round: int, client: int | None = None,  # noqa: A002
                   bytes_per_value: int = FLOAT32_BYTES) -> None:
        """Book ``n_values`` values of ``bytes_per_value`` bytes each (float32 by default)."""
        if isinstance(n_values, bool) or not isinstance(n_values, (int, np.integer)) or n_values < 0:
            raise ValueError(f"n_values must be a non-negative integer, got {n_values!r}")
        self.add(category, int(n_values) * int(bytes_per_value), round, client)

    def total(self, category: str | Iterable[str] | None = None, round: int | None = None,  # noqa: A002
              client: int | None = None) -> int:
        """Sum of the booked bytes, optionally restricted to a category (or several), a round, a client."""
        cats = None if category is None else ({category} if isinstance(category, str) else set(category))
        return sum(n for (c, r, k), n in self._bytes.items()
                   if (cats is None or c in cats) and (round is None or r == round)
                   and (client is None or k == client))

    def direction_total(self, direction: str, round: int | None = None) -> int:  # noqa: A002
        """Total of the categories ending in ``.<direction>`` (``"up"`` or ``"down"``)."""
        if direction not in ("up", "down"):
            raise ValueError(f"direction must be 'up' or 'down', got {direction!r}")
        return sum(n for (c, r, _k), n in self._bytes.items()
                   if c.endswith("." + direction) and (round is None or r == round))

    def categories(self) -> list[str]:
        """The categories booked so far, sorted."""
        return sorted({c for c, _r, _k in self._bytes})

    def rows(self, method: str = "", seed: int = 0, per_client: bool = False) -> list[dict]:
        """Tidy rows ``method, seed, step (= round), metric (= "bytes.<category>"), value`` summed over
        clients per (category, round), or one row per client (column ``client``) when ``per_client``."""
        agg: dict[tuple, int] = defaultdict(int)
        for (c, r, k), n in self._bytes.items():
            agg[(c, r, k) if per_client else (c, r)] += n
        out = []
        for key in sorted(agg, key=lambda t: (t[1], t[0], -1 if len(t) < 3 or t[2] is None else t[2])):
            row = {"method": method, "seed": seed, "step": key[1], "metric": f"bytes.{key[0]}",
                   "value": agg[key]}
            if per_client:
                row["client"] = key[2]
            out.append(row)
        return out

    def __len__(self) -> int:
        return len(self._bytes)
