"""Link functions of the single-index model and their Gaussian constants.

Each link is a frozen :class:`Link` with vectorised ``f`` and ``df`` (its derivative). The Gaussian constants of
:func:`link_constants` are expectations over Z ~ N(0, 1), computed by probabilists' Gauss-Hermite quadrature
(``numpy.polynomial.hermite_e.hermegauss``, weights divided by sqrt(2 pi)).

Second-order Stein identity: for smooth g of moderate growth, E[g''(Z)] = E[g(Z) (Z^2 - 1)]. It gives
E f''(Z) = E[f(Z)(Z^2 - 1)] without differentiating twice, and the Expected Squared Convexity
ESC := E[(f^2)''(Z)] = E[f(Z)^2 (Z^2 - 1)] (definition reconstructed from the abstract of Das, Chatterjee & Batra,
ICML 2026). With x ~ N(0, I_d), unit beta* and noise of variance sigma^2 independent of x,

    E[y^2 x x^T] = (E f(Z)^2 + sigma^2) I + ESC beta* beta*^T,

so beta* is the top eigenvector of the second moment when ESC > 0 and the bottom one when ESC < 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import expit, ndtr

__all__ = ["Link", "LINK_NAMES", "get_link", "link_constants"]

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class Link:
    """A link function: ``f(z)``, its derivative ``df(z)`` and whether it is even (sign not identifiable)."""

    name: str
    f: Callable[[np.ndarray], np.ndarray]
    df: Callable[[np.ndarray], np.ndarray]
    even: bool


def _phi(z):
    """Standard normal density phi(z) = exp(-z^2/2) / sqrt(2 pi)."""
    return _INV_SQRT_2PI * np.exp(-0.5 * np.square(z))


def _gelu(z):
    z = np.asarray(z, dtype=float)
    return z * ndtr(z)


def _gelu_df(z):
    z = np.asarray(z, dtype=float)
    return ndtr(z) + z * _phi(z)


def _swish(z):
    z = np.asarray(z, dtype=float)
    return z * expit(z)


def _swish_df(z):
    z = np.asarray(z, dtype=float)
    s = expit(z)
    return s + z * s * (1.0 - s)


def _tanh(z):
    return np.tanh(np.asarray(z, dtype=float))


def _tanh_df(z):
    return 1.0 - np.square(np.tanh(np.asarray(z, dtype=float)))


def _logistic(z):
    return expit(np.asarray(z, dtype=float))


def _logistic_df(z):
    s = expit(np.asarray(z, dtype=float))
    return s * (1.0 - s)


def _probit(z):
    return ndtr(np.asarray(z, dtype=float))


def _probit_df(z):
    return _phi(np.asarray(z, dtype=float))


def _phase(z):
    return np.square(np.asarray(z, dtype=float))


def _phase_df(z):
    return 2.0 * np.asarray(z, dtype=float)


def _bump(z):
    return np.exp(-np.square(np.asarray(z, dtype=float)))


def _bump_df(z):
    z = np.asarray(z, dtype=float)
    return -2.0 * z * np.exp(-np.square(z))


_LINKS = {
    "gelu": Link("gelu", _gelu, _gelu_df, False),           # f = z Phi(z),  f' = Phi(z) + z phi(z)
    "swish": Link("swish", _swish, _swish_df, False),       # f = z s(z),    f' = s + z s (1 - s)
    "tanh": Link("tanh", _tanh, _tanh_df, False),           # f = tanh z,    f' = 1 - tanh^2 z
    "logistic": Link("logistic", _logistic, _logistic_df, False),  # f = s(z), f' = s (1 - s)
    "probit": Link("probit", _probit, _probit_df, False),    # f = Phi(z),  f' = phi(z)
    "phase": Link("phase", _phase, _phase_df, True),        # f = z^2,       f' = 2 z
    "bump": Link("bump", _bump, _bump_df, True),            # f = exp(-z^2), f' = -2 z exp(-z^2)  (ESC < 0)
}
LINK_NAMES = tuple(_LINKS)


def get_link(name: str) -> Link:
    """The link called ``name``: one of gelu, swish, tanh, logistic, probit, phase, bump.

    Raises ValueError naming the argument ``link`` and listing the valid names for an unknown name.
    """
    if not isinstance(name, str) or name not in _LINKS:
        raise ValueError(f"link must be one of {list(LINK_NAMES)}, got {name!r}")
    return _LINKS[name]


def link_constants(name: str, n_nodes: int = 200) -> dict[str, float]:
    """Gaussian constants of the link ``name`` (Z ~ N(0, 1)) by ``n_nodes``-point Gauss-Hermite quadrature.

    Keys:
      - ``E_df``         = E f'(Z)                      (first-order Stein: E[f(Z) Z])
      - ``E_d2f``        = E f''(Z) = E[f(Z)(Z^2 - 1)]  (second-order Stein; f'' is never evaluated)
      - ``esc``          = E[(f^2)''(Z)] = E[f(Z)^2 (Z^2 - 1)]  (Expected Squared Convexity)
      - ``E_df_sq``      = E f'(Z)^2        (Hessian of the population loss orthogonal to beta*)
      - ``E_df_sq_z_sq`` = E f'(Z)^2 Z^2    (Hessian along beta*)
      - ``E_f_sq``       = E f(Z)^2
    The population Hessian of L(w) = E (f(x^T w) - y)^2 / 2 at beta* is
    H* = E_df_sq (I - beta* beta*^T) + E_df_sq_z_sq beta* beta*^T.
    """
    link = get_link(name)
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, (int, np.integer)) or n_nodes < 20:
        raise ValueError(f"n_nodes must be an integer >= 20, got {n_nodes!r}")
    z, w = hermegauss(int(n_nodes))
    w = w / math.sqrt(2.0 * math.pi)
    f, df = link.f(z), link.df(z)
    z2 = z * z
    return {
        "E_df": float(w @ df),
        "E_d2f": float(w @ (f * (z2 - 1.0))),
        "esc": float(w @ (f * f * (z2 - 1.0))),
        "E_df_sq": float(w @ (df * df)),
        "E_df_sq_z_sq": float(w @ (df * df * z2)),
        "E_f_sq": float(w @ (f * f)),
    }
