"""Unit tests of symmetric_ot: known answers derived from the math, exact identities, bad inputs."""
import warnings

import numpy as np
import ot
import pytest

from papers.symmetric_ot.partition import Partition, equitable_partition, is_equitable, quantize
from papers.symmetric_ot.problems import (automorphism_orbits, circle_problem, circle_w1, d4_matrices, d4_point_clouds,
                                          frucht_problem, graph_problem, grid_images, random_problem)
from papers.symmetric_ot.reduce import block_reduce, reduced_emd, reduced_sinkhorn, symmetrize_marginals


def _part(rows, cols):
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    return Partition(rows, cols, int(rows.max()) + 1, int(cols.max()) + 1)


# ----------------------------------------------------------------------------------------------- problems
def test_d4_matrices_form_the_dihedral_group():
    G = d4_matrices()
    keys = {tuple(g.ravel()) for g in G}
    assert len(keys) == 8
    for g in G:  # orthogonal signed permutations, closed under products
        assert np.array_equal(g @ g.T, np.eye(2))
        for h in G:
            assert tuple((g @ h).ravel()) in keys


def test_circle_spec_instance_closed_form():
    a, b, C = circle_problem(96, 12, 0)
    assert circle_w1(a, b) == pytest.approx(0.0702880959662266, abs=1e-15)
    assert reduced_emd(a, b, C).cost == pytest.approx(0.0702880959662266, abs=1e-15)


def test_circle_w1_two_point_answer():
    # unit mass moved by 3 steps on a circle of 8 points: W1 = 3 * 2 pi / 8
    a, b = np.eye(8)[0], np.eye(8)[3]
    assert circle_w1(a, b) == pytest.approx(3 * 2 * np.pi / 8, rel=1e-14)


def test_grid_d4_burnside_count_and_from_cost_alone():
    # D4 on an L x L grid, L even: (L/2)(L/2 + 1)/2 orbits (Burnside); 10 at L = 8
    a, b, C = grid_images(8, "D4", 0, "random")
    assert equitable_partition(C, a, b).n_row_cells == 10
    assert equitable_partition(C).n_row_cells == 10
    a, b, C = grid_images(8, "C4", 0, "random")
    assert equitable_partition(C, a, b).n_row_cells == 64 // 4


def test_hypercube_cells_are_popcount_classes():
    a, b, C = graph_problem("hypercube4")
    part = equitable_partition(C, a, b)
    pop = np.array([bin(v).count("1") for v in range(16)])
    assert part.n_row_cells == 5 and part.n_col_cells == 5
    # the cells are exactly the popcount classes
    assert all(len(set(pop[part.row_labels == r])) == 1 for r in range(5))
    # shortest paths on the hypercube are Hamming distances
    assert np.array_equal(C, [[bin(i ^ j).count("1") for j in range(16)] for i in range(16)])


def test_clouds_generic_cells_equal_k():
    for w in ("uniform", "orbit"):
        a, b, C = d4_point_clouds(6, 1, w)
        part = equitable_partition(C, a, b)
        assert (part.n_row_cells, part.n_col_cells) == (6, 6)
        assert np.array_equal(part.row_labels, np.tile(np.arange(6), 8))


def test_negative_control_no_false_merges():
    a, b, C = random_problem(30, 25, 0)
    part = equitable_partition(C, a, b)
    assert (part.n_row_cells, part.n_col_cells) == (30, 25)


# ---------------------------------------------------------------------------------------------- partition
def test_small_known_partition_and_labels_by_first_occurrence():
    # rows 0 and 2 see {1, 2}, row 1 sees {3, 3}: two row cells; with those, column 0 sees {1, 2} on
    # cell 0 and 3 on cell 1, and so does column 1: one column cell
    C = np.array([[1.0, 2.0], [3.0, 3.0], [2.0, 1.0]])
    part = equitable_partition(C)
    assert part.row_labels.tolist() == [0, 1, 0]
    assert part.col_labels.tolist() == [0, 0]
    assert is_equitable(C, part)


def test_quantised_keys_absorb_rounding_noise():
    C = np.array([[1.0, 2.0], [2.0, 1.0]])
    noisy = C + np.array([[0, 2e-16], [-2e-16, 1e-16]])
    assert np.array_equal(quantize(noisy), quantize(C))
    assert equitable_partition(noisy).n_row_cells == 1


