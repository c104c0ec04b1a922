"""The TRL cross-check: step-1 gradients against an exact float64 DPO gradient (TRL's bf16 default vs float32)."""
import pytest

pytest.importorskip("trl")

from papers.adpo.perf import step1_gradients  # noqa: E402
from papers.adpo.tasks import make_preference_pairs  # noqa: E402
from papers.adpo.train import build_model  # noqa: E402


def test_trl_float32_gradient_is_exact_and_bf16_default_is_not():
    model = build_model({"layers": 1, "hidden": 32, "heads": 2, "mlp": 64}, seed=0).eval()
    pairs = make_preference_pairs("sort", 8, seed=3)
    rel = step1_gradients(model, pairs, beta=0.1)
    assert rel["ours_float32"] < 1e-5
    assert rel["trl_float32"] < 1e-5          # TRL with bf16=False: the same gradient to float32 rounding
    assert rel["trl_bf16_default"] > 1e-4     # TRL's default autocast to bfloat16 (even on the CPU)
