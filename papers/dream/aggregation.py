"""The server weight QP of DREAM (reconstructed): regularised min-norm with a task correction matrix.

Given task gradients (or their estimates) g_1..g_M (rows of G, shape (M, d)), a correction matrix A (M x M)
and rho >= 0, the server solves

    lam* = argmin_{lam in Delta_M}  1/2 || G^T A lam ||^2 + rho/2 || lam ||^2
         = argmin_{lam in Delta_M}  1/2 lam^T (A^T G G^T A + rho I) lam,

and moves along d = G^T A lam* = sum_m (A lam*)_m g_m. Special cases: A = I, rho = 0 is MGDA's min-norm
point (Desideri 2012; Sener & Koltun 2018); A = I, rho > 0 the regularised QP of MoCo / MoDo (Fernando et
al. 2023; Chen et al. 2023); A = w 1^T linear scalarisation (d = sum_m w_m g_m for any lam); A = diag(pi)
prioritisation; A = I + B with B_{jm} = -min(0, <g_m, g_j>)/||g_j||^2 (j != m) makes G^T A e_m the
simultaneous PCGrad projection of task m (Yu et al. 2020).
"""
from __future__ import annotations

import numpy as np

__all__ = ["dream_weights", "pcgrad_correction", "project_simplex", "solve_simplex_qp", "correction_matrix"]

