"""PEP: FEG's tight worst case 4/N^2, ordering checks, and the errors."""
import sys

import pytest

from papers.goma.pep import worst_case, worst_case_with_status


@pytest.mark.parametrize("N", [2, 3])
def test_feg_tight_bound(N):
    # Lee & Kim (2021): FEG with step 1/L has the exact worst case 4 L^2 ||z0 - z*||^2 / N^2 for N >= 2
    # (at N = 1 the bound holds but is not attained).
    tau, status = worst_case_with_status("feg", N)
    assert status == "optimal"
    assert tau == pytest.approx(4.0 / N ** 2, rel=1e-5)


def test_one_step_of_eg_and_og_coincide():
    # With g_{-1} = F(z_0), the first OG step is exactly the first EG step, so tau(1) is equal.
    assert worst_case("og", 1, step=0.5) == pytest.approx(worst_case("eg", 1, step=0.5), rel=1e-5)


def test_goma_bound_is_below_trivial():
    # ||F(z_N)|| <= L ||z_N - z*|| and the iterates stay in a ball, so tau is finite and positive.
    tau = worst_case("goma", 3)
    assert 0 < tau < 1.0


def test_solver_failure_names_the_solver():
    with pytest.raises(RuntimeError, match="NO_SUCH_SOLVER"):
        worst_case("og", 1, solver="NO_SUCH_SOLVER")


def test_missing_pepit_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "PEPit", None)
    with pytest.raises(ImportError, match="PEPit"):
        worst_case("og", 1)


@pytest.mark.parametrize("kwargs, word", [(dict(method="sgda"), "method"), (dict(n_iter=0), "n_iter"),
                                          (dict(gamma=-1.0), "gamma"), (dict(method="og", gamma=0.5), "gamma")])
def test_bad_inputs(kwargs, word):
    args = dict(method="goma", n_iter=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=word):
        worst_case(args.pop("method"), args.pop("n_iter"), **args)