def test_is_equitable_rejects_wrong_blocks():
    C = np.array([[0.0, 1.0], [1.0, 0.0], [5.0, 5.0]])
    assert not is_equitable(C, _part([0, 0, 0], [0, 0]))
    assert is_equitable(C, _part([0, 0, 1], [0, 0]))
    # marginals must be constant on cells
    a = np.array([0.2, 0.3, 0.5])
    assert not is_equitable(C, _part([0, 0, 1], [0, 0]), a=a)


def test_hash_collision_is_caught_by_exact_check(monkeypatch):
    import papers.symmetric_ot.partition as P

    C = np.array([[0.0, 1.0], [1.0, 0.0], [5.0, 5.0]])
    monkeypatch.setattr(P, "_signature_hashes", lambda Qu, colours, axis, work, tmp:
                        np.zeros(Qu.shape[1 - axis], dtype=np.uint64))  # every multiset collides
    part = P.equitable_partition(C)
    assert part.row_labels.tolist() == [0, 0, 1]
    assert is_equitable(C, part)


# -------------------------------------------------------------------------------------------- reduced LP
def test_reduced_emd_two_by_two_known_answer():
    # swap symmetry: C = [[0, 1], [1, 0]], a = b uniform -> OT = 0, one cell each side
    C = np.array([[0.0, 1.0], [1.0, 0.0]])
    res = reduced_emd([0.5, 0.5], [0.5, 0.5], C)
    assert res.cost == 0.0
    assert res.partition.n_row_cells == 1
    assert np.array_equal(res.plan, np.diag([0.5, 0.5]))


def test_reduced_emd_matches_pot_and_lift_is_feasible():
    a, b, C = d4_point_clouds(5, 3, "orbit")
    res = reduced_emd(a, b, C)
    ref = ot.emd2(a, b, C)
    assert abs(res.cost - ref) <= 1e-12 * ref
    assert np.abs(res.plan.sum(1) - a).max() < 1e-15
    assert np.abs(res.plan.sum(0) - b).max() < 1e-15
    assert np.all(res.plan >= 0)
    assert abs(np.sum(res.plan * C) - res.cost) <= 1e-12 * res.cost
    assert res.reduced_plan.shape == (5, 5)
    assert set(res.timings) >= {"refine", "aggregate", "solve", "lift"}


def test_frucht_one_cell_against_twelve_orbits_with_ot_one():
    """Frucht graph, cost 2 on the diagonal, 1 on edges, 3 elsewhere: one equitable cell, 12 singleton orbits,
    OT = 1 (mass to the neighbours; 1 is the least entry), which the one-cell reduction returns exactly while a
    cell-mean aggregation would give (12*2 + 36*1 + 96*3)/144."""
    a, b, C, G = frucht_problem()
    assert sorted(np.unique(C, return_counts=True)[1]) == [12, 36, 96]
    assert automorphism_orbits(G) == 12
    res = reduced_emd(a, b, C)
    assert (res.partition.n_row_cells, res.partition.n_col_cells) == (1, 1)
    assert res.cost == pytest.approx(1.0, abs=1e-12)
    assert float(ot.emd2(a, b, C)) == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(res.plan.sum(axis=1), a) and np.allclose(res.plan.sum(axis=0), b)
    assert float(C.mean()) == pytest.approx(348 / 144)


def test_reduced_cost_is_block_minimum():
    C = np.arange(12, dtype=float).reshape(3, 4)
    part = _part([0, 1, 1], [0, 0, 1, 1])
    assert block_reduce(C, part, "min").tolist() == [[0, 2], [4, 6]]
    assert block_reduce(C, part, "sum").tolist() == [[1, 5], [4 + 5 + 8 + 9, 6 + 7 + 10 + 11]]


