"""DREAM-R (our reconstruction of DREAM) and the baselines on a quadratic federation, vectorised over clients.

DREAM-R, round t (clients S_t, weights lam^t, omega^t = A lam^t, control variates c_{i,m}, c_m = mean_i c_{i,m}):

    y^0 = x^t;  g^k = sum_m omega_m (grad f_{i,m}(y^k; xi^k) - c_{i,m} + c_m)
    v^1 = g^0,  v^{k+1} = beta v^k + (1 - beta) g^k  (k >= 1; reset every round);  y^{k+1} = y^k - eta_l v^{k+1}
    c_{i,m} <- (1 - alpha) c_{i,m} + alpha grad f_{i,m}(x^t; xi')          (fresh probe at the anchor)
    x^{t+1} = x^t + eta_g mean_{i in S_t} (y^K_i - x^t);  c_m <- c_m + (1/N) sum_{i in S_t} dc_{i,m}
    lam^{t+1} = argmin_{lam in Delta} 1/2 ||C A lam||^2 + rho/2 ||lam||^2,  C = [c_1 .. c_M]

Baselines: ``dream_no_cv`` (the same loop without -c_{i,m} + c_m in g^k), ``fmgda`` (Yang et al. 2023:
per-task local GD trajectories, server min-norm QP on the averaged per-task updates), ``fedavg_ls`` (local
SGD on sum_m w_m f_{i,m}), ``scaffold_ls`` (SCAFFOLD option I on sum_m w_m f_{i,m}, Karimireddy et al. 2020,
written independently of DREAM), ``fedcmoo`` (Askin et al. 2024, arXiv 2410.16398, without its gradient
compression: the server averages the clients' per-task gradients at x^t, solves the same weight QP on them in
the same round, and the clients run K plain local (S)GD steps on sum_m (A lam)_m f_{i,m}, no control
variates), ``mgda_central`` (x <- x - eta_g K eta_l d*(x) with exact gradients).
Momentum applies to the DREAM variants only; the baselines take plain (S)GD local steps.
"""
from __future__ import annotations

import numpy as np

from shared.fed import FLOAT32_BYTES, sample_clients

from papers.dream.aggregation import correction_matrix, dream_weights
from papers.dream.problems import QuadraticFederation

__all__ = ["METHODS", "LOCAL_MODES", "SERVER_MODES", "run_quadratic", "check_common_args", "run_dream_batched",
           "two_task_min_norm", "rate_step"]

METHODS = ("dream", "dream_no_cv", "fmgda", "fedcmoo", "fedavg_ls", "scaffold_ls", "mgda_central")
LOCAL_MODES = ("weighted", "per_task")
SERVER_MODES = ("mean", "one_client")


