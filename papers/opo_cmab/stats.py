"""Progressive-validation significance test (the authors' script, after the contextual-bandit bake-off).

For final PV losses p_a, p_b (means over shuffles) on n examples:

    se = 1e-6 + sqrt(p_a (1 - p_a) / n + p_b (1 - p_b) / n),   z = |p_a - p_b| / se,   pval = 1 - erf(z).

A win is pval < 0.05 for the smaller loss. (The script uses erf(z), not erf(z / sqrt 2): it is kept as is.)
"""
from __future__ import annotations

import math

__all__ = ["pv_significance", "pairwise_wins"]


def _check_p(p, name: str) -> float:
    try:
        v = float(p)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {p!r}") from None
    if not (math.isfinite(v) and 0.0 <= v <= 1.0):
        raise ValueError(f"{name} must lie in [0, 1], got {p!r}")
    return v


def pv_significance(p_a: float, p_b: float, n: int) -> tuple[float, float, float]:
    """(se, z, pval) of the difference of two PV losses on n examples (see the module docstring)."""
    p_a, p_b = _check_p(p_a, "p_a"), _check_p(p_b, "p_b")
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    se = 1e-6 + math.sqrt(p_a * (1 - p_a) / n + p_b * (1 - p_b) / n)
    z = abs(p_a - p_b) / se
    return se, z, 1.0 - math.erf(z)


def pairwise_wins(losses: dict[str, float], n: int, alpha: float = 0.05) -> list[dict]:
    """One row per ordered pair (a, b), a != b: whether a beats b (smaller loss and pval < alpha)."""
    rows = []
    for a, p_a in losses.items():
        for b, p_b in losses.items():
            if a == b:
                continue
            se, z, pval = pv_significance(p_a, p_b, n)
            rows.append({"a": a, "b": b, "pv_a": p_a, "pv_b": p_b, "se": se, "z": z, "pval": pval,
                         "a_wins": bool(p_a < p_b and pval < alpha)})
    return rows
