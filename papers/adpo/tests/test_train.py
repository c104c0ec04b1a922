"""Tiny-model pipeline checks: initial value, gradient share at theta_ref, shared-prefix units."""
import math

import pytest
import torch

from papers.adpo.tasks import make_preference_pairs
from papers.adpo.train import MethodSpec, build_model, encode_pairs, method_spec, train_preference

ARCH = {"layers": 1, "hidden": 32, "heads": 2, "mlp": 64}


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    ref = build_model(ARCH, 0)
    pairs = make_preference_pairs("sort", 8, seed=0)
    return ref, encode_pairs(pairs, ref)


@pytest.mark.parametrize("spec", [MethodSpec("dpo"), MethodSpec("adpo"), MethodSpec("adpo", "adaptive", m=4),
                                  MethodSpec("adpo", "static", k=2, reduction="mean")])
def test_initial_value_and_share(setup, spec):
    ref, data = setup
    _, log = train_preference(ref, spec, data, steps=2, batch=4, lr=1e-3, beta=0.1, seed=0, jensen=True)
    assert log["init_err"] <= 1e-6
    # at theta_ref every z is 0, so every token gets the same |dL/d rho| = beta sigma(0) (a unit passes its
    # weight to each of its tokens): the squared-gradient share of the 2 + 2 differing positions out of the
    # 9 + 9 response tokens is 4/18 for every granularity.
    assert log["grad_share"][0] == pytest.approx(4 / 18, abs=1e-9)
    assert log["jensen_violations"] == 0


def test_first_loss_values(setup):
    ref, data = setup
    _, log = train_preference(ref, MethodSpec("adpo"), data, steps=1, batch=4, lr=1e-3, beta=0.1, seed=0)
    assert log["loss"][0] == pytest.approx(9 * math.log(2), abs=1e-5)  # 9 response tokens on both sides


def test_method_spec_validation():
    with pytest.raises(ValueError, match="loss"):
        method_spec({"loss": "ipo"})
    with pytest.raises(ValueError, match="contrastive"):
        method_spec({"loss": "dpo", "contrastive": "other"})
