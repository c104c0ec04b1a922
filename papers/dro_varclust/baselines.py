"""Baselines of the spec, all on the same normalised X (variables in columns) and scored the same way."""
from __future__ import annotations

import numpy as np
from sklearn.model_selection import KFold

from papers.dro_varclust.cluster import affinity_from_coefficients, check_K, spectral_labels
from papers.dro_varclust.data import check_design, normalize_design

__all__ = ["LASSO_GRID", "kmeans_variables", "corr_spectral", "ridge_coefficients", "ridge_nodewise",
           "lasso_coefficients", "lasso_cv_nodewise", "ssc_omp_coefficients", "ssc_omp", "ensc_coefficients", "ensc",
           "ssc_lambda_z", "ssc_admm_coefficients", "ssc_admm", "lrr_coefficients", "lrr",
           "cord_matrix", "cord_acc", "mfc", "kmedoids_corr", "pecok_v_matrix", "pecok_gamma_hat",
           "pecok_sdp", "pecok_coefficients", "pecok", "BASELINES"]

LASSO_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)


def _prepare(X, K):
    X = normalize_design(X)
    return X, check_K(K, X.shape[1])


def kmeans_variables(X, K: int) -> np.ndarray:
    """k-means on the variables: ``KMeans(K, n_init=10, random_state=0)`` on the rows of X^T."""
    from sklearn.cluster import KMeans

    X, K = _prepare(X, K)
    return KMeans(n_clusters=K, n_init=10, random_state=0).fit_predict(X.T).astype(int)


def corr_spectral(X, K: int) -> np.ndarray:
    """|corr|-spectral: W = |corrcoef| of the variables with zero diagonal, then :func:`spectral_labels`."""
    X, K = _prepare(X, K)
    W = np.abs(np.corrcoef(X, rowvar=False))
    np.fill_diagonal(W, 0.0)
    return spectral_labels(W, K)


def ridge_coefficients(X, lam: float = 0.1) -> np.ndarray:
    r"""Nodewise ridge [ours]: column j is :math:`(X_{-j}^\top X_{-j} + \lambda I)^{-1} X_{-j}^\top x_j` with
    :math:`b_{jj} = 0`. Computed at once: with :math:`G^{-1} = (X^\top X + \lambda I)^{-1}` and
    :math:`\tilde B = G^{-1}X^\top X`, :math:`b_j = \tilde b_j - (\tilde B_{jj}/G^{-1}_{jj})\, G^{-1} e_j`
    (the Lagrange multiplier of :math:`b_{jj} = 0`)."""
    X = check_design(X)
    if not lam > 0:
        raise ValueError(f"lam must be > 0, got {lam}")
    p = X.shape[1]
    G = X.T @ X
    Ginv = np.linalg.inv(G + lam * np.eye(p))
    Bt = Ginv @ G
    B = Bt - Ginv * (np.diag(Bt) / np.diag(Ginv))[None, :]
    np.fill_diagonal(B, 0.0)
    return B


def ridge_nodewise(X, K: int, lam: float = 0.1) -> np.ndarray:
    """Ridge nodewise regression [ours] then the spectral step on |B| + |B|^T."""
    X, K = _prepare(X, K)
    return spectral_labels(affinity_from_coefficients(ridge_coefficients(X, lam)), K)


