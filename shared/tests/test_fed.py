"""Tests of shared.fed: partitions, client sampling, minibatches and the byte ledger."""
import numpy as np
import pytest

from shared.fed import ByteLedger, draw_batch, partition_dirichlet, partition_iid, sample_clients


def test_partition_iid_is_array_split_of_the_seeded_permutation():
    parts = partition_iid(10, 3, seed=7)
    perm = np.random.default_rng(7).permutation(10)
    expected = [np.sort(p) for p in np.array_split(perm, 3)]
    assert [p.tolist() for p in parts] == [e.tolist() for e in expected]
    assert [p.size for p in parts] == [4, 3, 3]
    assert sorted(np.concatenate(parts).tolist()) == list(range(10))


def test_partition_iid_bad_input():
    with pytest.raises(ValueError, match="n_clients"):
        partition_iid(3, 4, 0)
    with pytest.raises(ValueError, match="n_samples"):
        partition_iid(0, 1, 0)
    with pytest.raises(ValueError, match="seed"):
        partition_iid(5, 2, -1)


def test_partition_dirichlet_follows_the_documented_draws():
    labels = np.array([1, 0, 1, 0, 2, 2, 1, 0, 2, 2, 1, 0])
    parts = partition_dirichlet(labels, 2, 1.0, seed=3, min_size=0)
    rng = np.random.default_rng(3)
    expected = [[], []]
    for k in (0, 1, 2):  # sorted labels
        idx = np.flatnonzero(labels == k)
        rng.shuffle(idx)
        p = rng.dirichlet(np.ones(2))
        cuts = np.floor(np.cumsum(p)[:-1] * idx.size).astype(int)
        for j, chunk in enumerate(np.split(idx, cuts)):
            expected[j].extend(chunk.tolist())
    assert [p.tolist() for p in parts] == [sorted(e) for e in expected]


def test_partition_dirichlet_is_a_partition_with_min_size_and_skew():
    labels = np.repeat(np.arange(10), 100)
    parts = partition_dirichlet(labels, 10, 0.1, seed=0, min_size=10)
    assert sorted(np.concatenate(parts).tolist()) == list(range(1000))
    assert min(p.size for p in parts) >= 10
    # small concentration: most clients are dominated by few classes
    top_share = [np.bincount(labels[p], minlength=10).max() / p.size for p in parts]
    assert np.median(top_share) > 0.5
    again = partition_dirichlet(labels, 10, 0.1, seed=0, min_size=10)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))


def test_partition_dirichlet_bad_input_and_unmeetable_min_size():
    labels = np.repeat(np.arange(2), 10)
    with pytest.raises(ValueError, match="concentration"):
        partition_dirichlet(labels, 2, 0.0, 0)
    with pytest.raises(ValueError, match="concentration"):
        partition_dirichlet(labels, 2, float("inf"), 0)
    with pytest.raises(ValueError, match="min_size"):
        partition_dirichlet(labels, 3, 1.0, 0, min_size=7)          # 21 > 20 samples
    with pytest.raises(ValueError, match="max_tries"):
        partition_dirichlet(labels, 4, 0.01, 0, min_size=5, max_tries=3)
    with pytest.raises(ValueError, match="labels"):
        partition_dirichlet(np.zeros((2, 2)), 2, 1.0, 0)


def test_sample_clients():
    rng = np.random.default_rng(0)
    s = sample_clients(10, 4, rng)
    assert s.tolist() == sorted(np.random.default_rng(0).choice(10, 4, replace=False).tolist())
    full_rng = np.random.default_rng(1)
    state = full_rng.bit_generator.state
    assert sample_clients(5, 5, full_rng).tolist() == [0, 1, 2, 3, 4]
    assert full_rng.bit_generator.state == state        # full participation draws nothing
    for bad in (0, 6):
        with pytest.raises(ValueError, match="per_round"):
            sample_clients(5, bad, rng)


def test_draw_batch_with_and_without_replacement():
    rng = np.random.default_rng(0)
    b = draw_batch(np.arange(100, 150), 20, rng)
    assert len(set(b.tolist())) == 20 and set(b.tolist()) <= set(range(100, 150))
    small = draw_batch(np.array([4, 5]), 6, rng)
    assert small.size == 6 and set(small.tolist()) <= {4, 5}
    with pytest.raises(ValueError, match="batch_size"):
        draw_batch(np.arange(3), 0, rng)


def test_byte_ledger_totals_and_rows():
    led = ByteLedger()
    led.add_floats("model.down", 10, round=0, client=0)
    led.add_floats("model.down", 10, round=0, client=1)
    led.add_floats("model.up", 3, round=1, client=1)
    led.add("seeds.down", 4, round=1)
    assert led.total() == 40 + 40 + 12 + 4
    assert led.total("model.down") == 80
    assert led.total(["model.up", "seeds.down"]) == 16
    assert led.total(round=1) == 16
    assert led.total(client=1) == 52
    assert led.direction_total("down") == 84 and led.direction_total("up", round=1) == 12
    rows = led.rows(method="m", seed=2)
    assert rows[0] == {"method": "m", "seed": 2, "step": 0, "metric": "bytes.model.down", "value": 80}
    assert sum(r["value"] for r in rows) == led.total()
    assert len(led.rows(per_client=True)) == 4
    assert led.categories() == ["model.down", "model.up", "seeds.down"]
    with pytest.raises(ValueError, match="n_bytes"):
        led.add("x.up", -1, 0)
    with pytest.raises(ValueError, match="round"):
        led.add("x.up", 1, -1)
    with pytest.raises(ValueError, match="category"):
        led.add("", 1, 0)
