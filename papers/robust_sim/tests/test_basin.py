"""Population Hessian and basin radius against closed forms (phase retrieval) and H* (link constants)."""
import math

import numpy as np
import pytest

from papers.robust_sim.basin import basin_radius, hessian_min_eig
from papers.robust_sim.links import link_constants


def _phase_hessian_min(a, b):
    # f = z^2: h = 4 s^2 + 2 (s^2 - z^2), so H(w) = E[(6 s^2 - 2 z^2) x x^T] = (6 r^2 - 2) I + 12 w w^T - 4 bb^T
    # (Isserlis: E[(x^T v)^2 x x^T] = |v|^2 I + 2 v v^T); in the plane of (beta, beta_perp), plus 6 r^2 - 2 outside
    w = np.array([a, b])
    r2 = w @ w
    H = (6 * r2 - 2) * np.eye(2) + 12 * np.outer(w, w) - 4 * np.outer([1, 0], [1, 0])
    return min(6 * r2 - 2, np.linalg.eigvalsh(H)[0])


@pytest.mark.parametrize("w", [(1.0, 0.0), (0.9, 0.0), (0.8, 0.3), (1.1, -0.4), (0.3, 0.5)])
def test_phase_hessian_matches_closed_form(w):
    assert hessian_min_eig("phase", w, n_nodes=30) == pytest.approx(_phase_hessian_min(*w), abs=1e-8)


def test_hessian_at_beta_star_is_h_star():
    # H(beta*) = E f'^2 (I - bb^T) + E f'^2 Z^2 bb^T
    for link in ("gelu", "probit"):
        c = link_constants(link)
        assert hessian_min_eig(link, (1.0, 0.0), n_nodes=80) == pytest.approx(
            min(c["E_df_sq"], c["E_df_sq_z_sq"]), rel=1e-6)


def test_phase_radius_matches_closed_form_scan():
    rhos = np.linspace(0.0, 1.0, 2001)
    exact = min(next((r for r in rhos if _phase_hessian_min(1 + r * math.cos(p), r * math.sin(p)) <= 0), 1.0)
                for p in np.linspace(0.0, math.pi, 31))
    out = basin_radius("phase", n_dirs=31, step=0.02, n_bisect=10, n_nodes=30)
    assert out["radius"] == pytest.approx(exact, abs=2e-3)
    assert out["radius"] <= 1 - 1 / math.sqrt(3) + 1e-3  # shrinking w: r^2 = 1/3 is where 6 r^2 - 2 = 0


def test_basin_bad_inputs():
    with pytest.raises(ValueError, match="w_plane"):
        hessian_min_eig("gelu", (0.0, 0.0))
    with pytest.raises(ValueError, match="link"):
        hessian_min_eig("nope", (1.0, 0.0))
    with pytest.raises(ValueError, match="step"):
        basin_radius("gelu", step=0.0)


def test_step_link_has_a_zero_hessian_and_no_basin():
    # f = 1{z > 0}: f' = 0 almost everywhere, so h = f'(s)^2 + (f(s) - f(z)) f''(s) = 0 and H(w) = 0
    from papers.robust_sim.basin import STEP_LINK

    for w in [(1.0, 0.0), (0.7, 0.2), (1.3, -0.5)]:
        assert hessian_min_eig(STEP_LINK, w, n_nodes=20) == 0.0
    out = basin_radius(STEP_LINK, n_dirs=5, step=0.1, n_bisect=3, n_nodes=20)
    assert out["radius"] == 0.0 and out["h_star"] == 0.0 and out["psi"] is None


def test_radius_is_zero_when_the_hessian_at_beta_star_is_not_positive(monkeypatch):
    # R = sup{rho : lambda_min(H) > 0 on the ball of radius rho} is 0 when lambda_min(H(beta*)) <= 0, whatever
    # the Hessian does further away (the scan, which starts at rho = step, would report rho_max here)
    import papers.robust_sim.basin as B

    monkeypatch.setattr(B, "hessian_min_eig", lambda link, w, n_nodes=60: float(np.linalg.norm(np.asarray(w)
                                                                                               - [1.0, 0.0])))
    assert B.basin_radius("gelu", n_dirs=3, step=0.1, n_bisect=2)["radius"] == 0.0