def lasso_coefficients(X, lams) -> np.ndarray:
    r"""Nodewise Lasso :math:`\min_b \|x_j - Xb\|^2 + \lambda\|b\|_1`, :math:`b_j = 0`, for every lambda in
    ``lams``: sklearn's ``lasso_path`` (alpha = lambda / (2 n_rows), warm starts along the grid, tol 1e-4,
    max_iter 1e4) per node. Returns an array (len(lams), p, p) whose column j holds b for node j."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import lasso_path

    X = np.asarray(X, dtype=float)
    n, p = X.shape
    lams = np.asarray(lams, dtype=float)
    order = np.argsort(-lams)  # lasso_path wants decreasing alphas
    alphas = lams[order] / (2.0 * n)
    out = np.zeros((lams.size, p, p))
    others = np.ones(p, dtype=bool)
    for j in range(p):
        others[j] = False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _, coefs, _ = lasso_path(X[:, others], X[:, j], alphas=alphas, tol=1e-4, max_iter=10000)
        out[order[:, None], np.flatnonzero(others)[None, :], j] = coefs.T
        others[j] = True
    return out


def lasso_cv_nodewise(X, K: int, lams=LASSO_GRID, n_folds: int = 3, return_details: bool = False):
    r"""Lasso-CV nodewise (SSC-like): one lambda for all nodes from ``lams`` by ``KFold(n_folds)`` over the rows
    (no shuffle; train and held-out rows re-normalised separately; fold score :math:`-\|X_{te} - X_{te}B\|_F^2`),
    refit on all rows with the best lambda, spectral step on |B| + |B|^T.

    [ours] When the refit leaves a variable with zero affinity (all its coefficients zero in both directions),
    the next smaller lambda of the grid is used instead (spectral clustering needs every degree > 0).
    """
    X, K = _prepare(X, K)
    lams = np.asarray(lams, dtype=float)
    scores = np.zeros(lams.size)
    for train, test in KFold(n_splits=n_folds).split(X):
        Xtr, Xte = normalize_design(X[train]), normalize_design(X[test])
        for i, B in enumerate(lasso_coefficients(Xtr, lams)):
            scores[i] -= np.sum((Xte - Xte @ B) ** 2)
    best = int(np.argmax(scores))
    refits = lasso_coefficients(X, lams)
    chosen = best
    for i in sorted((i for i in range(lams.size) if lams[i] <= lams[best]), key=lambda i: -lams[i]):
        if np.all(affinity_from_coefficients(refits[i]).sum(axis=1) > 0):
            chosen = i
            break
    B = refits[chosen]
    labels = spectral_labels(affinity_from_coefficients(B), K)
    if return_details:
        return labels, {"lam_cv": float(lams[best]), "lam": float(lams[chosen]), "cv_scores": scores, "B": B}
    return labels


def ssc_omp_coefficients(X, k_max: int = 10) -> np.ndarray:
    r"""SSC by orthogonal matching pursuit (You, Robinson & Vidal, CVPR 2016): column j of C greedily expresses
    x_j with at most ``k_max`` other columns (sklearn's ``orthogonal_mp``), :math:`c_{jj} = 0`."""
    from sklearn.linear_model import orthogonal_mp

    X = check_design(X)
    n, p = X.shape
    k = int(min(k_max, n - 1, p - 1))
    C = np.zeros((p, p))
    for j in range(p):
        others = np.delete(np.arange(p), j)
        C[others, j] = orthogonal_mp(X[:, others], X[:, j], n_nonzero_coefs=k)
    return C


def ssc_omp(X, K: int, k_max: int = 10) -> np.ndarray:
    """SSC-OMP then the spectral step on |C| + |C|^T; ``k_max`` = 10 is our choice (not tuned)."""
    X, K = _prepare(X, K)
    return spectral_labels(affinity_from_coefficients(ssc_omp_coefficients(X, k_max)), K)


def ensc_coefficients(X, lam: float = 0.9, gamma: float = 50.0) -> np.ndarray:
    r"""Elastic-net subspace clustering (You, Li, Robinson & Vidal, CVPR 2016): column j solves
    :math:`\min_c \lambda\|c\|_1 + \tfrac{1-\lambda}{2}\|c\|_2^2 + \tfrac\gamma2\|x_j - Xc\|_2^2`, :math:`c_j = 0`,
    by sklearn's ``ElasticNet`` with alpha = 1 / (gamma n) and l1_ratio = lambda (the same objective divided by
    gamma n)."""
    from sklearn.linear_model import ElasticNet

    X = check_design(X)
    n, p = X.shape
    model = ElasticNet(alpha=1.0 / (gamma * n), l1_ratio=lam, fit_intercept=False, max_iter=10000, tol=1e-6)
    C = np.zeros((p, p))
    for j in range(p):
        others = np.delete(np.arange(p), j)
        C[others, j] = model.fit(X[:, others], X[:, j]).coef_
    return C


def ensc(X, K: int, lam: float = 0.9, gamma: float = 50.0) -> np.ndarray:
    """EnSC then the spectral step on |C| + |C|^T; (lambda, gamma) = (0.9, 50) are our choice (not tuned)."""
    X, K = _prepare(X, K)
    return spectral_labels(affinity_from_coefficients(ensc_coefficients(X, lam, gamma)), K)


def _check_positive(name: str, value) -> float:
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return value


def _check_iterations(name: str, value) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def ssc_lambda_z(X, alpha: float) -> float:
    r"""The Lasso weight of SSC, :math:`\lambda_z = \alpha / \mu_z` with
    :math:`\mu_z = \min_i \max_{j \ne i} |x_i^\top x_j|` (Elhamifar & Vidal 2013, Prop. 1 and eq. (14): any
    lambda_z <= 1 / mu_z gives C = 0)."""
    X = check_design(X)
    G = np.abs(X.T @ X)
    np.fill_diagonal(G, 0.0)
    mu_z = float(G.max(axis=1).min())
    if mu_z <= 0:
        raise ValueError("X has a column orthogonal to every other column; SSC's lambda_z = alpha / mu_z is undefined")
    return _check_positive("alpha", alpha) / mu_z


def ssc_admm_coefficients(X, alpha: float = 20.0, tol: float = 2e-4, max_iter: int = 200) -> np.ndarray:
    r"""Sparse subspace clustering, Lasso version without the affine constraint (Elhamifar & Vidal, TPAMI 2013,
    problem (13) with outliers off and the ADMM of their Section 5 / Appendix):

    .. math:: \min_C \|C\|_1 + \tfrac{\lambda_z}{2}\|X - XC\|_F^2\quad \text{s.t. } \operatorname{diag}(C) = 0,

    :math:`\lambda_z` from :func:`ssc_lambda_z`, ADMM penalty rho = alpha (as in the authors' code). Split
    A = C - diag(C): A = (lambda_z X^T X + rho I)^{-1}(lambda_z X^T X + rho C - Delta) (inverse cached from one eigh),
    J = soft(A + Delta / rho, 1 / rho), C = J - diag(J), Delta += rho (A - C). Stops when
    max |A - C| and max |A - A_prev| are both <= ``tol`` or after ``max_iter`` iterations (no error), as in the
    authors' code, whose defaults (2e-4, 200) are ours too. Returns C with a zero diagonal."""
    X = check_design(X)
    tol, max_iter = _check_positive("tol", tol), _check_iterations("max_iter", max_iter)
    lam = ssc_lambda_z(X, alpha)
    rho = float(alpha)
    p = X.shape[1]
    evals, V = np.linalg.eigh(X.T @ X)
    inv = (V / (lam * evals + rho)) @ V.T  # (lambda_z X^T X + rho I)^{-1}, cached
    base = (V * (lam * evals / (lam * evals + rho))) @ V.T  # inv @ (lambda_z X^T X)
    C = np.zeros((p, p))
    Delta = np.zeros((p, p))
    A = np.zeros((p, p))
    for _ in range(max_iter):
        A_prev = A
        A = base + inv @ (rho * C - Delta)
        J = A + Delta / rho
        C = np.sign(J) * np.maximum(np.abs(J) - 1.0 / rho, 0.0)
        np.fill_diagonal(C, 0.0)
        Delta = Delta + rho * (A - C)
        if np.max(np.abs(A - C)) <= tol and np.max(np.abs(A - A_prev)) <= tol:
            break
    return C


def ssc_admm(X, K: int, alpha: float = 20.0) -> np.ndarray:
    """SSC-ADMM then the spectral step on |C| + |C|^T; alpha = 20 is the authors' default (not tuned)."""
    X, K = _prepare(X, K)
    return spectral_labels(affinity_from_coefficients(ssc_admm_coefficients(X, alpha)), K)


def _svt(M: np.ndarray, tau: float) -> np.ndarray:
    """Singular value thresholding: the prox of tau ||.||_* (Cai, Candes & Shen 2010)."""
    U, sigma, Vt = np.linalg.svd(M, full_matrices=False)
    keep = sigma > tau
    return (U[:, keep] * (sigma[keep] - tau)) @ Vt[keep]


def _shrink_columns(M: np.ndarray, tau: float) -> np.ndarray:
    """The prox of tau ||.||_{2,1} (sum of column norms): each column scaled by max(0, 1 - tau / ||m_j||)."""
    norms = np.linalg.norm(M, axis=0)
    scale = np.where(norms > tau, 1.0 - tau / np.where(norms > 0, norms, 1.0), 0.0)
    return M * scale[None, :]


def lrr_coefficients(X, lam: float = 1.0, tol: float = 1e-8, max_iter: int = 2000, mu: float = 1e-6,
                     mu_max: float = 1e10, growth: float = 1.1, return_noise: bool = False):
    r"""Low-rank representation (Liu, Lin, Yan, Sun, Yu & Ma, TPAMI 2013, problem (7) with the
    :math:`\ell_{2,1}` noise term), by their inexact ALM (Algorithm 1):

    .. math:: \min_{Z, E} \|Z\|_* + \lambda\|E\|_{2,1}\quad\text{s.t. } X = XZ + E,

    with J = Z split off: J = SVT_{1/mu}(Z + Y2 / mu); Z = (I + X^T X)^{-1}(X^T X - X^T E + J + (X^T Y1 - Y2) / mu);
    E = column shrinkage_{lam/mu}(X - XZ + Y1 / mu); Y1 += mu (X - XZ - E), Y2 += mu (Z - J);
    mu = min(growth mu, mu_max). Stops when max |X - XZ - E| and max |Z - J| are both <= ``tol``; the defaults
    (mu 1e-6, mu_max 1e10, growth 1.1, tol 1e-8) are the paper's. RuntimeError when ``max_iter`` is reached.
    Returns Z (p, p) (its diagonal is kept, as in LRR), and E with ``return_noise``."""
    X = check_design(X)
    lam, tol = _check_positive("lam", lam), _check_positive("tol", tol)
    mu, mu_max = _check_positive("mu", mu), _check_positive("mu_max", mu_max)
    max_iter = _check_iterations("max_iter", max_iter)
    if not growth >= 1.0:
        raise ValueError(f"growth must be >= 1, got {growth}")
    n, p = X.shape
    G = X.T @ X
    evals, V = np.linalg.eigh(G)
    inv = (V / (evals + 1.0)) @ V.T  # (I + X^T X)^{-1}, cached
    Z, J, E = np.zeros((p, p)), np.zeros((p, p)), np.zeros((n, p))
    Y1, Y2 = np.zeros((n, p)), np.zeros((p, p))
    for it in range(max_iter):
        J = _svt(Z + Y2 / mu, 1.0 / mu)
        Z = inv @ (G - X.T @ E + J + (X.T @ Y1 - Y2) / mu)
        XZ = X @ Z
        E = _shrink_columns(X - XZ + Y1 / mu, lam / mu)
        r1, r2 = X - XZ - E, Z - J
        Y1 = Y1 + mu * r1
        Y2 = Y2 + mu * r2
        mu = min(growth * mu, mu_max)
        if np.max(np.abs(r1)) <= tol and np.max(np.abs(r2)) <= tol:
            return (Z, E) if return_noise else Z
    raise RuntimeError(f"lrr_coefficients: the inexact ALM did not converge in {max_iter} iterations "
                       f"(max |X - XZ - E| {np.max(np.abs(r1)):.3g}, max |Z - J| {np.max(np.abs(r2)):.3g}, tol {tol:g})")


def lrr(X, K: int, lam: float = 1.0) -> np.ndarray:
    """LRR then the spectral step on |Z| + |Z|^T; lam = 1 is our choice (not tuned)."""
    X, K = _prepare(X, K)
    return spectral_labels(affinity_from_coefficients(lrr_coefficients(X, lam)), K)


# --------------------------------------------------------------------------------------- full scale only
def cord_matrix(R) -> np.ndarray:
    r""":math:`\mathrm{CORD}(i, j) = \max_{k \ne i, j} |R_{ik} - R_{jk}|` of a correlation matrix R, row by row
    (no p^3 array)."""
    R = np.asarray(R, dtype=float)
    p = R.shape[0]
    out = np.zeros((p, p))
    for i in range(p):
        diff = np.abs(R[i][None, :] - R)  # (j, k)
        diff[:, i] = 0.0
        diff[np.arange(p), np.arange(p)] = 0.0
        out[i] = diff.max(axis=1)
    np.fill_diagonal(out, 0.0)
    return out


def _acc_cluster(D: np.ndarray, threshold: float) -> np.ndarray:
    """Greedy threshold clustering on a distance D: take the closest remaining pair; if farther than the
    threshold the first is a singleton, else the pair plus every remaining item within the threshold of either."""
    p = D.shape[0]
    labels = -np.ones(p, dtype=int)
    remaining = list(range(p))
    k = 0
    while remaining:
        if len(remaining) == 1:
            labels[remaining[0]] = k
            break
        idx = np.array(remaining)
        sub = D[np.ix_(idx, idx)].copy()
        np.fill_diagonal(sub, np.inf)
        a, b = np.unravel_index(np.argmin(sub), sub.shape)
        i, j = idx[a], idx[b]
        if D[i, j] > threshold:
            members = [i]
        else:
            near = (D[i, idx] <= threshold) | (D[j, idx] <= threshold)
            members = sorted(set(idx[near].tolist()) | {i, j})
        labels[members] = k
        remaining = [r for r in remaining if r not in set(members)]
        k += 1
    return labels


def cord_acc(X, K: int) -> np.ndarray:
    """CORD/ACC with the release's threshold search for K clusters (unit u = log p / p, step h = 0.5,
    start 0.5 u; fewer than K clusters: h /= 10 and threshold -= 9 h u; else threshold += h u)."""
    X, K = _prepare(X, K)
    p = X.shape[1]
    D = cord_matrix(np.corrcoef(X, rowvar=False))
    u, h = np.log(p) / p, 0.5
    threshold = 0.5 * u
    labels = _acc_cluster(D, threshold)
    while labels.max() + 1 != K and h >= 1e-6:
        if labels.max() + 1 < K:
            h /= 10
            threshold -= 9 * h * u
        else:
            threshold += h * u
        labels = _acc_cluster(D, threshold)
    return labels


def mfc(X, K: int, n_rounds: int = 200) -> np.ndarray:
    """Multi-factor clustering by alternation: k-means start (n_init 20); per round a rank-1 SVD factor per
    cluster, reassignment to the cluster whose factor leaves the smallest residual, then one global rank-1
    factor removed from the within-cluster residuals. An empty cluster keeps its previous factor [ours]."""
    from sklearn.cluster import KMeans

    X, K = _prepare(X, K)
    n, p = X.shape
    labels = KMeans(n_clusters=K, n_init=20, random_state=0).fit_predict(X.T)
    factors = np.zeros((n, K))
    global_part = np.zeros_like(X)
    for _ in range(n_rounds):
        Y = X - global_part
        for k in range(K):
            members = labels == k
            if members.any():
                factors[:, k] = np.linalg.svd(Y[:, members], full_matrices=False)[0][:, 0]
        proj = factors.T @ Y  # (K, p): loading of each variable on each unit factor
        resid = np.sum(Y ** 2, axis=0)[None, :] - proj ** 2
        new = np.argmin(resid, axis=0)
        within = X - factors[:, new] * proj[new, np.arange(p)][None, :]
        U, S, Vt = np.linalg.svd(within, full_matrices=False)
        global_part = S[0] * np.outer(U[:, 0], Vt[0])
        if np.array_equal(new, labels):
            break
        labels = new
    return labels.astype(int)


def kmedoids_corr(X, K: int):
    """k-medoids on 1 - corr^2 with the optional ``kmedoids`` package; None when it is not installed."""
    try:
        import kmedoids
    except ImportError:
        return None
    X, K = _prepare(X, K)
    D = 1.0 - np.corrcoef(X, rowvar=False) ** 2
    np.fill_diagonal(D, 0.0)
    return np.asarray(kmedoids.fasterpam(D, K, random_state=0).labels, dtype=int)


def pecok_v_matrix(X, chunk: int = 2_000_000) -> np.ndarray:
    r"""The dissimilarity V of PECOK's :math:`\hat\Gamma` (Bunea, Giraud, Royer & Verzelen, "PECOK: a convex
    optimization approach to variable clustering", Ann. Statist. 2020; arXiv 1606.05100): for a != b,

    .. math:: V(a, b) = \max_{c \ne d \in [p] \setminus \{a, b\}}
              \frac{|\langle X_{:a} - X_{:b},\ X_{:c} - X_{:d}\rangle|}{\|X_{:c} - X_{:d}\|_2}

    with 0/0 = 0 and :math:`X_{:a}` the a-th column (variable) of the n x p matrix X; V(a, a) = inf. Through
    :math:`G = X^\top X`: the numerator is :math:`|M_{bc} - M_{bd}|` with :math:`M_{bc} = G_{ac} - G_{bc}`.
    O(p^4) operations, vectorised over (b, c, d) in chunks of about ``chunk`` numbers. Needs p >= 4."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError(f"X must be a finite 2-D array (n, p), got shape {X.shape}")
    p = X.shape[1]
    if p < 4:
        raise ValueError(f"PECOK's Gamma estimator needs p >= 4 variables, got {p}")
    G = X.T @ X
    dg = np.diag(G)
    dist = np.sqrt(np.maximum(dg[:, None] + dg[None, :] - 2.0 * G, 0.0))
    inv = np.divide(1.0, dist, out=np.zeros_like(dist), where=dist > 0)  # 0/0 = 0: a zero numerator goes with it
    V = np.full((p, p), np.inf)
    step = max(1, chunk // (p * p))
    for a in range(p - 1):
        inv_a = inv.copy()
        inv_a[a, :] = inv_a[:, a] = 0.0  # c = a or d = a: excluded (every ratio is >= 0)
        for start in range(a + 1, p, step):
            bs = np.arange(start, min(p, start + step))
            M = G[a][None, :] - G[bs]  # (len(bs), p): <X_a - X_b, X_c>
            T = np.abs(M[:, :, None] - M[:, None, :]) * inv_a[None, :, :]
            rows = np.arange(bs.size)
            T[rows, bs, :] = 0.0  # c = b
            T[rows, :, bs] = 0.0  # d = b
            V[a, bs] = V[bs, a] = T.max(axis=(1, 2))
    return V


def pecok_gamma_hat(X) -> np.ndarray:
    r"""Diagonal of PECOK's correction :math:`\hat\Gamma` (Bunea et al. 2020, the estimator of the noise
    covariance Gamma):
    :math:`\hat\Gamma_{aa} = \tfrac1n \langle X_{:a} - X_{:ne_1(a)},\ X_{:a} - X_{:ne_2(a)}\rangle` with
    :math:`ne_1(a) = \arg\min_{b \ne a} V(a, b)` and :math:`ne_2(a) = \arg\min_{b \notin \{a, ne_1(a)\}} V(a, b)`
    (:func:`pecok_v_matrix`; ties to the smaller index); :math:`\hat\Gamma_{ab} = 0` for a != b. It estimates the
    diagonal of the noise covariance, the term that biases :math:`\hat\Sigma` in the K-means relaxation."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    V = pecok_v_matrix(X)
    order = np.argsort(V, axis=1, kind="stable")  # V(a, a) = inf comes last
    ne1, ne2 = order[:, 0], order[:, 1]
    return np.einsum("ia,ia->a", X - X[:, ne1], X - X[:, ne2]) / n


