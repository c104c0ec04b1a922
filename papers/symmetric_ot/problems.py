r"""Symmetric OT problems: D4 point clouds, grid images, the circle, and graphs ("molecular" stand-ins).

Every generator returns ``(a, b, C)`` as float64 arrays with ``a``, ``b`` in the simplex and ``C`` of shape
``(len(a), len(b))``; all data are generated (scikit-learn's bundled digits are the only images).
"""
from __future__ import annotations

import re

import numpy as np
import ot

__all__ = ["d4_point_clouds", "grid_images", "circle_problem", "circle_w1", "graph_problem",
           "random_problem", "d4_matrices", "GRAPH_NAMES", "symmetry_group", "group_point_clouds",
           "sorted_row_orbits", "SG_GROUPS", "frucht_problem", "automorphism_orbits"]

GRAPH_NAMES = ("hypercube<d>", "dodecahedron", "ladder<N>", "graphene")


def _check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def d4_matrices() -> list[np.ndarray]:
    """The 8 elements of D4 as exact 0/+-1 matrices: rotations by 0, 90, 180, 270 degrees, each followed
    by the same rotation composed with the reflection diag(1, -1)."""
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    flip = np.diag([1.0, -1.0])
    out, r = [], np.eye(2)
    for _ in range(4):
        out.extend([r.copy(), r @ flip])
        r = rot @ r
    return out


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / x.sum()


def d4_point_clouds(k: int, seed: int, weights: str = "uniform"):
    r"""Two D4-invariant clouds of :math:`8k` points in the plane and their squared Euclidean cost.

    :math:`X = \{g x_i\}`, :math:`Y = \{g y_j\}` over the 8 elements of D4 (``d4_matrices``), with base
    points :math:`x_i, y_j \sim N(0, I_2)`; :math:`C = \|X_i - Y_j\|^2` (``ot.dist``). ``weights="uniform"``:
    :math:`a = b = 1/(8k)`; ``"orbit"``: random weights per orbit, so :math:`a_{gi} = a_i`. Generic draws give
    p = q = k cells.
    """
    k = _check_positive_int(k, "k")
    if weights not in ("uniform", "orbit"):
        raise ValueError(f"weights must be 'uniform' or 'orbit', got {weights!r}")
    rng = np.random.default_rng(seed)
    bx = rng.standard_normal((k, 2))
    by = rng.standard_normal((k, 2))
    group = d4_matrices()
    X = np.vstack([bx @ g.T for g in group])
    Y = np.vstack([by @ g.T for g in group])
    C = ot.dist(X, Y)
    orbit = np.tile(np.arange(k), 8)
    if weights == "uniform":
        a = np.full(8 * k, 1.0 / (8 * k))
        b = a.copy()
    else:
        wa, wb = rng.random(k), rng.random(k)
        a, b = _normalise(wa[orbit]), _normalise(wb[orbit])
    return a, b, np.asarray(C, dtype=np.float64)


def _symmetrise(im: np.ndarray, group: str) -> np.ndarray:
    """Average of an image over D4 or C4; the values are sorted before summing, so the average is exactly
    invariant in floating point."""
    if group == "none":
        return im
    stack = []
    for k in range(4):
        r = np.rot90(im, k)
        stack.append(r)
        if group == "D4":
            stack.append(np.fliplr(r))
    stack = np.sort(np.stack(stack), axis=0)
    return stack.sum(axis=0) / len(stack)