_KKT_TOL = 1e-13
_MAX_ITER = 20000


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex (sort-based, exact; Held et al. 1974, Duchi et al.
    2008): P(v) = max(v - tau, 0) with tau chosen so the result sums to one."""
    v = np.asarray(v, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"v must be a non-empty 1-D array, got shape {v.shape}")
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, v.size + 1)
    rho_idx = np.nonzero(u - css / k > 0)[0][-1]
    tau = css[rho_idx] / (rho_idx + 1.0)
    return np.maximum(v - tau, 0.0)


def pcgrad_correction(task_gradients: np.ndarray) -> np.ndarray:
    """PCGrad-A = I + B, B_{jm} = -min(0, <g_m, g_j>) / ||g_j||^2 for j != m (0 where ||g_j|| = 0), B_mm = 0.

    Then G^T A e_m = g_m - sum_{j != m, <g_m, g_j> < 0} <g_m, g_j>/||g_j||^2 g_j, the simultaneous PCGrad
    projection of task m onto the normal planes of the tasks it conflicts with.
    """
    G = np.asarray(task_gradients, dtype=float)
    gram = G @ G.T
    sq = np.diag(gram).copy()
    M = G.shape[0]
    B = np.zeros((M, M))
    for j in range(M):
        if sq[j] <= 0.0:
            continue
        B[j, :] = -np.minimum(0.0, gram[:, j]) / sq[j]
        B[j, j] = 0.0
    return np.eye(M) + B


def _support_solve(Q: np.ndarray, support: np.ndarray):
    """Minimiser of 1/2 lam^T Q lam on {sum lam = 1, lam_j = 0 off ``support``} from the KKT system
    [Q_PP 1; 1^T 0][lam_P; -mu] = [0; 1]; None when singular or when some lam_P < 0."""
    P = np.flatnonzero(support)
    k = P.size
    if k == 0:
        return None
    K = np.zeros((k + 1, k + 1))
    K[:k, :k] = Q[np.ix_(P, P)]
    K[:k, k] = K[k, :k] = 1.0
    rhs = np.zeros(k + 1)
    rhs[k] = 1.0
    try:
        sol = np.linalg.solve(K, rhs)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(sol)) or np.any(sol[:k] < 0):
        return None
    lam = np.zeros(Q.shape[0])
    lam[P] = sol[:k]
    return lam


def solve_simplex_qp(Q: np.ndarray, *, tol: float = _KKT_TOL, max_iter: int = _MAX_ITER) -> np.ndarray:
    """min_{lam in Delta_M} 1/2 lam^T Q lam for a symmetric PSD Q, by accelerated projected gradient (FISTA,
    Beck & Teboulle 2009) with step 1/L, L = lambda_max(Q), the exact simplex projection and a gradient-based
    restart (O'Donoghue & Candes 2015). Stops when the KKT residual L ||lam - P(lam - Q lam / L)|| is at most
    ``tol`` * ||Q||_2, or after ``max_iter`` iterations. Every 5 iterations (and once at the start with full
    support) it tries the exact minimiser on the current support (a KKT linear solve) and returns it when it
    passes the same test. Starts from the uniform weights."""
    Q = np.asarray(Q, dtype=float)
    M = Q.shape[0]
    lam = np.full(M, 1.0 / M)
    if M == 1:
        return np.ones(1)
    L = float(np.linalg.eigvalsh(Q)[-1])
    if L <= 0.0:
        return lam
    thresh = tol * L

    def kkt(v):
        return L * np.linalg.norm(v - project_simplex(v - (Q @ v) / L))

    cand = _support_solve(Q, np.ones(M, dtype=bool))  # interior solution, if there is one
    if cand is not None and kkt(cand) <= thresh:
        return cand
    y, lam_prev, t = lam.copy(), lam.copy(), 1.0
    for it in range(1, max_iter + 1):
        lam_new = project_simplex(y - (Q @ y) / L)
        if it % 5 == 0:  # KKT residual at the new point, then the exact solve on its support
            if kkt(lam_new) <= thresh:
                return lam_new
            cand = _support_solve(Q, lam_new > 0)
            if cand is not None and kkt(cand) <= thresh:
                return cand
        if (y - lam_new) @ (lam_new - lam_prev) > 0:  # restart momentum when it points uphill
            t = 1.0
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        y = lam_new + ((t - 1.0) / t_new) * (lam_new - lam_prev)
        lam_prev, t = lam_new, t_new
    return lam_prev


def _closed_form_two(E: np.ndarray, rho: float) -> np.ndarray:
    """M = 2: lam_1 = clip_[0,1]((e_2.(e_2 - e_1) + rho) / (||e_1 - e_2||^2 + 2 rho)); (1/2, 1/2) if the
    denominator is zero. E holds the effective gradients e_m = (A^T G)_m as rows."""
    diff = E[0] - E[1]
    den = float(diff @ diff) + 2.0 * rho
    if den == 0.0:
        return np.array([0.5, 0.5])
    lam1 = min(1.0, max(0.0, (float(E[1] @ (E[1] - E[0])) + rho) / den))
    return np.array([lam1, 1.0 - lam1])


def correction_matrix(task_gradients: np.ndarray, correction=None) -> np.ndarray:
    """The matrix A for ``correction`` = None (identity), an (M, M) array, or ``"pcgrad"`` (built from the
    gradients); ValueError naming ``correction`` otherwise."""
    M = task_gradients.shape[0]
    if correction is None:
        return np.eye(M)
    if isinstance(correction, str):
        if correction == "pcgrad":
            return pcgrad_correction(task_gradients)
        raise ValueError(f"correction must be None, an (M, M) array or 'pcgrad', got unknown string {correction!r}")
    A = np.asarray(correction, dtype=float)
    if A.shape != (M, M):
        raise ValueError(f"correction must have shape (M, M) = ({M}, {M}), got {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("correction must be finite (found NaN or Inf)")
    return A


def dream_weights(task_gradients, correction=None, rho: float = 0.0):
    """Regularised, corrected min-norm weights of DREAM's server QP.

    lam = argmin_{lam in Delta_M} 1/2 ||G^T A lam||^2 + rho/2 ||lam||^2, direction d = G^T A lam.

    Parameters
    ----------
    task_gradients : array (M, d)
        One row per task (gradient or control-variate estimate g_m).
    correction : None, array (M, M) or "pcgrad"
        Task correction matrix A (None = identity; "pcgrad" = PCGrad-A built from ``task_gradients``).
    rho : float >= 0
        Regulariser; rho > 0 makes lam unique.

    Returns
    -------
    weights : (M,) on the simplex; direction : (d,) = sum_m (A weights)_m g_m.

    M = 1 gives [1.0]; M = 2 uses the closed form on the effective gradients e_m = sum_j A_{jm} g_j; M > 2
    runs :func:`solve_simplex_qp` on the Gram matrix E E^T + rho I (formed once, O(d M^2)).
    Example: g_1 = (3, 0), g_2 = (0, 1), A = I, rho = 0 gives lam = (0.1, 0.9), d = (0.3, 0.9).
    """
    G = np.asarray(task_gradients, dtype=float)
    if G.ndim != 2 or G.shape[0] < 1 or G.shape[1] < 1:
        raise ValueError(f"task_gradients must be a 2-D array (M, d) with M, d >= 1, got shape {G.shape}")
    if not np.all(np.isfinite(G)):
        raise ValueError("task_gradients must be finite (found NaN or Inf)")
    rho = float(rho)
    if not np.isfinite(rho) or rho < 0:
        raise ValueError(f"rho must be a finite number >= 0, got {rho}")
    M = G.shape[0]
    # effective gradients, rows e_m = (G^T A)_{:, m}
    E = G if correction is None else correction_matrix(G, correction).T @ G
    if M == 1:
        lam = np.ones(1)
    elif M == 2:
        lam = _closed_form_two(E, rho)
    else:
        lam = solve_simplex_qp(E @ E.T + rho * np.eye(M))
    return lam, E.T @ lam
