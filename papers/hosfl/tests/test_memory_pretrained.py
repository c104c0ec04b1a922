"""Measured memory probe, the pretrained CNN client and the FSL-SAGE reconstruction."""
import numpy as np
import pytest
import torch

from shared.oracles.zeroth_order import perturbation_directions

from papers.hosfl.experiments import _bytes_to_target
from papers.hosfl.memory_probe import client_step, deep_client, peak_rss_growth
from papers.hosfl.model import module_vector, vector_params
from papers.hosfl.pretrained import CNNClient, _align_aux, _Run, pretrain_client, run_pretrained_split


# ------------------------------------------------------------------------------------------- memory probe
def test_peak_rss_growth_sees_a_known_allocation():
    mib = 2 ** 20
    grown = peak_rss_growth(lambda: torch.ones(48 * mib // 4))   # 48 MiB of float32, touched
    assert 46 * mib <= grown <= 64 * mib                        # plus the child's own bookkeeping
    assert peak_rss_growth(lambda: None) < 8 * mib


def test_peak_rss_growth_does_not_reuse_the_parents_free_heap():
    """Free chunks left in the parent's heap are resident (shared with the child until written): an allocation
    that reused one would not grow the child's RSS (this is how the probe saw 3.5 MiB for 48 MiB inside a long
    test session). Here 120 MiB of 4 MiB heap chunks are freed below live ones (the heap top cannot be trimmed)
    after glibc's dynamic mmap threshold has risen to 30 MiB; the probe must still see the 48 MiB."""
    import gc

    mib = 2 ** 20
    x = np.ones(30 * mib // 8)
    del x                                                       # the mmap threshold rises to 30 MiB
    chunks = [np.ones(4 * mib // 8) for _ in range(30)]         # 120 MiB on the brk heap
    live = [np.ones(20 * 1024) for _ in range(50)]              # above them, still alive
    del chunks
    gc.collect()
    grown = peak_rss_growth(lambda: torch.ones(48 * mib // 4))
    assert 46 * mib <= grown <= 64 * mib
    assert len(live) == 50


def test_peak_rss_growth_ignores_an_earlier_peak_of_the_parent():
    """A forked child inherits the parent's high-water mark; the probe resets it, so an earlier, larger peak of
    the parent (here 256 MiB, touched on several threads and freed) does not hide the child's 48 MiB."""
    mib = 2 ** 20
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        big = torch.ones(256 * mib // 4)
        del big
    finally:
        torch.set_num_threads(threads)
    grown = peak_rss_growth(lambda: torch.ones(48 * mib // 4))
    assert 46 * mib <= grown <= 64 * mib


def test_peak_rss_growth_reports_child_errors():
    def boom():
        raise ValueError("inside")
    with pytest.raises(RuntimeError, match="inside"):
        peak_rss_growth(boom)


def _client_and_inputs(width=6, depth=2, B=5, seed=0):
    c = deep_client(4, width, depth, seed=seed)
    g = torch.Generator().manual_seed(seed)
    return c, torch.rand(B, 4, generator=g), torch.randn(B, width, generator=g)


def test_sfl_fo_step_is_sgd_on_autograd_gradient():
    c, x, lam = _client_and_inputs()
    theta = torch.from_numpy(module_vector(c)).requires_grad_(True)
    from torch.func import functional_call
    (g,) = torch.autograd.grad(torch.sum(lam * functional_call(c, vector_params(c, theta), (x,))), [theta])
    new = client_step("sfl_fo", c, x, lam, seeds=[1], lr=0.1)
    np.testing.assert_allclose(new, module_vector(c) - 0.1 * g.numpy(), rtol=1e-6, atol=1e-7)


def test_hosfl_step_is_the_gaussian_estimator_up_to_o_mu():
    c, x, lam = _client_and_inputs()
    theta = torch.from_numpy(module_vector(c)).requires_grad_(True)
    from torch.func import functional_call
    (g,) = torch.autograd.grad(torch.sum(lam * functional_call(c, vector_params(c, theta), (x,))), [theta])
    seeds = [3, 5, 7, 11]
    U = perturbation_directions(seeds, theta.numel())
    ref = (U.T @ (U @ g.numpy().astype(np.float64))) / len(seeds)
    step = (module_vector(c) - client_step("hosfl", c, x, lam, seeds=seeds, mu=1e-3, lr=1.0)).astype(np.float64)
    assert np.linalg.norm(step - ref) <= 0.01 * np.linalg.norm(ref)   # O(mu) curvature and float32 rounding


def test_hosfl_with_gradients_enabled_takes_the_same_step():
    c, x, lam = _client_and_inputs()
    a = client_step("hosfl", c, x, lam, seeds=[1, 2], lr=0.1)
    b = client_step("hosfl_grad", c, x, lam, seeds=[1, 2], lr=0.1)
    np.testing.assert_array_equal(a, b)


def test_client_step_bad_inputs():
    c, x, lam = _client_and_inputs()
    with pytest.raises(ValueError, match="method"):
        client_step("adam", c, x, lam, seeds=[1])
    with pytest.raises(ValueError, match="lam shape"):
        client_step("hosfl", c, x, lam[:, :2], seeds=[1])
    with pytest.raises(ValueError, match="lam shape"):
        client_step("sfl_fo", c, x, lam[:, :2], seeds=[1])
    with pytest.raises(ValueError):
        client_step("hosfl", c, x, lam, seeds=[1, 1])
    with pytest.raises(ValueError, match="width"):
        deep_client(4, 0, 2)


# ------------------------------------------------------------------------------------------- pretrained client
def _tiny_pretrained():
    c = CNNClient(4, 6, seed=0)
    return c, module_vector(c)


def test_cnn_client_dimension():
    assert sum(p.numel() for p in CNNClient(64, 100).parameters()) == 64 * 9 + 64 + 1024 * 100 + 100   # 103140
    with pytest.raises(ValueError, match="cut_dim"):
        CNNClient(4, 0)


def test_pretraining_fits_its_classes():
    rng = np.random.default_rng(0)
    x = rng.random((60, 64))
    y = np.repeat([0, 1, 7], 20)
    x[y == 1] += 1.0
    c = CNNClient(4, 8, seed=0)
    facts = pretrain_client(c, x, y, classes=[0, 1], epochs=30, lr=1e-2, batch_size=16, seed=0)
    assert facts["pretrain_rows"] == 40 and facts["pretrain_train_accuracy"] == 1.0
    with pytest.raises(ValueError, match="no training row"):
        pretrain_client(c, x, y, classes=[5], epochs=1, lr=1e-2, batch_size=8, seed=0)


def test_ledger_per_method():
    c, th = _tiny_pretrained()
    kw = dict(rounds=4, n_clients=2, batch_size=3, eval_every=2, P=3, server_every=1, align_every=2, seed=1)
    d_c = th.size
    out = {m: run_pretrained_split(m, c, th, **kw) for m in ("hosfl", "sfl_fo", "fsl_sage", "frozen")}
    per = {m: {k: int(v.sum()) // (2 * 4) for k, v in o["bytes"].items()} for m, o in out.items()}
    assert per["hosfl"]["weights.up"] == 4 * 3 and per["hosfl"]["seeds.down"] == 4 * 3
    assert per["sfl_fo"]["weights.up"] == 4 * d_c
    assert per["fsl_sage"]["cut.grad_down"] == 0 and per["fsl_sage"]["weights.up"] == 4 * d_c
    assert per["fsl_sage"]["weights.down"] == 4 * d_c + 4 * (6 * 10 + 10) // 2   # aux model at every other round
    assert per["hosfl"]["cut.act_up"] == per["sfl_fo"]["cut.act_up"] == per["fsl_sage"]["cut.act_up"] == 3 * 6 * 4
    np.testing.assert_array_equal(out["frozen"]["client_vector"], th)
    assert not np.array_equal(out["hosfl"]["client_vector"], th)


def test_fsl_sage_alignment_reduces_the_gradient_mismatch():
    c, th = _tiny_pretrained()
    run = _Run("fsl_sage", c, th, 10, server_lr=0.05, momentum=0.9, seed=0)
    g = torch.Generator().manual_seed(0)
    Z, Y = torch.rand(12, 6, generator=g), torch.randint(0, 10, (12,), generator=g)
    lam = torch.randn(12, 6, generator=g) * 0.01
    first = _align_aux(run, Z, Y, lam, 1, 1e-2)
    later = _align_aux(run, Z, Y, lam, 50, 1e-2)
    assert later < first


def test_pretrained_bad_inputs():
    c, th = _tiny_pretrained()
    with pytest.raises(ValueError, match="method"):
        run_pretrained_split("sfl_zo", c, th, rounds=1)
    with pytest.raises(ValueError, match="multiple"):
        run_pretrained_split("fsl_sage", c, th, rounds=1, server_every=2, align_every=3)
    with pytest.raises(ValueError, match="theta0"):
        run_pretrained_split("hosfl", c, th[:-1], rounds=1)
    with pytest.raises(ValueError, match="rounds"):
        run_pretrained_split("hosfl", c, th, rounds=0)


def test_bytes_to_target_censors_never():
    out = {"test_accuracy": np.array([0.5, 0.9, 0.95]), "bytes_per_client_at_eval": np.array([10.0, 20.0, 30.0])}
    assert _bytes_to_target(out, 0.9) == (20.0, True)
    assert _bytes_to_target(out, 0.99) == (40.0, False)
