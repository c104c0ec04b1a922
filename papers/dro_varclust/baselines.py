"""Baselines of the spec, all on the same normalised X (variables in columns) and scored the same way."""
from __future__ import annotations

import numpy as np
from sklearn.model_selection import KFold

from papers.dro_varclust.cluster import affinity_from_coefficients, check_K, spectral_labels
from papers.dro_varclust.data import check_design, normalize_design

__all__ = ["LASSO_GRID", "kmeans_variables", "corr_spectral", "ridge_coefficients", "ridge_nodewise",
           "lasso_coefficients", "lasso_cv_nodewise", "ssc_omp_coefficients", "ssc_omp", "ensc_coefficients", "ensc",
           "cord_matrix", "cord_acc", "mfc", "kmedoids_corr", "BASELINES"]

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


BASELINES = {"lasso_cv": lasso_cv_nodewise, "ridge": ridge_nodewise, "corr_spectral": corr_spectral,
             "kmeans": kmeans_variables, "ssc_omp": ssc_omp, "ensc": ensc, "cord": cord_acc, "mfc": mfc,
             "kmedoids": kmedoids_corr}