def grid_images(L: int, group: str = "D4", seed: int = 0, source: str = "random"):
    r"""Two images on an L x L grid and the squared Euclidean cost between pixel positions (m = n = L^2).

    ``source="random"``: uniform random images; ``"digits"``: two distinct images of
    ``sklearn.datasets.load_digits`` upsampled by ``np.kron`` to L x L (L a multiple of 8). ``group``
    ("D4", "C4" or "none") symmetrises each image by averaging over the group; then
    :math:`a \propto \mathrm{im} + 10^{-3} \max \mathrm{im}` (no zero mass). D4-invariant generic images give
    :math:`(L/2)(L/2+1)/2` cells for even L.
    """
    L = _check_positive_int(L, "L")
    if group not in ("D4", "C4", "none"):
        raise ValueError(f"group must be 'D4', 'C4' or 'none', got {group!r}")
    if source not in ("random", "digits"):
        raise ValueError(f"source must be 'random' or 'digits', got {source!r}")
    rng = np.random.default_rng(seed)
    if source == "random":
        im1, im2 = rng.random((L, L)), rng.random((L, L))
    else:
        if L % 8:
            raise ValueError(f"L must be a multiple of 8 for source='digits', got {L}")
        from sklearn.datasets import load_digits

        images = load_digits().images
        idx = rng.choice(images.shape[0], 2, replace=False)
        block = np.ones((L // 8, L // 8))
        im1, im2 = (np.kron(images[i], block) for i in idx)
    out = []
    for im in (im1, im2):
        im = _symmetrise(np.asarray(im, dtype=np.float64), group)
        out.append(_normalise((im + 1e-3 * im.max()).ravel()))
    ii, jj = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    pos = np.column_stack([ii.ravel(), jj.ravel()]).astype(np.float64)
    C = ot.dist(pos, pos)
    return out[0], out[1], np.asarray(C, dtype=np.float64)


def circle_problem(n: int, period: int, seed: int):
    r"""Periodic histograms on the discrete circle with the geodesic cost.

    :math:`C_{ij} = (2\pi/n) \min(|i-j|, n-|i-j|)`; a, b repeat random blocks of length ``period``
    (invariant under rotation by ``period``), so the cost is circulant and there are ``period`` cells.
    """
    n = _check_positive_int(n, "n")
    period = _check_positive_int(period, "period")
    if n % period:
        raise ValueError(f"n must be a multiple of period, got n={n}, period={period}")
    rng = np.random.default_rng(seed)
    a0, b0 = rng.random(period), rng.random(period)
    a, b = _normalise(np.tile(a0, n // period)), _normalise(np.tile(b0, n // period))
    idx = np.arange(n)
    d = np.abs(idx[:, None] - idx[None, :])
    C = (2 * np.pi / n) * np.minimum(d, n - d).astype(np.float64)
    return a, b, C


def circle_w1(a, b) -> float:
    r"""Closed-form W1 on the discrete circle with geodesic cost (arc length :math:`2\pi/n` per step).

    :math:`W_1 = (2\pi/n) \sum_k |F_k - \mathrm{median}(F)|`, :math:`F = \mathrm{cumsum}(a - b)`
    (Rabin, Delon, Gousseau, "Transportation distances on the circle", 2011).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"a and b must be 1-D of equal length, got shapes {a.shape} and {b.shape}")
    F = np.cumsum(a - b)
    return float(2 * np.pi / a.size * np.sum(np.abs(F - np.median(F))))


def _shortest_paths(G, nodelist) -> np.ndarray:
    import networkx as nx
    from scipy.sparse.csgraph import shortest_path

    adj = nx.to_scipy_sparse_array(G, nodelist=nodelist, format="csr")
    return shortest_path(adj, unweighted=True, directed=False).astype(np.float64)


def graph_problem(name: str, seed: int = 0):
    r"""Graph OT problems with C = all-pairs shortest-path lengths (m = n = |V|).

    - ``"hypercube<d>"`` (e.g. ``hypercube8``): vertices = bit tuples read as binary numbers,
      :math:`a \propto 1 + |v|`, :math:`b \propto e^{-|v|/3}` (:math:`|v|` = popcount): d + 1 cells;
    - ``"dodecahedron"`` (the C20 fullerene skeleton) with a "substituent" at vertex 0:
      :math:`a \propto 1 + d(i, 0)`, :math:`b \propto 1/(1 + d(i, 0)^2)`;
    - ``"ladder<N>"`` (``circular_ladder_graph(N)``, N a multiple of 50): random weights on the outer and
      inner ring repeating with period 50 (invariant under rotation by 50 positions);
    - ``"graphene"`` (``hexagonal_lattice_graph(6, 6)``), uniform marginals.
    """
    import networkx as nx

    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {name!r}")
    match_cube = re.fullmatch(r"hypercube(\d+)", name)
    match_ladder = re.fullmatch(r"ladder(\d+)", name)
    if match_cube:
        d = int(match_cube.group(1))
        if not 1 <= d <= 12:
            raise ValueError(f"hypercube dimension must be in [1, 12], got {d}")
        G = nx.hypercube_graph(d)
        nodes = sorted(G.nodes, key=lambda t: int("".join(map(str, t)), 2))
        pop = np.array([sum(t) for t in nodes], dtype=np.float64)
        a, b = _normalise(1 + pop), _normalise(np.exp(-pop / 3))
    elif name == "dodecahedron":
        G = nx.dodecahedral_graph()
        nodes = sorted(G.nodes)
        dist = nx.single_source_shortest_path_length(G, 0)
        d0 = np.array([dist[v] for v in nodes], dtype=np.float64)
        a, b = _normalise(1 + d0), _normalise(1 / (1 + d0 ** 2))
    elif match_ladder:
        N = int(match_ladder.group(1))
        if N < 50 or N % 50:
            raise ValueError(f"ladder size must be a positive multiple of 50, got {N}")
        G = nx.circular_ladder_graph(N)
        nodes = list(range(2 * N))
        rng = np.random.default_rng(seed)
        f, g, f2, g2 = (rng.random(50) for _ in range(4))
        idx = np.arange(N) % 50
        a = _normalise(np.concatenate([f[idx], g[idx]]))
        b = _normalise(np.concatenate([f2[idx], g2[idx]]))
    elif name == "graphene":
        G = nx.hexagonal_lattice_graph(6, 6)
        nodes = sorted(G.nodes)
        a = np.full(len(nodes), 1.0 / len(nodes))
        b = a.copy()
    else:
        raise ValueError(f"unknown graph name {name!r}; choose one of {GRAPH_NAMES}")
    return a, b, _shortest_paths(G, nodes)


def random_problem(m: int, n: int, seed: int):
    """Negative control: C ~ U(0, 1)^(m x n) and random a, b; no symmetry (p = m, q = n expected)."""
    m = _check_positive_int(m, "m")
    n = _check_positive_int(n, "n")
    rng = np.random.default_rng(seed)
    C = rng.random((m, n))
    return _normalise(rng.random(m)), _normalise(rng.random(n)), C


def dodecahedron_stabiliser_orbits() -> int:
    """Number of orbits of the stabiliser of vertex 0 in Aut(dodecahedral graph) (exact, by VF2)."""
    import networkx as nx

    return automorphism_orbits(nx.dodecahedral_graph(), fixing=0)


def automorphism_orbits(G, fixing=None) -> int:
    """Number of vertex orbits of Aut(G), or of the stabiliser of vertex ``fixing`` when given (exact, by
    enumerating the automorphisms with VF2 and merging each vertex with its images; small graphs)."""
    from networkx.algorithms.isomorphism import GraphMatcher
    from networkx.utils import UnionFind

    orbits = UnionFind(G.nodes)
    for iso in GraphMatcher(G, G).isomorphisms_iter():
        if fixing is None or iso[fixing] == fixing:
            for v, w in iso.items():
                orbits.union(v, w)
    return len(list(orbits.to_sets()))


def frucht_problem():
    r"""A problem whose coarsest equitable partition is strictly coarser than its orbits, with a nonzero OT value:
    the Frucht graph (12 vertices, 3-regular, trivial automorphism group), uniform marginals and the cost

    .. math::
        C_{ii} = 2, \qquad C_{ij} = 1 \ (ij \text{ an edge}), \qquad C_{ij} = 3 \ \text{otherwise}.

    Every row holds one 2, three 1s and eight 3s, all in one cell, so colour refinement stops at one cell while
    the orbits are the 12 singletons. OT = 1: the plan A / 36 (mass to the three neighbours) is feasible because
    the graph is regular and costs 1, and no plan costs less since 1 is the smallest entry. The block minimum is
    1, so the one-cell reduction is exact; the block mean (348 / 144) is not."""
    import networkx as nx

    G = nx.frucht_graph()
    A = nx.to_numpy_array(G, nodelist=sorted(G.nodes), dtype=np.float64)
    n = A.shape[0]
    C = 3.0 * (1.0 - A - np.eye(n)) + A + 2.0 * np.eye(n)
    return np.full(n, 1.0 / n), np.full(n, 1.0 / n), C, G


# ------------------------------------------------------------------ finite groups of SG-ROT (Zhang et al.)
def _rotation(axis, theta: float) -> np.ndarray:
    """Rotation by ``theta`` about ``axis`` (Rodrigues); 2-D when ``axis`` is None."""
    if axis is None:
        c, s = np.cos(theta), np.sin(theta)
        return np.array([[c, -s], [s, c]])
    x, y, z = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    c, s = np.cos(theta), np.sin(theta)
    C = 1 - c
    return np.array([[c + x * x * C, x * y * C - z * s, x * z * C + y * s],
                     [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
                     [z * x * C - y * s, z * y * C + x * s, c + z * z * C]])


def _closure(generators: list[np.ndarray], order: int) -> list[np.ndarray]:
    """All products of the generators (a finite matrix group), deduplicated after rounding to 1e-9."""
    dim = generators[0].shape[0]
    elems, keys, frontier = [np.eye(dim)], {tuple(np.round(np.eye(dim), 9).ravel())}, [np.eye(dim)]
    while frontier:
        nxt = []
        for g in frontier:
            for h in generators:
                x = h @ g
                key = tuple(np.round(x, 9).ravel() + 0.0)
                if key not in keys:
                    keys.add(key)
                    elems.append(x)
                    nxt.append(x)
        frontier = nxt
        if len(elems) > order:
            break
    if len(elems) != order:
        raise RuntimeError(f"group closure gave {len(elems)} elements, expected {order}")
    return elems


SG_GROUPS = ("Z", "D", "T", "O", "I")


def symmetry_group(group: str, order: int | None = None) -> tuple[list[np.ndarray], int]:
    r"""Elements of a finite symmetry group of SG-ROT's synthetic experiments, ordered as
    :math:`h^k r` (k = 0..s-1 outer, coset representatives r inner) for a cyclic subgroup
    :math:`H = \langle h \rangle` of maximal order s; returns ``(elements, s)``.

    ``"Z"``: cyclic :math:`Z_n` (2-D rotations, ``order`` = n); ``"D"``: dihedral group of ``order`` = 2l
    (l rotations and l reflections, 2-D; SG-ROT's default order 6); ``"T"``, ``"O"``, ``"I"``: rotation
    groups of the tetrahedron (12), octahedron (24) and icosahedron (60) in 3-D, with maximal cyclic
    subgroups of order 3, 4 and 5. With this ordering the cost between two orbit-wise generated clouds is
    block-circulant in k (the structure the cyclic reduction of Takeda et al. uses).
    """
    phi = (1 + 5 ** 0.5) / 2
    if group == "Z":
        n = _check_positive_int(order, "order")
        h, G, s = _rotation(None, 2 * np.pi / n), None, n
        reps = [np.eye(2)]
    elif group == "D":
        n = _check_positive_int(order, "order")
        if n % 2:
            raise ValueError(f"order of a dihedral group must be even, got {n}")
        s = n // 2
        h = _rotation(None, 2 * np.pi / s)
        reps = [np.eye(2), np.diag([-1.0, 1.0])]
    elif group in ("T", "O", "I"):
        fixed = {"T": 12, "O": 24, "I": 60}[group]
        if order not in (None, fixed):
            raise ValueError(f"group {group} has order {fixed}, got {order}")
        if group == "T":
            h, other, s = _rotation([1, 1, 1], 2 * np.pi / 3), _rotation([1, 0, 0], np.pi), 3
        elif group == "O":
            h, other, s = _rotation([0, 0, 1], np.pi / 2), _rotation([1, 1, 1], 2 * np.pi / 3), 4
        else:
            h, other, s = _rotation([0, 1, phi], 2 * np.pi / 5), _rotation([1, 1, 1], 2 * np.pi / 3), 5
        G = _closure([h, other], fixed)
        powers = [np.linalg.matrix_power(h, k) for k in range(s)]
        reps, covered = [], set()
        for g in G:  # right cosets H g
            key = tuple(np.round(g, 9).ravel() + 0.0)
            if key in covered:
                continue
            reps.append(g)
            covered |= {tuple(np.round(p @ g, 9).ravel() + 0.0) for p in powers}
    else:
        raise ValueError(f"unknown group {group!r}; choose one of {list(SG_GROUPS)}")
    elems = [np.linalg.matrix_power(h, k) @ r for k in range(s) for r in reps]
    return elems, s


def group_point_clouds(group: str, orbit_num: int, seed: int, *, order: int | None = None,
                       ordering: str = "block"):
    r"""SG-ROT's synthetic problem: two clouds :math:`\{g x_o\}`, :math:`\{g y_o\}` over the elements of a
    finite group (``symmetry_group``), base points :math:`x_o, y_o \sim N(\mathbf 1, 0.5 I)`, weights
    :math:`1 + 0.05\,\xi_o` per orbit (clipped at 1e-6, normalised), Euclidean cost (``ot.dist`` with
    metric "euclidean"). ``ordering="block"`` lists the points group element by group element (as
    :func:`symmetry_group` orders them); ``"random"`` permutes each side at random.

    Returns ``(a, b, C, info)`` with ``info`` = {"orbits": row and column orbit labels, "cyclic": row and
    column labels of the orbits of the maximal cyclic subgroup, "order", "subgroup_order"}.
    """
    orbit_num = _check_positive_int(orbit_num, "orbit_num")
    if ordering not in ("block", "random"):
        raise ValueError(f"ordering must be 'block' or 'random', got {ordering!r}")
    elems, s = symmetry_group(group, order)
    dim = elems[0].shape[0]
    rng = np.random.default_rng(seed)
    clouds, weights = [], []
    for _ in range(2):
        base = rng.multivariate_normal(np.ones(dim), 0.5 * np.eye(dim), size=orbit_num)
        w = np.clip(1.0 + 0.05 * rng.standard_normal(orbit_num), 1e-6, None)
        clouds.append(np.vstack([base @ g.T for g in elems]))
        weights.append(_normalise(np.tile(w, len(elems))))
    n = orbit_num * len(elems)
    per_block = n // s  # points of one power h^k: (coset representative, orbit) pairs
    orbit = np.tile(np.arange(orbit_num), len(elems))
    cyclic = np.arange(n) % per_block
    perms = [rng.permutation(n) if ordering == "random" else np.arange(n) for _ in range(2)]
    X, Y = clouds[0][perms[0]], clouds[1][perms[1]]
    a, b = weights[0][perms[0]], weights[1][perms[1]]
    C = ot.dist(X, Y, metric="euclidean")
    info = {"orbits": (orbit[perms[0]], orbit[perms[1]]), "cyclic": (cyclic[perms[0]], cyclic[perms[1]]),
            "order": len(elems), "subgroup_order": s}
    return a, b, C, info


def sorted_row_orbits(C, decimals: int = 6) -> tuple[int, int]:
    """SG-ROT's orbit detection (numbers of row and column classes): rows (columns) whose entries, rounded to
    ``decimals`` and sorted, coincide. Assumes a free action; used here only as a comparison."""
    R = np.round(np.asarray(C, dtype=float), decimals)
    rows = np.unique(np.sort(R, axis=1), axis=0).shape[0]
    cols = np.unique(np.sort(R, axis=0).T, axis=0).shape[0]
    return rows, cols
