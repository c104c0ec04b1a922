"""The negative control of `rho-insensitive`: the release's ADMM returned after its first outer iteration."""
import numpy as np
import pytest

from shared.experiment import RunContext

from papers.dro_varclust import experiments as E
from papers.dro_varclust.data import make_block_factor_data
from papers.dro_varclust.solver import solve_dro_nodewise


@pytest.fixture(scope="module")
def small():
    X, _ = make_block_factor_data(20, 30, 3, seed=1)
    return X


def test_admm_paper_not_strict_returns_after_max_iter(small):
    sol = solve_dro_nodewise(small, 0.3, method="admm_paper", max_iter=1, strict=False)
    assert sol.n_iter == 1 and np.all(np.diag(sol.B) == 0.0)
    with pytest.raises(RuntimeError, match="admm_paper"):
        solve_dro_nodewise(small, 0.3, method="admm_paper", max_iter=1)


def test_first_iterate_at_large_rho_is_the_correlation_matrix(small):
    # one outer iteration solves min ||X - XC||_F / sqrt(n) + (rho/2) ||C||_F^2 over diag(C) = 0; its
    # stationarity rho C = X^T (X - XC) / (sqrt(n) ||X - XC||_F) gives C ~ offdiag(X^T X) / (rho sqrt(n) ||X||_F)
    # up to a relative O(||X^T X|| / (rho sqrt(n) ||X||_F)) (about 5% at rho = 10 here)
    X = small
    n, p = X.shape
    B = solve_dro_nodewise(X, 0.3, method="admm_paper", rho_init=10.0, max_iter=1, strict=False).B
    G = X.T @ X
    off = ~np.eye(p, dtype=bool)
    pred = G[off] / (10.0 * np.sqrt(n) * np.linalg.norm(X))
    assert np.corrcoef(B[off], pred)[0, 1] > 0.98
    np.testing.assert_allclose(np.linalg.norm(B[off]), np.linalg.norm(pred), rtol=0.15)


def test_first_iterate_depends_on_rho_but_the_converged_solution_does_not(small):
    X = small
    first = [solve_dro_nodewise(X, 0.3, method="admm_paper", rho_init=r, max_iter=1, strict=False).B
             for r in (0.1, 10.0)]
    unit = [b / np.linalg.norm(b) for b in first]
    assert np.linalg.norm(unit[0] - unit[1]) > 0.1
    # the exact optimum is the same whatever rho_init (convex problem; the ADMM adapts rho)
    conv = [solve_dro_nodewise(X, 0.3, method="admm", rho_init=r) for r in (0.1, 10.0)]
    assert abs(conv[0].objective - conv[1].objective) <= 1e-6 * conv[0].objective


def test_rho_init_ablation_writes_the_control(tmp_path):
    ctx = RunContext(name="rho_init_ablation", scale="smoke", seed=0, out_dir=tmp_path)
    params = {"n": 20, "p": 30, "K": 3, "seeds": [2021, 2022], "n_sim": 50, "method": "admm_paper",
              "rho_inits": [0.5, 2], "control_max_outer": 1}
    _, m = E.rho_init_ablation(params, ctx)
    ctl = m["control"]["first_iterates"]
    assert ctl["max_outer"] == 1 and len(ctl["extremes"]["by_seed"]) == 2
    assert set(ctl["acc_by_rho_init"]) == {"0p5", "2"}
    assert all(0.0 <= a <= 1.0 for block in ctl["acc_by_rho_init"].values() for a in block.values())
    params.pop("control_max_outer")
    assert "control" not in E.rho_init_ablation(params, ctx)[1]