def _check_preference(preference, M: int) -> np.ndarray:
    if preference is None:
        return np.full(M, 1.0 / M)
    w = np.asarray(preference, dtype=float)
    if w.shape != (M,):
        raise ValueError(f"preference must have shape ({M},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or abs(w.sum() - 1.0) > 1e-9:
        raise ValueError(f"preference must lie on the simplex (entries >= 0, sum 1 within 1e-9), got {w}")
    return w


def check_common_args(method, methods, *, rounds, local_steps, lr_local, lr_global, momentum, cv_ema, rho,
                      clients_per_round, n_clients, local_mode="weighted") -> int:
    """Validate the arguments shared by the quadratic and MultiDigits runners; returns clients per round."""
    if method not in methods:
        raise ValueError(f"method must be one of {list(methods)}, got {method!r}")
    for name, v in (("rounds", rounds), ("local_steps", local_steps)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    for name, v in (("lr_local", lr_local), ("lr_global", lr_global)):
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    if not (0.0 <= momentum < 1.0):
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    if not (0.0 < cv_ema <= 1.0):
        raise ValueError(f"cv_ema must be in (0, 1], got {cv_ema!r}")
    if not np.isfinite(rho) or rho < 0:
        raise ValueError(f"rho must be a finite number >= 0, got {rho!r}")
    if local_mode not in LOCAL_MODES:
        raise ValueError(f"local_mode must be one of {list(LOCAL_MODES)}, got {local_mode!r}")
    S = n_clients if clients_per_round is None else clients_per_round
    if isinstance(S, bool) or not isinstance(S, (int, np.integer)) or not (1 <= S <= n_clients):
        raise ValueError(f"clients_per_round must be an integer in 1..{n_clients}, got {clients_per_round!r}")
    return int(S)


def _book(clients, down: dict, up: dict) -> tuple[int, int]:
    """Bytes of one round summed over the listed clients: each receives the float32 values counted in
    ``down`` and sends those in ``up`` (the categories of ``shared.fed.ByteLedger``, without the per-client
    bookkeeping, which the MultiDigits runner keeps)."""
    n = len(clients) * FLOAT32_BYTES
    return n * sum(up.values()), n * sum(down.values())


def run_quadratic(problem: QuadraticFederation, method: str = "dream", *, rounds: int, local_steps: int = 10,
                  lr_local: float = 0.02, lr_global: float = 1.0, momentum: float = 0.0, cv_ema: float = 1.0,
                  rho: float = 0.0, correction=None, preference=None, clients_per_round=None,
                  local_mode: str = "weighted", x0=None, seed: int = 0) -> dict:
    """Run one federated method on a :class:`QuadraticFederation` for ``rounds`` rounds (float64).

    Returns a dict of arrays: ``x`` (T+1, d) iterates; ``weights`` (T+1, M) (row t = weights used in round t,
    last row = weights after the last round); ``stationarity`` (T+1,) S(x_t); ``ca_distance`` (T,)
    ||d^t - d*(x^t)|| / ||d*(x^t)|| with d^t = (x^t - x^{t+1}) / (eta_g K eta_l) and d* = G A lam*(G) on exact
    gradients (A = w 1^T for the scalarised baselines; NaN where ||d*|| < 1e-8); ``bytes_up``, ``bytes_down``
    (T,) float32 bytes per round summed over clients. Noise and client sampling use default_rng(seed).
    A NaN/Inf iterate raises FloatingPointError naming the method and the round.
    """
    if not isinstance(problem, QuadraticFederation):
        raise ValueError(f"problem must be a QuadraticFederation, got {type(problem).__name__}")
    N, M, d = problem.n_clients, problem.n_tasks, problem.dim
    S = check_common_args(method, METHODS, rounds=rounds, local_steps=local_steps, lr_local=lr_local,
                          lr_global=lr_global, momentum=momentum, cv_ema=cv_ema, rho=rho,
                          clients_per_round=clients_per_round, n_clients=N, local_mode=local_mode)
    w = _check_preference(preference, M)
    if correction is not None:
        correction_matrix(np.zeros((M, 1)), correction)  # shape / finiteness / name check
    x = np.zeros(d) if x0 is None else np.array(x0, dtype=float)
    if x.shape != (d,) or not np.all(np.isfinite(x)):
        raise ValueError(f"x0 must be a finite array of shape ({d},)")
    rng = np.random.default_rng(seed)
    T, K, eta_l, eta_g, beta, alpha = int(rounds), int(local_steps), float(lr_local), float(lr_global), \
        float(momentum), float(cv_ema)
    step = eta_g * K * eta_l
    ca_corr = np.outer(w, np.ones(M)) if method in ("fedavg_ls", "scaffold_ls") else correction
    lam = np.full(M, 1.0 / M) if method not in ("fedavg_ls", "scaffold_ls") else w.copy()
    c_i = np.zeros((N, M, d))
    c = np.zeros((M, d))
    cs_i = np.zeros((N, d))  # SCAFFOLD-LS control variates (weighted objective)
    cs = np.zeros(d)
    xs, weights, ca = [x.copy()], [], np.full(T, np.nan)
    b_up, b_down = np.zeros(T), np.zeros(T)
    for t in range(T):
        part = sample_clients(N, S, rng)
        n_p = part.size
        if method in ("dream", "dream_no_cv"):
            use_cv = method == "dream"
            weights.append(lam.copy())
            corr = (c[None] - c_i[part]) if use_cv else np.zeros((n_p, M, d))
            if local_mode == "weighted":
                A = correction_matrix(c, correction)
                omega = A @ lam
                corr_w = omega @ corr
                y = np.tile(x, (n_p, 1))
                v = None
                for k in range(K):
                    g = omega @ problem.client_gradients(y, part, rng) + corr_w
                    v = g if k == 0 else beta * v + (1.0 - beta) * g
                    y = y - eta_l * v
                x_new = x + eta_g * (y - x).mean(axis=0)
            else:  # per-task local trajectories, server QP on the averaged per-task updates
                yt = np.tile(x, (n_p, M, 1))
                v = None
                for k in range(K):
                    g = np.stack([problem.client_gradients(yt[:, m], part, rng)[:, m] for m in range(M)], axis=1)
                    g = g + corr
                    v = g if k == 0 else beta * v + (1.0 - beta) * g
                    yt = yt - eta_l * v
                delta = (x[None, None] - yt).mean(axis=0) / (K * eta_l)
                lam_pt, dvec = dream_weights(delta, correction, rho)
                weights[-1] = lam_pt
                x_new = x - step * dvec
            probe = problem.client_gradients(np.tile(x, (n_p, 1)), part, rng)
            dc = alpha * (probe - c_i[part])
            c_i[part] += dc
            c = c + dc.sum(axis=0) / N
            if local_mode == "weighted":
                lam, _ = dream_weights(c, correction, rho)
            b_up[t], b_down[t] = _book(part, {"model": d, "weights": M, "control": M * d},
                                       {"model": d, "control": M * d})
        elif method == "fmgda":
            yt = np.tile(x, (n_p, M, 1))
            for _ in range(K):
                g = np.stack([problem.client_gradients(yt[:, m], part, rng)[:, m] for m in range(M)], axis=1)
                yt = yt - eta_l * g
            delta = (x[None, None] - yt).mean(axis=0) / (K * eta_l)
            lam, dvec = dream_weights(delta, correction, rho)
            weights.append(lam.copy())
            x_new = x - step * dvec
            b_up[t], b_down[t] = _book(part, {"model": d}, {"model": M * d})
        elif method == "fedcmoo":
            # stage 1: per-task gradients at the anchor -> weights of this round; stage 2: local steps
            jac = problem.client_gradients(np.tile(x, (n_p, 1)), part, rng).mean(axis=0)
            lam, _ = dream_weights(jac, correction, rho)
            weights.append(lam.copy())
            omega = correction_matrix(jac, correction) @ lam
            y = np.tile(x, (n_p, 1))
            for _ in range(K):
                y = y - eta_l * (omega @ problem.client_gradients(y, part, rng))
            x_new = x + eta_g * (y - x).mean(axis=0)
            b_up[t], b_down[t] = _book(part, {"model": d, "weights": M}, {"model": d, "jacobian": M * d})
        elif method in ("fedavg_ls", "scaffold_ls"):
            weights.append(w.copy())
            y = np.tile(x, (n_p, 1))
            corr = (cs[None] - cs_i[part]) if method == "scaffold_ls" else 0.0
            for _ in range(K):
                g = w @ problem.client_gradients(y, part, rng) + corr
                y = y - eta_l * g
            x_new = x + eta_g * (y - x).mean(axis=0)
            if method == "scaffold_ls":
                probe = np.einsum("m,smd->sd", w, problem.client_gradients(np.tile(x, (n_p, 1)), part, rng))
                dc = probe - cs_i[part]          # option I: c_i^+ = g_i(x)
                cs_i[part] = probe
                cs = cs + dc.sum(axis=0) / N
                b_up[t], b_down[t] = _book(part, {"model": d, "control": d}, {"model": d, "control": d})
            else:
                b_up[t], b_down[t] = _book(part, {"model": d}, {"model": d})
        else:  # mgda_central
            lam, dstar = dream_weights(problem.task_gradients(x), correction, rho)
            weights.append(lam.copy())
            x_new = x - step * dstar
        if not np.all(np.isfinite(x_new)):
            raise FloatingPointError(f"method {method!r}: non-finite iterate at round {t}")
        _, dstar = dream_weights(problem.task_gradients(x), ca_corr, rho)
        nd = np.linalg.norm(dstar)
        if nd >= 1e-8:
            ca[t] = np.linalg.norm((x - x_new) / step - dstar) / nd
        x = x_new
        xs.append(x.copy())
    if method == "mgda_central":
        lam, _ = dream_weights(problem.task_gradients(x), correction, rho)
    weights.append(lam.copy())
    X = np.array(xs)
    return {
        "x": X,
        "weights": np.array(weights),
        "stationarity": np.array([problem.pareto_stationarity(xx) for xx in X]),
        "ca_distance": ca,
        "bytes_up": b_up,
        "bytes_down": b_down,
    }


# ------------------------------------------------------------------------ batched DREAM-R for the rate sweep
def two_task_min_norm(G: np.ndarray):
    """The M = 2 closed form of :func:`~papers.dream.aggregation.dream_weights` (A = I, rho = 0) for a stack of
    gradient pairs: G (..., 2, d) -> (weights (..., 2), direction (..., d)). lam_1 = clip_[0,1](g_2.(g_2 - g_1)
    / ||g_1 - g_2||^2), (1/2, 1/2) where g_1 = g_2; S = ||direction||^2 is the Pareto stationarity."""
    G = np.asarray(G, dtype=float)
    if G.ndim < 2 or G.shape[-2] != 2:
        raise ValueError(f"G must have shape (..., 2, d), got {G.shape}")
    diff = G[..., 0, :] - G[..., 1, :]
    den = np.einsum("...i,...i->...", diff, diff)
    num = np.einsum("...i,...i->...", G[..., 1, :], -diff)
    safe = np.where(den == 0.0, 1.0, den)
    lam1 = np.where(den == 0.0, 0.5, np.clip(num / safe, 0.0, 1.0))
    lam = np.stack([lam1, 1.0 - lam1], axis=-1)
    return lam, np.einsum("...m,...md->...d", lam, G)


def rate_step(c: float, n_clients, rounds):
    """The step of the O(1/sqrt(NT)) rate: eta = c sqrt(N / T) (the product eta_g K eta_l of one round)."""
    c = float(c)
    if not np.isfinite(c) or c <= 0:
        raise ValueError(f"c must be a finite number > 0, got {c!r}")
    N, T = np.asarray(n_clients, dtype=float), np.asarray(rounds, dtype=float)
    if np.any(N < 1) or np.any(T < 1):
        raise ValueError(f"n_clients and rounds must be >= 1, got {n_clients!r}, {rounds!r}")
    return c * np.sqrt(N / T)


def run_dream_batched(problem, *, rounds: int, lr_local, n_replicas: int, local_steps: int = 10,
                      lr_global: float = 1.0, momentum: float = 0.0, cv_ema: float = 1.0, server: str = "mean",
                      x0=None, seed=0) -> dict:
    """DREAM-R (A = I, rho = 0, full participation, M = 2) on ``n_replicas`` independent copies of one
    two-task federation at once, each with its own local step ``lr_local[b]`` and its own noise.

    The round is :func:`run_quadratic`'s ``method="dream"`` with ``local_mode="weighted"``, vectorised over
    replicas; with one replica and ``server="mean"`` it draws the same random numbers in the same order and
    returns the same iterates (a unit test). ``server="one_client"`` is the control without averaging: the
    server moves to one client's local iterate, x^{t+1} = x^t + eta_g (y^K_{i_t} - x^t) with i_t uniform
    on the clients (drawn per replica after the local steps), so the N clients give no variance reduction;
    every other part (control variates, probes, weights) is unchanged. ``problem`` needs ``n_clients``,
    ``n_tasks`` = 2, ``dim``, ``noise_std``, ``batch_gradients(Y (B, N, d)) -> (B, N, 2, d)`` (exact client gradients). ``seed`` is an int or a numpy Generator.

    Returns ``stationarity`` (T+1, B): S(x_t) on exact gradients per replica, and ``x_last`` (B, d).
    """
    N, M, d = problem.n_clients, problem.n_tasks, problem.dim
    if M != 2:
        raise ValueError(f"run_dream_batched needs n_tasks = 2 (closed-form weights), got {M}")
    if server not in SERVER_MODES:
        raise ValueError(f"server must be one of {list(SERVER_MODES)}, got {server!r}")
    if isinstance(n_replicas, bool) or not isinstance(n_replicas, (int, np.integer)) or n_replicas < 1:
        raise ValueError(f"n_replicas must be an integer >= 1, got {n_replicas!r}")
    B = int(n_replicas)
    eta_l = np.broadcast_to(np.asarray(lr_local, dtype=float), (B,)).copy()
    if not np.all(np.isfinite(eta_l)) or np.any(eta_l <= 0):
        raise ValueError(f"lr_local must be finite and > 0, got {lr_local!r}")
    check_common_args("dream", METHODS, rounds=rounds, local_steps=local_steps, lr_local=float(eta_l.min()),
                      lr_global=lr_global, momentum=momentum, cv_ema=cv_ema, rho=0.0, clients_per_round=None,
                      n_clients=N)
    x = np.zeros((B, d)) if x0 is None else np.array(np.broadcast_to(np.asarray(x0, dtype=float), (B, d)))
    if not np.all(np.isfinite(x)):
        raise ValueError("x0 must be finite")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    T, K, eta_g, beta, alpha = int(rounds), int(local_steps), float(lr_global), float(momentum), float(cv_ema)
    sigma = float(problem.noise_std)
    lr = eta_l[:, None, None]
    c_i = np.zeros((B, N, M, d))
    c = np.zeros((B, M, d))
    lam = np.full((B, M), 1.0 / M)
    rows = np.arange(B)

    def noisy(g):
        return g + sigma * rng.standard_normal(g.shape) if sigma > 0 else g

    def stationarity(G_anchor):   # G_anchor (B, N, M, d): exact client gradients at x -> S(x) per replica
        _, dvec = two_task_min_norm(G_anchor.mean(axis=1))
        return np.einsum("bd,bd->b", dvec, dvec)

    S = np.empty((T + 1, B))
    for t in range(T):
        anchor = np.repeat(x[:, None, :], N, axis=1)
        G_anchor = problem.batch_gradients(anchor)
        S[t] = stationarity(G_anchor)
        corr_w = np.einsum("bm,bnmd->bnd", lam, c[:, None] - c_i)
        y = anchor
        v = None
        for k in range(K):
            g = np.einsum("bm,bnmd->bnd", lam, noisy(problem.batch_gradients(y))) + corr_w
            v = g if k == 0 else beta * v + (1.0 - beta) * g
            y = y - lr * v
        if server == "mean":
            x_new = x + eta_g * (y - x[:, None, :]).mean(axis=1)
        else:
            pick = rng.integers(0, N, size=B)
            x_new = x + eta_g * (y[rows, pick] - x)
        probe = noisy(G_anchor)                      # fresh probe at the anchor x^t
        dc = alpha * (probe - c_i)
        c_i += dc
        c = c + dc.sum(axis=1) / N
        lam, _ = two_task_min_norm(c)
        if not np.all(np.isfinite(x_new)):
            raise FloatingPointError(f"run_dream_batched (server {server!r}): non-finite iterate at round {t}")
        x = x_new
    S[T] = stationarity(problem.batch_gradients(np.repeat(x[:, None, :], N, axis=1)))
    return {"stationarity": S, "x_last": x}