def test_symmetrize_marginals_and_duality_bound():
    a, b, C = grid_images(8, "none", 1, "digits")
    part = equitable_partition(C)
    abar, bbar = symmetrize_marginals(a, b, part)
    assert abar.sum() == pytest.approx(1.0, abs=1e-15)
    for r in range(part.n_row_cells):
        members = part.row_labels == r
        assert np.ptp(abar[members]) == 0 and abar[members][0] == pytest.approx(a[members].mean(), rel=1e-14)
    approx = reduced_emd(abar, bbar, C, partition=part).cost
    err = abs(approx - ot.emd2(a, b, C))
    bound = (C.max() - C.min()) / 2 * (np.abs(a - abar).sum() + np.abs(b - bbar).sum())
    assert err <= bound
    assert approx == pytest.approx(ot.emd2(abar, bbar, C), rel=1e-12)


# -------------------------------------------------------------------------------------- reduced Sinkhorn
@pytest.mark.parametrize("iters", [1, 2, 7, 30])
def test_reduced_sinkhorn_equals_pot_iterate_by_iterate(iters):
    a, b, C = d4_point_clouds(6, 2, "orbit")
    reg = 0.05 * np.median(C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P = ot.sinkhorn(a, b, C, reg, numItermax=iters, stopThr=0)
    res = reduced_sinkhorn(a, b, C, reg, num_iter=iters)
    assert np.abs(res.plan - P).max() <= 1e-13 * P.max()
    assert res.cost == pytest.approx(np.sum(P * C), rel=1e-13)
    assert res.n_iter == iters


def test_reduced_sinkhorn_one_iteration_closed_form():
    # after one iteration with u0 = 1/m: v = b / (K^T u0), u = a / (K v)
    C = np.array([[0.0, 1.0], [1.0, 0.0]])
    a = b = np.array([0.5, 0.5])
    K = np.exp(-C / 0.5)
    v = b / (K.T @ np.full(2, 0.5))
    u = a / (K @ v)
    res = reduced_sinkhorn(a, b, C, 0.5, num_iter=1)
    assert np.allclose(res.plan, u[:, None] * K * v[None, :], rtol=1e-15, atol=0)


def test_reduced_sinkhorn_log_domain_matches_pot_log():
    a, b, C = d4_point_clouds(4, 0, "orbit")
    reg = 1e-3 * np.median(C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P = ot.sinkhorn(a, b, C, reg, method="sinkhorn_log", numItermax=20, stopThr=0)
    res = reduced_sinkhorn(a, b, C, reg, num_iter=20, log_domain=True)
    assert np.abs(res.plan - P).max() <= 1e-11 * P.max()


def test_reduced_sinkhorn_stopping_rule_like_pot():
    a, b, C = d4_point_clouds(4, 0, "uniform")
    reg = 0.5 * np.median(C)
    P, log = ot.sinkhorn(a, b, C, reg, numItermax=1000, stopThr=1e-9, log=True)
    res = reduced_sinkhorn(a, b, C, reg, num_iter=1000, stop_thr=1e-9)
    assert res.n_iter == log["niter"] + 1  # POT logs the last loop index
    assert np.abs(res.plan - P).max() <= 1e-13 * P.max()


# --------------------------------------------------------------------------------------------- bad input
GOOD = (np.full(2, 0.5), np.full(2, 0.5), np.array([[0.0, 1.0], [1.0, 0.0]]))


@pytest.mark.parametrize("args, match", [
    ((GOOD[0], GOOD[1], np.zeros(4)), "2-D"),
    ((GOOD[0], np.full(3, 1 / 3), GOOD[2]), "length 2"),
    ((GOOD[0], GOOD[1], np.array([[0.0, np.nan], [1.0, 0.0]])), "NaN or Inf"),
    ((GOOD[0], GOOD[1], np.array([[0.0, np.inf], [1.0, 0.0]])), "NaN or Inf"),
    ((np.array([1.5, -0.5]), GOOD[1], GOOD[2]), "negative"),
    ((np.array([0.5, 0.6]), GOOD[1], GOOD[2]), "sum to 1"),
    ((GOOD[0], np.array([0.25, 0.25]), GOOD[2]), "sum to 1"),
])
def test_bad_problems(args, match):
    with pytest.raises(ValueError, match=match):
        reduced_emd(*args)
    with pytest.raises(ValueError, match=match):
        reduced_sinkhorn(*args, 1.0)
    with pytest.raises(ValueError, match=match):
        equitable_partition(args[2], *args[:2])


@pytest.mark.parametrize("kwargs, match", [
    ({"reg": 0.0}, "reg"), ({"reg": -1.0}, "reg"), ({"reg": 1.0, "num_iter": 0}, "num_iter"),
    ({"reg": 1.0, "decimals": 0}, "decimals"), ({"reg": 1.0, "decimals": 16}, "decimals"),
])
def test_bad_solver_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        reduced_sinkhorn(*GOOD, **kwargs)


def test_bad_decimals_everywhere():
    for fn in (lambda: equitable_partition(GOOD[2], decimals=0), lambda: reduced_emd(*GOOD, decimals=16),
               lambda: is_equitable(GOOD[2], _part([0, 0], [0, 0]), decimals=20)):
        with pytest.raises(ValueError, match="decimals"):
            fn()


@pytest.mark.parametrize("part, match", [
    (_part([0, 0, 0], [0, 0]), "row_labels must have length 2"),
    (_part([0, 0], [0]), "col_labels must have length 2"),
    (Partition(np.array([0, 2]), np.array([0, 0]), 2, 1), "contiguous"),
    (Partition(np.array([0, 1]), np.array([0, 0]), 3, 1), "contiguous"),
])
def test_bad_partition_labels(part, match):
    with pytest.raises(ValueError, match=match):
        reduced_emd(*GOOD, partition=part)
    with pytest.raises(ValueError, match=match):
        is_equitable(GOOD[2], part)


def test_non_equitable_partition_names_the_block():
    C = np.array([[0.0, 1.0], [1.0, 0.0], [5.0, 5.0]])
    a = np.full(3, 1 / 3)
    b = np.full(2, 0.5)
    with pytest.raises(ValueError, match=r"not equitable.*block \(row cell 0, column cell 0\)"):
        reduced_emd(a, b, C, partition=_part([0, 0, 0], [0, 0]))
    with pytest.raises(ValueError, match="marginal a is not constant"):
        reduced_sinkhorn(np.array([0.2, 0.3, 0.5]), b, C, 1.0, partition=_part([0, 0, 1], [0, 0]))


def test_bad_generator_arguments():
    cases = [
        (lambda: grid_images(0), "L must be a positive integer"),
        (lambda: grid_images(2.5), "L must be a positive integer"),
        (lambda: grid_images(12, source="digits"), "multiple of 8"),
        (lambda: grid_images(8, group="D6"), "group"),
        (lambda: grid_images(8, source="faces"), "source"),
        (lambda: circle_problem(10, 3, 0), "multiple of period"),
        (lambda: graph_problem("benzene"), "unknown graph name"),
        (lambda: d4_point_clouds(0, 0), "k must be a positive integer"),
        (lambda: d4_point_clouds(3, 0, "random"), "weights"),
    ]
    for fn, match in cases:
        with pytest.raises(ValueError, match=match):
            fn()


def test_log_domain_reduced_cost_is_kernel_weighted_block_mean():
    # tiny reg: exp(-C/reg) underflows, the block mean must still be finite and inside [min, max] of the block
    C = np.array([[0.0, 1.0], [1.0, 0.0]]) + 800.0  # exp(-800) == 0.0
    res = reduced_sinkhorn([0.5, 0.5], [0.5, 0.5], C, 1.0, num_iter=3, log_domain=True)
    assert res.partition.n_row_cells == 1
    assert np.all(np.isfinite(res.reduced_cost))
    w = np.exp(-np.array([0.0, 1.0]))
    assert res.reduced_cost[0, 0] == pytest.approx(800.0 + w[1] / w.sum(), rel=1e-14)


# ------------------------------------------------------------------------ SG-ROT groups and formulas
@pytest.mark.parametrize("group,order,size,sub", [("Z", 5, 5, 5), ("D", 6, 6, 3), ("T", None, 12, 3),
                                                  ("O", None, 24, 4), ("I", None, 60, 5)])
def test_symmetry_groups_are_closed_orthogonal_and_cyclic_ordered(group, order, size, sub):
    from papers.symmetric_ot.problems import symmetry_group

    elems, s = symmetry_group(group, order)
    assert len(elems) == size and s == sub
    keys = {tuple(np.round(g, 8).ravel() + 0.0) for g in elems}
    assert len(keys) == size  # distinct
    for g in elems:
        np.testing.assert_allclose(g @ g.T, np.eye(g.shape[0]), atol=1e-12)
        for h in elems[:3]:
            assert tuple(np.round(g @ h, 8).ravel() + 0.0) in keys  # closed under products
    # element k * (|G|/s) + r is h^k r: the first block of coset representatives times h gives the next block
    per = size // s
    h = elems[per] @ np.linalg.inv(elems[0])
    np.testing.assert_allclose(h @ elems[1], elems[per + 1], atol=1e-12)


def test_group_clouds_cells_equal_orbits_in_both_orderings():
    from papers.symmetric_ot.problems import group_point_clouds, sorted_row_orbits

    for ordering in ("block", "random"):
        a, b, C, info = group_point_clouds("T", 3, 1, ordering=ordering)
        part = equitable_partition(C, a, b)
        assert (part.n_row_cells, part.n_col_cells) == (3, 3)
        assert sorted_row_orbits(C) == (3, 3)
        # the orbit labels of the construction are an equitable partition, and so are the cyclic ones
        cyc = Partition(*(np.unique(x, return_inverse=True)[1] for x in info["cyclic"]), 12, 12)
        assert is_equitable(C, cyc, a, b)


def test_first_block_row_formula_exact_on_block_order_only():
    from papers.symmetric_ot.experiments import first_block_row_lot
    from papers.symmetric_ot.problems import group_point_clouds

    a, b, C, _ = group_point_clouds("D", 4, 2, order=6, ordering="block")
    ref = ot.emd2(a, b, C)
    assert abs(first_block_row_lot(a, b, C, 6) - ref) <= 1e-12 * ref
    assert abs(reduced_emd(a, b, C).cost - ref) <= 1e-12 * ref
    a, b, C, _ = group_point_clouds("D", 4, 2, order=6, ordering="random")
    assert abs(reduced_emd(a, b, C).cost - ot.emd2(a, b, C)) <= 1e-12 * ref
    assert abs(first_block_row_lot(a, b, C, 6) - ot.emd2(a, b, C)) > 1e-3 * ref


def test_fast_exact_verification_agrees_with_the_sorting_check():
    from papers.symmetric_ot.partition import _is_equitable_fast

    a, b, C = d4_point_clouds(4, 0, "uniform")
    part = equitable_partition(C, a, b)
    Q = quantize(C)
    assert _is_equitable_fast(Q, part.row_labels, part.col_labels)
    merged = part.row_labels.copy()
    merged[merged == 1] = 0  # merge two row cells: no longer equitable
    merged = np.unique(merged, return_inverse=True)[1]
    assert not _is_equitable_fast(Q, merged, part.col_labels)
    assert not is_equitable(C, Partition(merged, part.col_labels, int(merged.max()) + 1, part.n_col_cells))


def test_lift_plan_keys_of_block_minima():
    # the keys of the block minima are the block minima of the keys (rint is monotone): lift is feasible
    a, b, C = d4_point_clouds(6, 4, "orbit")
    res = reduced_emd(a, b, C)
    np.testing.assert_allclose(res.plan.sum(axis=1), a, atol=1e-15)
    np.testing.assert_allclose(res.plan.sum(axis=0), b, atol=1e-15)
    assert abs(np.sum(res.plan * C) - res.cost) <= 1e-9 * res.cost


def test_alternating_min_cpu_takes_each_sides_least_time():
    """A scripted clock: a costs 5, 3, 4 and b costs 2, 6, 1 seconds; calls alternate a, b, a, b, ..., so the
    minima are 3 and 1 whatever the order of the bursts (load only ever adds time)."""
    from papers.symmetric_ot.experiments import _alternating_min_cpu

    ticks = iter(np.cumsum([0, 5, 0, 2, 0, 3, 0, 6, 0, 4, 0, 1]))
    order = []
    t_a, t_b = _alternating_min_cpu(lambda: order.append("a"), lambda: order.append("b"), 3,
                                    cpu_clock=lambda: float(next(ticks)))
    assert (t_a, t_b) == (3.0, 1.0)
    assert order == ["a", "b"] * 3
    with pytest.raises(ValueError, match="inner"):
        _alternating_min_cpu(lambda: None, lambda: None, 0)
