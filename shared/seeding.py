"""Independent random streams derived from one root seed.

Every experiment has one root seed (``seed:`` in the paper's config). Streams are derived through
:class:`numpy.random.SeedSequence`, keyed by name, so that adding a stream never changes the others:
the stream named ``s`` is ``SeedSequence(root, spawn_key=(crc32(s),))``.
"""
from __future__ import annotations

import zlib
from typing import Iterable

import numpy as np

__all__ = ["check_seed", "seed_sequence", "generator", "generators", "spawn", "seed_torch"]


def check_seed(seed) -> int:
    """Return ``seed`` as an int, or raise ValueError naming it when it is not a non-negative integer."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return int(seed)


def _name_key(name: str) -> int:
    if not isinstance(name, str) or not name:
        raise ValueError(f"stream name must be a non-empty string, got {name!r}")
    return zlib.crc32(name.encode("utf-8"))


def seed_sequence(seed: int, *names: str) -> np.random.SeedSequence:
    """SeedSequence of the stream ``names`` (a path of names) under the root ``seed``."""
    return np.random.SeedSequence(check_seed(seed), spawn_key=tuple(_name_key(n) for n in names))


def generator(seed: int, *names: str) -> np.random.Generator:
    """A PCG64 generator for the stream ``names`` under the root ``seed``."""
    return np.random.default_rng(seed_sequence(seed, *names))


def generators(seed: int, names: Iterable[str]) -> dict[str, np.random.Generator]:
    """One independent generator per name, as a dict in the given order."""
    return {name: generator(seed, name) for name in names}


def spawn(seed: int, n: int, *names: str) -> list[np.random.Generator]:
    """``n`` independent generators spawned, in order, from the stream ``names`` (``names`` may be empty)."""
    if int(n) != n or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    return [np.random.default_rng(s) for s in seed_sequence(seed, *names).spawn(int(n))]


def seed_torch(seed: int) -> None:
    """Seed torch and switch it to deterministic algorithms (imported lazily: torch is optional here)."""
    import torch

    torch.manual_seed(check_seed(seed))
    torch.use_deterministic_algorithms(True)