def pecok_sdp(S, K: int, *, eps: float = 1e-6, max_iters: int = 100_000) -> np.ndarray:
    r"""PECOK's semidefinite program (Bunea et al. 2020, the PECOK estimator):
    :math:`\hat B = \arg\max_{B \in \mathcal C} \langle S, B\rangle`,
    :math:`\mathcal C = \{B \succeq 0,\ B_{ab} \ge 0,\ B\mathbf 1 = \mathbf 1,\ \operatorname{tr} B = K\}`,
    with :math:`S = \hat\Sigma - \hat\Gamma`. Solved by SCS through :func:`shared.solvers.solve` (first order:
    eps_abs = eps_rel = ``eps``; Clarabel needed about 100 times longer at p = 100). For S = A C A^T with A the
    membership matrix of K groups and C positive definite diagonal, the solution is the normalised membership
    matrix :math:`B^*_{ab} = 1/|G_k|` for a, b in G_k (0 otherwise)."""
    import cvxpy as cp

    from shared.solvers import solve

    S = np.asarray(S, dtype=float)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or not np.all(np.isfinite(S)):
        raise ValueError(f"S must be a finite square matrix, got shape {S.shape}")
    p = S.shape[0]
    K = check_K(K, p)
    S = (S + S.T) / 2.0
    B = cp.Variable((p, p), PSD=True)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(S, B))),
                         [B >= 0, cp.sum(B, axis=1) == 1, cp.trace(B) == K])
    res = solve(problem, solver="SCS", accept_inaccurate=True, eps_abs=eps, eps_rel=eps, max_iters=max_iters)
    if B.value is None:
        raise RuntimeError(f"pecok_sdp: SCS returned status {res.status}")
    return np.asarray(B.value)


def pecok_coefficients(X, K: int, **sdp_options) -> np.ndarray:
    r""":math:`\hat B` of PECOK on :math:`S = X^\top X / n - \hat\Gamma` (X normalised as for every method)."""
    X, K = _prepare(X, K)
    S = X.T @ X / X.shape[0] - np.diag(pecok_gamma_hat(X))
    return pecok_sdp(S, K, **sdp_options)


def pecok(X, K: int) -> np.ndarray:
    """PECOK (Bunea, Giraud, Royer & Verzelen 2020) then the same spectral step as every method, on
    |B_hat| + |B_hat|^T (B_hat is nonnegative up to the solver's tolerance)."""
    X, K = _prepare(X, K)
    return spectral_labels(affinity_from_coefficients(pecok_coefficients(X, K)), K)


BASELINES = {"lasso_cv": lasso_cv_nodewise, "ridge": ridge_nodewise, "corr_spectral": corr_spectral,
             "kmeans": kmeans_variables, "ssc_omp": ssc_omp, "ensc": ensc, "ssc_admm": ssc_admm, "lrr": lrr,
             "cord": cord_acc, "mfc": mfc, "kmedoids": kmedoids_corr}
