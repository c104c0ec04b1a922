r"""The paper's random-instance experiment (Section 7, Table 1; spec addendum): random utility polynomials on a
product of simplices, the SOS relaxation against projected gradient ascent with restarts.

An instance has ``infosets`` information sets with ``actions`` actions each; the utility is a random polynomial
with ``terms`` monomials of degree at most ``degree`` in the full coordinates :math:`x_{I,a}` (exponents drawn
without replacement among all monomials of degree 1..degree, coefficients N(0, 1)). SOS works in the free
variables (the last action of every infoset eliminated, :math:`x_{I,\mathrm{last}} = 1 - \sum_{a} x_{I,a}`);
projected gradient ascent works in full coordinates with Euclidean projection onto every simplex.

Success. SOS succeeds when its relaxation at the first level is certified (flat truncation of rank 1 and the
extracted strategy's value within 1e-6 of the bound): that proves global optimality on its own. A PGA restart
succeeds when its final value is within ``tol`` (relative to max(1, |U*|)) of the global optimum U*, where U* is
the certified SOS value (instances without a certificate have no U* and are reported, not scored).
"""
from __future__ import annotations

import math

import numpy as np

from . import poly as P
from .baselines import PolynomialModel

__all__ = ["RandomInstance", "random_instance", "instance_model", "success_tolerance"]


class RandomInstance:
    """A random utility: ``full`` (polynomial in the m = infosets * actions full coordinates), ``free``
    (the same after elimination, in infosets * (actions - 1) variables), ``groups`` (free-variable indices of
    each infoset) and ``blocks`` (full-coordinate indices of each infoset)."""

    def __init__(self, full: dict, infosets: int, actions: int):
        self.full, self.infosets, self.actions = full, infosets, actions
        self.m = infosets * actions
        self.n = infosets * (actions - 1)
        self.blocks = [list(range(k * actions, (k + 1) * actions)) for k in range(infosets)]
        self.groups = [list(range(k * (actions - 1), (k + 1) * (actions - 1))) for k in range(infosets)]
        forms = []
        for k in range(infosets):
            for a in range(actions):
                if a < actions - 1:
                    forms.append(P.var(k * (actions - 1) + a, self.n))
                else:
                    last = P.const(1.0, self.n)
                    for j in self.groups[k]:
                        last = P.add(last, P.scale(P.var(j, self.n), -1.0))
                    forms.append(last)
        self.free = P.substitute_affine(full, forms, self.n)

    def to_full(self, z: np.ndarray) -> np.ndarray:
        """Full coordinates of a free-variable point."""
        out = []
        for g in self.groups:
            out.extend(list(z[g]) + [1.0 - float(np.sum(z[g]))])
        return np.array(out)


def random_instance(seed, *, infosets: int = 2, actions: int = 3, degree: int = 4, terms: int = 16
                    ) -> RandomInstance:
    """The instance drawn from ``numpy.random.default_rng(seed)`` (see the module docstring)."""
    for name, v, lo in (("infosets", infosets, 1), ("actions", actions, 2), ("degree", degree, 1),
                        ("terms", terms, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    m = infosets * actions
    pool = [a for a in P.monomials(m, degree) if sum(a) >= 1]
    if terms > len(pool):
        raise ValueError(f"terms must be <= {len(pool)} (monomials of degree 1..{degree} in {m} variables)")
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(pool), size=terms, replace=False)
    coef = rng.standard_normal(terms)
    return RandomInstance({pool[int(i)]: float(c) for i, c in zip(pick, coef)}, infosets, actions)


def instance_model(inst: RandomInstance) -> PolynomialModel:
    """The instance's polynomial on its product of simplices, as :func:`papers.irefg_sos.baselines.run_batch`
    expects it."""
    return PolynomialModel(inst.full, inst.m, inst.blocks)


def success_tolerance(opt: float, tol: float) -> float:
    """The absolute gap below the optimum that still counts as success: tol * max(1, |opt|)."""
    if not (tol > 0 and math.isfinite(opt)):
        raise ValueError(f"tol must be positive and opt finite, got {tol!r}, {opt!r}")
    return tol * max(1.0, abs(opt))
