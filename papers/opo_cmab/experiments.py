"""Experiments of the opo_cmab reproduction (spec "Experiments by scale").

``python -m papers.opo_cmab.experiments NAME --config papers/opo_cmab/config.yaml --scale quick --out DIR`` with
NAME one of ``synthetic`` (regret on the realisable finite class), ``streams`` (progressive-validation loss on
classification streams; with Vowpal Wabbit's SquareCB and RegCB-optimistic) and ``performance`` (rounds per
second, OPO against our SquareCB, and our SquareCB against Vowpal Wabbit's). Each function takes the
params of its config block and returns (tidy rows, metrics); whole curves for the figures go to ``curves.npz``
and wall times to ``timings.json`` (never to metrics.json, which must be byte-identical across runs).
"""
from __future__ import annotations

import math
import time

import numpy as np
from threadpoolctl import threadpool_limits

from shared.experiment import RunContext, main
from shared.results import mean_and_se, write_arrays, write_metrics
from shared.timing import alternating_least_cpu

from papers.opo_cmab.baselines import FALCON, AdaCB, EpsilonGreedy, RegCB, SquareCB, Supervised, Uniform
from papers.opo_cmab.decomposition import bonus_bound, hedge_bound, mean_terms
from papers.opo_cmab.envs import make_env
from papers.opo_cmab.opo import OPOCMAB, check_distribution
from papers.opo_cmab.oracles import FiniteClassOracle, RidgeOracle
from papers.opo_cmab.stats import pairwise_wins

__all__ = ["EXPERIMENTS", "run_bandit", "make_agent", "misspecified_class", "loglog_slope", "synthetic", "streams", "performance",
           "config_label", "jackknife_se", "theory_spec"]


# --------------------------------------------------------------------------------------------- the loop
def run_bandit(env, agent, n_rounds: int, seed: int) -> dict[str, np.ndarray]:
    """Play ``n_rounds`` rounds of ``env`` with ``agent``.

    Round t (0-based here): x_t = env.context(t); (a_t, p_t) = agent.act(x_t, rng); pseudo-regret increment
    sum_a p_t(a) f*(x_t, a) - min_a f*(x_t, a); the loss l_t is drawn and given to the agent (all actions' losses
    for a full-information agent). ``seed`` fixes the action and loss draws (two independent streams).

    Returns "cum_pseudo_regret", "pv_loss" (PV(t) = (1/t) sum_{s<=t} l_s, the loss before the update),
    "actions" and "chosen_prob", each of length ``n_rounds``.
    """
    if isinstance(n_rounds, bool) or int(n_rounds) != n_rounds or n_rounds < 1:
        raise ValueError(f"n_rounds must be a positive integer, got {n_rounds!r}")
    n_rounds = int(n_rounds)
    if env.n_rounds is not None and n_rounds > env.n_rounds:
        raise ValueError(f"n_rounds must be at most the stream's length {env.n_rounds}, got {n_rounds}")
    act_ss, loss_ss = np.random.SeedSequence(seed).spawn(2)
    act_rng, loss_rng = np.random.default_rng(act_ss), np.random.default_rng(loss_ss)
    name = getattr(agent, "name", type(agent).__name__)
    full_info = getattr(agent, "full_information", False)
    regret = np.empty(n_rounds)
    losses = np.empty(n_rounds)
    actions = np.empty(n_rounds, dtype=np.int64)
    chosen = np.empty(n_rounds)
    for t in range(n_rounds):
        x = env.context(t)
        a, p = agent.act(x, act_rng)
        check_distribution(p, t + 1, name)
        f_star = env.expected_losses(t)
        regret[t] = float(p @ f_star - f_star.min())
        if full_info:
            all_losses = np.array([env.sample_loss(t, b, loss_rng) for b in range(env.n_actions)])
            losses[t] = all_losses[a]
            agent.update_full(x, all_losses)
        else:
            losses[t] = env.sample_loss(t, a, loss_rng)
            agent.update(x, a, losses[t])
        actions[t], chosen[t] = a, p[a]
    return {"cum_pseudo_regret": np.cumsum(regret), "pv_loss": np.cumsum(losses) / np.arange(1, n_rounds + 1),
            "actions": actions, "chosen_prob": chosen}


# ------------------------------------------------------------------------------------------- the agents
def config_label(spec: dict) -> str:
    """A stable name of an algorithm configuration, e.g. ``opo_eta10_gamma0.1`` or ``squarecb_gs100``."""
    algo = spec["algo"]
    if algo == "opo":
        return f"opo_eta{spec['eta']:g}_gamma{spec['gamma']:g}"
    if algo in ("squarecb", "falcon"):
        return f"{algo}_gs{spec['gamma_scale']:g}"
    if algo == "regcb":
        return f"regcb_c0{spec['c0']:g}"
    if algo == "adacb":
        return f"adacb_gs{spec['gamma_scale']:g}_c0{spec['c0']:g}"
    if algo == "opo_theory":
        return "opo_theory" + ("_eta0" if spec["eta"] == 0 else "") + ("_misspecified" if spec.get("misspecified")
                                                                         else "")
    return algo


def make_agent(spec: dict, env, oracle_kind: str, oracle_seed: int, lam: float = 1.0):
    """Build the agent of ``spec`` (keys ``algo`` and its hyper-parameters) on a fresh oracle of ``oracle_kind``
    ("finite_class": exact ERM over ``env.thetas``; "ridge": per-action ridge regression)."""
    A = env.n_actions
    algo = spec["algo"]
    if algo == "uniform":
        return Uniform(A)
    if algo == "supervised":
        return Supervised(A, env.context_dim, lam)
    if oracle_kind == "finite_class":
        thetas = env.thetas
        if spec.get("misspecified", False):  # realisability fails (the control of Corollary 4.1)
            thetas = misspecified_class(thetas)
        oracle = FiniteClassOracle(thetas, oracle_seed)
    elif oracle_kind == "ridge":
        oracle = RidgeOracle(env.context_dim, A, lam)
    else:
        raise ValueError(f"oracle must be 'finite_class' or 'ridge', got {oracle_kind!r}")
    if algo in ("opo", "opo_theory"):
        return OPOCMAB(A, spec["eta"], spec["gamma"], oracle)
    if algo == "squarecb":
        return SquareCB(A, oracle, gamma_scale=spec["gamma_scale"], gamma_exp=spec.get("gamma_exp", 0.5))
    if algo == "falcon":
        return FALCON(A, oracle, gamma_scale=spec["gamma_scale"], delta=spec.get("delta", 0.05),
                      log_class_size=spec.get("log_class_size"))
    if algo == "regcb":
        return RegCB(A, oracle, c0=spec["c0"])
    if algo == "adacb":
        return AdaCB(A, oracle, gamma_scale=spec["gamma_scale"], c0=spec["c0"],
                     gamma_exp=spec.get("gamma_exp", 0.5))
    if algo == "greedy":
        return EpsilonGreedy(A, oracle, eps=0.0)
    if algo == "eps_greedy":
        return EpsilonGreedy(A, oracle, eps=spec.get("eps", 0.05))
    raise ValueError(f"unknown algorithm {algo!r}")


MISSPECIFIED_LOGIT_SHIFT = 1.0


def misspecified_class(thetas) -> np.ndarray:
    """The class with every model's logit raised by ``MISSPECIFIED_LOGIT_SHIFT`` on every action (the bias entry,
    the last context coordinate, is 1): f* is no longer in F, and every model errs on every action."""
    shifted = np.array(thetas, dtype=float)
    shifted[..., -1] += MISSPECIFIED_LOGIT_SHIFT
    return shifted


def loglog_slope(t, values) -> float:
    """Least-squares slope of log(values) against log(t)."""
    t, v = np.asarray(t, dtype=float), np.asarray(values, dtype=float)
    if np.any(v <= 0):
        raise ValueError("loglog_slope needs positive values")
    return float(np.polyfit(np.log(t), np.log(v), 1)[0])


def _seed(ctx: RunContext, *names: str) -> int:
    return int(ctx.generator(*names).integers(2 ** 31 - 1))


def _grid(params: dict, family: str) -> list[dict]:
    """Configurations of one algorithm family from the params (RegCB and AdaCB: none when their grid keys
    ``regcb_c0`` / ``adacb_gamma_scale`` and ``adacb_c0`` are absent)."""
    if family == "regcb":
        return [{"algo": "regcb", "c0": float(c)} for c in params.get("regcb_c0", [])]
    if family == "adacb":
        return [{"algo": "adacb", "gamma_scale": float(g), "c0": float(c)}
                for g in params.get("adacb_gamma_scale", []) for c in params.get("adacb_c0", [])]
    if family == "opo":
        return [{"algo": "opo", "eta": float(e), "gamma": float(g)}
                for e in params["opo_eta"] for g in params["opo_gamma"]]
    if family == "opo_nobonus":
        return [{"algo": "opo", "eta": float(e), "gamma": 0.0} for e in params["opo_eta"]]
    if family in ("squarecb", "falcon"):
        return [{"algo": family, "gamma_scale": float(g)} for g in params[f"{family}_gamma_scale"]]
    if family == "eps_greedy":
        return [{"algo": "eps_greedy", "eps": float(params.get("eps", 0.05))}]
    return [{"algo": family}]


# ------------------------------------------------------------------------------------------- synthetic
def _problem_key(p: dict) -> str:
    prefix = "hidden_" if p.get("kind", "perturbed") == "hidden_arm" else ""
    return f"{prefix}F{p['n_models']}_A{p['n_actions']}"


def _env_kwargs(problem: dict) -> dict:
    """make_env keywords of a synthetic problem (class kind and its model parameters)."""
    kw = {"n_models": int(problem["n_models"]), "n_actions": int(problem["n_actions"]),
          "context_dim": int(problem.get("context_dim", 4))}
    if problem.get("kind", "perturbed") != "perturbed":
        kw["kind"] = problem["kind"]
        kw.update({k: float(problem[k]) for k in ("gap", "bad", "jitter", "slope") if k in problem})
    return kw


def theory_spec(n_models: int, n_actions: int, K: int, delta: float) -> dict:
    """The theory tuning [reconstructed; constants 1]: gamma = sqrt(log(|F| K / delta)), eta = sqrt(log|A| / K)."""
    return {"algo": "opo_theory", "eta": math.sqrt(math.log(n_actions) / K),
            "gamma": math.sqrt(math.log(n_models * K / delta))}


def _run_specs(ctx, pkey, problem, specs: dict, K: int, seeds: list[int], role: str, checkpoints, rows, timings,
               decomp: dict | None = None, n_contexts: int = 0):
    """Final-horizon regret curves (seeds, K) of every named spec on the ``role`` ("tune" or "eval") seeds.

    Each seed has its own env (class and contexts), run seed and oracle seed, shared by every spec. With
    ``decomp`` (a dict) and ``n_contexts`` > 0, every OPO spec also records the regret-decomposition terms
    (:func:`_record_decomposition`) into ``decomp[name][term]`` (seeds, checkpoints)."""
    regret = {name: np.empty((len(seeds), K)) for name in specs}
    for i, s in enumerate(seeds):
        env_seed, run_seed = _seed(ctx, pkey, role, "env", str(s)), _seed(ctx, pkey, role, "run", str(s))
        oracle_seed = _seed(ctx, pkey, role, "oracle", str(s))
        for name, spec in specs.items():
            env = make_env("finite_class", env_seed, **_env_kwargs(problem))
            agent = make_agent(spec, env, "finite_class", oracle_seed)
            start = time.perf_counter()
            out = run_bandit(env, agent, K, run_seed)
            timings.setdefault(pkey, {}).setdefault(config_label(spec), []).append(time.perf_counter() - start)
            regret[name][i] = out["cum_pseudo_regret"]
            if decomp is not None and n_contexts > 0 and spec["algo"] in ("opo", "opo_theory"):
                _record_decomposition(decomp, name, spec, env, agent, K, checkpoints, i, len(seeds), n_contexts)
            if role == "eval":
                for c in checkpoints:
                    rows.append({"method": name, "seed": s, "step": c, "metric": "cum_pseudo_regret",
                                 "value": float(out["cum_pseudo_regret"][c - 1]), "problem": pkey})
    return regret


def _record_decomposition(decomp, name, spec, env, agent, K, checkpoints, i, n_seeds, n_contexts):
    """Cumulative decomposition terms (:mod:`papers.opo_cmab.decomposition`) of one OPO run at the checkpoints,
    averaged over the ``n_contexts`` contexts that follow the run's K (fresh draws from D the run never saw)."""
    contexts = np.array([env.context(K + m) for m in range(n_contexts)])
    f_star = np.array([env.expected_losses(K + m) for m in range(n_contexts)])
    terms = mean_terms(agent.oracle, contexts, f_star, K, spec["eta"], spec["gamma"])
    entry = decomp.setdefault(name, {"eta": float(spec["eta"]), "gamma": float(spec["gamma"])})
    idx = [c - 1 for c in checkpoints]
    for term, per_round in terms.items():
        values = np.cumsum(per_round) if term != "past_sq_err" else per_round  # Cor 4.1's quantity is per k
        entry.setdefault(term, np.empty((n_seeds, len(idx))))[i] = values[idx]


def synthetic(params: dict, ctx: RunContext):
    """Pseudo-regret on realisable finite classes, with hyper-parameters tuned on held-out seeds.

    For each problem: (1) tuning: every configuration of the OPO grid, of OPO without bonus (gamma = 0, each
    eta), of SquareCB, of FALCON, of RegCB (``regcb_c0``) and of AdaCB (``adacb_gamma_scale`` x ``adacb_c0``)
    runs on ``tune_seeds`` seeds; the configuration with the smallest mean final regret is selected per family.
    (2) evaluation on ``eval_seeds`` other seeds (other envs): the tuned configurations (RegCB and AdaCB
    included), OPO with the tuned eta and the bonus removed (gamma = 0, the negative control), the theory
    tuning with and without its bonus, greedy, epsilon-greedy and uniform. Problems with ``eval_only: true``
    skip the tuning and evaluate only ``eval_methods`` (theory tuning, no grid); a problem may set its own
    ``eval_seeds``.

    Metrics under ``<problem>``: ``tuning.{final_regret, tuned}``; per evaluated method ``final`` (mean),
    ``per_seed.final/slope/normalised.<method>`` (lists over the eval seeds; slope of log R(t) on log t over the
    checkpoints; normalised = R(K) / sqrt(K |A| ln |F|); late_rate = (R(K) - R(K/2)) / (K/2), the mean regret
    per round over the second half, which stays bounded away from 0 exactly when the learner has locked in),
    ``per_seed.minus_greedy.<method>``, ``per_seed.ratio_to_{squarecb,regcb,adacb}.<method>``,
    ``per_seed.opo_minus.<baseline>``
    (R_OPO(K) - R_baseline(K) for the tuned SquareCB, FALCON, RegCB and AdaCB) and
    ``per_seed.bonus_gain.<method>`` (R without the bonus - R with it; paired per seed), the theory tuning, and
    ``scaling`` (:func:`scaling_exponents` of the theory-tuned OPO) and ``scaling_controls.uniform`` (the same fit
    for uniform play, on the problems that evaluate it).

    With ``decomposition_contexts`` > 0 every evaluated OPO run also records the terms of the regret decomposition
    on that many held-out contexts (:func:`_decomposition_metrics`: ``<problem>.decomposition`` and per-seed lists);
    a problem with ``decomposition_controls: true`` also evaluates their controls, the theory tuning with eta = 0
    (``opo_theory_eta0``) and on the misspecified class (``opo_theory_misspecified``, :func:`misspecified_class`).
    """
    K = int(params["K"])
    checkpoints = [int(c) for c in params["checkpoints"]]
    if max(checkpoints) != K:
        raise ValueError(f"the last checkpoint must be K={K}, got {checkpoints}")
    n_tune, n_eval = int(params["tune_seeds"]), int(params["eval_seeds"])
    delta = float(params.get("delta", 0.05))
    rows, metrics, curves, timings = [], {"K": K, "checkpoints": checkpoints, "tune_seeds": n_tune,
                                          "eval_seeds": n_eval}, {}, {}
    with threadpool_limits(1):
        problems = params["problems"]
        for problem in ctx.progress(problems, total=len(problems), what="problems"):
            pkey = _problem_key(problem)
            n_models, A = int(problem["n_models"]), int(problem["n_actions"])
            theory = theory_spec(n_models, A, K, delta)
            block = {"theory": {"eta": theory["eta"], "gamma": theory["gamma"]}, "n_models": n_models,
                     "n_actions": A}
            evals = {"greedy": {"algo": "greedy"}, "uniform": {"algo": "uniform"}}
            if params.get("theory_tuned", True):
                evals.update(opo_theory=theory, opo_theory_nobonus={**theory, "gamma": 0.0})
                if problem.get("decomposition_controls", False):  # controls of the decomposition claims
                    evals.update(opo_theory_eta0={**theory, "eta": 0.0},
                                 opo_theory_misspecified={**theory, "misspecified": True})
            if not problem.get("eval_only", False):
                families = {fam: {config_label(s): s for s in _grid(params, fam)}
                            for fam in ("opo", "opo_nobonus", "squarecb", "falcon", "regcb", "adacb")
                            if _grid(params, fam)}
                grid = {lab: spec for fam in families.values() for lab, spec in fam.items()}
                n_tune_p = int(problem.get("tune_seeds", n_tune))
                tune = _run_specs(ctx, pkey, problem, grid, K, list(range(n_tune_p)), "tune", checkpoints, rows,
                                  timings)
                final = {lab: float(r[:, -1].mean()) for lab, r in tune.items()}
                tuned = {fam: min(labs, key=lambda lab: (final[lab], lab)) for fam, labs in families.items()}
                block["tuning"] = {"final_regret": final, "tuned": tuned}
                opo = grid[tuned["opo"]]
                evals.update({"opo_tuned": opo, "opo_tuned_nobonus": {**opo, "gamma": 0.0},
                              "opo_nobonus_tuned": grid[tuned["opo_nobonus"]],
                              "squarecb_tuned": grid[tuned["squarecb"]], "falcon_tuned": grid[tuned["falcon"]],
                              "eps_greedy": {"algo": "eps_greedy", "eps": float(params.get("eps", 0.05))}})
                evals.update({f"{fam}_tuned": grid[tuned[fam]] for fam in ("regcb", "adacb") if fam in tuned})
                block["tuning"]["seeds"] = n_tune_p
                ctx.log(f"{pkey}: tuned on {n_tune_p} held-out seeds: {tuned}")
            evals = {k: v for k, v in evals.items() if k in problem.get("eval_methods", evals)}
            seeds = list(range(int(problem.get("eval_seeds", n_eval))))
            decomp = {}
            regret = _run_specs(ctx, pkey, problem, evals, K, seeds, "eval", checkpoints, rows, timings,
                                decomp, int(params.get("decomposition_contexts", 0)))
            block.update(_eval_metrics(regret, checkpoints, n_models, A))
            if decomp:
                block["decomposition"] = _decomposition_metrics(decomp, checkpoints, n_models, A, delta)
                for metric, by_method in block["decomposition"].pop("per_seed").items():
                    block["per_seed"][metric] = by_method
            metrics[pkey] = block
            for name, r in regret.items():
                curves[f"{pkey}__{name}"] = r.mean(axis=0)
                curves[f"{pkey}__{name}__se"] = _se_curve(r)
            ctx.log(f"{pkey}: evaluated {len(evals)} methods on {len(seeds)} seeds, K={K}")
    metrics["scaling"] = scaling_exponents(metrics, params["problems"], "opo_theory", K)
    # the same fit for uniform play (evaluated where a problem's eval_methods list it): the control of
    # scaling-actions, and the reference for why scaling-classes has none
    metrics["scaling_controls"] = {"uniform": scaling_exponents(metrics, params["problems"], "uniform", K)}
    write_arrays(ctx.out_dir / "curves.npz", **curves)
    rps = {p: {lab: K * len(v) / sum(v) for lab, v in d.items()} for p, d in timings.items()}
    write_metrics({"rounds_per_second": rps}, ctx.out_dir / "timings.json")
    return rows, metrics


def _decomposition_metrics(decomp: dict, checkpoints, n_models: int, A: int, delta: float) -> dict:
    """Summaries of the recorded decomposition terms, per evaluated OPO method.

    Per-seed lists (under ``per_seed``, moved into the problem's per_seed by the caller):
    ``subopt_slope`` (slope of log P(k) on log k over the checkpoints, P the cumulative policy-suboptimality
    term; Lemma 4.4 gives O(sqrt(K log|A|))), ``subopt_hedge_ratio`` (P(K) / (log|A| / eta + eta K / 2), the
    exponential-weights bound; at most 1 for every correct replay), ``sq_err_slope`` (slope of log Q(k) on log k,
    Q the cumulative on-policy squared error of the oracle; polylogarithmic by Corollary 4.1 when f* is in F),
    ``bonus_ratio`` (accumulated bonus over Lemma 4.2's bound, at most 1), ``past_sq_err_over_log``
    (Corollary 4.1's sum_{i<K} E_{pi_i}(f_hat_K - f*)^2 over log(|F| K / delta)).
    Means over seeds of every term at every checkpoint go to ``at``. The slopes clip values at 1e-12 and mean
    something only where the cumulative term is positive: P(k) can be negative (pi* need not minimise l~_k),
    as it is for the large-eta tuned configurations, which follow the leader of l~.
    """
    K = checkpoints[-1]
    per_seed = {"subopt_slope": {}, "subopt_hedge_ratio": {}, "sq_err_slope": {}, "bonus_ratio": {},
                "past_sq_err_over_log": {}}
    at = {}
    for name, d in decomp.items():
        per_seed["subopt_slope"][name] = [loglog_slope(checkpoints, np.maximum(row, 1e-12)) for row in d["subopt"]]
        per_seed["sq_err_slope"][name] = [loglog_slope(checkpoints, np.maximum(row, 1e-12)) for row in d["sq_err"]]
        if d["eta"] > 0:
            per_seed["subopt_hedge_ratio"][name] = (d["subopt"][:, -1] / hedge_bound(K, A, d["eta"])).tolist()
        if d["gamma"] > 0:
            per_seed["bonus_ratio"][name] = (d["bonus"][:, -1] / bonus_bound(K, A, d["gamma"])).tolist()
        per_seed["past_sq_err_over_log"][name] = (d["past_sq_err"][:, -1]
                                                  / math.log(max(n_models, 2) * K / delta)).tolist()
        at[name] = {term: {str(c): float(v) for c, v in zip(checkpoints, d[term].mean(axis=0))}
                    for term in d if term not in ("eta", "gamma")}
    return {"per_seed": per_seed, "at": at, "normaliser_sqrt_K_logA": math.sqrt(K * math.log(A))}


def _se_curve(r: np.ndarray) -> np.ndarray:
    """Standard error of the mean over the rows (seeds) at every round (zeros with one row)."""
    if r.shape[0] < 2:
        return np.zeros(r.shape[1])
    return r.std(axis=0, ddof=1) / math.sqrt(r.shape[0])


def scaling_exponents(metrics: dict, problems: list[dict], method: str, K: int) -> dict | None:
    r"""Exponents of the final regret in |A| and in log|F| over the hidden-arm problems that ran ``method``.

    For replicate i (the i-th evaluation seed of every problem, i < the smallest seed count) least squares of
    :math:`\log R_i(K) = c + \beta_A \log|A| + \beta_F \log\log|F|`; the bound
    :math:`\tilde O(\sqrt{K|A|\log|F|})` has exponent 1/2 in both. Returns per-replicate lists
    ``beta_A``, ``beta_logF`` (None with fewer than 4 problems or fewer than 2 values of either size).
    """
    cells = [(int(p["n_actions"]), int(p["n_models"]), metrics[_problem_key(p)]["per_seed"]["final"][method])
             for p in problems if p.get("kind") == "hidden_arm" and method in metrics[_problem_key(p)]["final"]]
    if len(cells) < 4 or len({a for a, _, _ in cells}) < 2 or len({f for _, f, _ in cells}) < 2:
        return None
    n_rep = min(len(v) for *_, v in cells)
    design = np.array([[1.0, math.log(a), math.log(math.log(f))] for a, f, _ in cells])
    betas = [np.linalg.lstsq(design, np.log([max(v[i], 1e-12) for *_, v in cells]), rcond=None)[0]
             for i in range(n_rep)]
    return {"method": method, "K": K, "cells": [[a, f] for a, f, _ in cells], "replicates": n_rep,
            "beta_A": [float(b[1]) for b in betas], "beta_logF": [float(b[2]) for b in betas]}


def jackknife_se(statistic, n: int) -> float:
    """Leave-one-seed-out jackknife standard error of ``statistic(index array)`` over ``n`` seeds (0 if n < 2)."""
    if n < 2:
        return 0.0
    vals = np.array([statistic(np.delete(np.arange(n), i)) for i in range(n)])
    return float(math.sqrt((n - 1) / n * np.sum((vals - vals.mean()) ** 2)))


def _eval_metrics(regret: dict, checkpoints, n_models: int, A: int) -> dict:
    """Per-seed lists and means of the evaluation runs (see :func:`synthetic`)."""
    K = checkpoints[-1]
    idx = [c - 1 for c in checkpoints]
    scale = math.sqrt(K * A * math.log(n_models)) if n_models > 1 else math.sqrt(K * A)
    final = {name: r[:, -1] for name, r in regret.items()}
    half = K // 2
    per_seed = {"final": {n: v.tolist() for n, v in final.items()},
                "late_rate": {n: ((r[:, -1] - r[:, half - 1]) / (K - half)).tolist() for n, r in regret.items()},
                "slope": {n: [loglog_slope(checkpoints, np.maximum(row[idx], 1e-12)) for row in r]
                          for n, r in regret.items()},
                "normalised": {n: (v / scale).tolist() for n, v in final.items()}}
    if "greedy" in final:
        per_seed["minus_greedy"] = {n: (v - final["greedy"]).tolist() for n, v in final.items() if n != "greedy"}
    if "opo_tuned" in final:
        per_seed["opo_minus"] = {n: (final["opo_tuned"] - final[n]).tolist()
                                 for n in ("squarecb_tuned", "falcon_tuned", "regcb_tuned", "adacb_tuned")
                                 if n in final}
    for base in ("squarecb", "regcb", "adacb"):
        if f"{base}_tuned" in final:
            per_seed[f"ratio_to_{base}"] = {n: (v / np.maximum(final[f"{base}_tuned"], 1e-12)).tolist()
                                            for n, v in final.items() if n != f"{base}_tuned"}
    out = {"final": {n: float(v.mean()) for n, v in final.items()},
           "final_se": {n: mean_and_se(v)[1] for n, v in final.items()},
           "slope_of_mean": {n: loglog_slope(checkpoints, np.maximum(r.mean(axis=0)[idx], 1e-12))
                             for n, r in regret.items()},
           "regret_at": {n: {str(c): float(r[:, c - 1].mean()) for c in checkpoints} for n, r in regret.items()},
           "normaliser": scale, "per_seed": per_seed}
    gains = {"opo_tuned": "opo_tuned_nobonus", "opo_theory": "opo_theory_nobonus"}
    per_seed["bonus_gain"] = {n: (final[off] - final[n]).tolist() for n, off in gains.items()
                              if n in final and off in final}
    if "opo_tuned" in final:
        out["bonus_ratio"] = float(final["opo_tuned_nobonus"].mean() / max(final["opo_tuned"].mean(), 1e-12))
    return out


# --------------------------------------------------------------------------------------------- streams
STREAM_FAMILIES = ("opo", "squarecb", "regcb", "adacb", "eps_greedy", "uniform", "supervised", "vw_squarecb",
                   "vw_regcb", "opo_logistic", "squarecb_logistic")
STREAM_COMPARED = ("eps_greedy", "squarecb", "regcb", "adacb", "vw_squarecb", "vw_regcb",
                   "squarecb_logistic")  # OPO's comparators
LOGISTIC_FAMILIES = {"opo_logistic": "opo", "squarecb_logistic": "squarecb"}   # on the online logistic oracle


def _stream_grid(params: dict, family: str) -> list[dict]:
    """Configurations of one stream family: :func:`_grid`, Vowpal Wabbit's explorers
    (:mod:`papers.opo_cmab.vw_baselines`) from ``vw_squarecb_gamma_scale`` and ``vw_regcb_mellowness``, and OPO and
    SquareCB on the online logistic oracle (``opo_logistic``, ``squarecb_logistic``: their own grid times the
    learning rates ``logistic_lr``); none when the key is absent."""
    if family in LOGISTIC_FAMILIES:
        return [{**spec, "oracle": "logistic", "lr": float(lr)}
                for spec in _grid(params, LOGISTIC_FAMILIES[family]) for lr in params.get("logistic_lr", [])]
    if family == "vw_squarecb":
        return [{"algo": "vw_squarecb", "gamma_scale": float(g)} for g in params.get("vw_squarecb_gamma_scale", [])]
    if family == "vw_regcb":
        return [{"algo": "vw_regcb", "c0": float(c)} for c in params.get("vw_regcb_mellowness", [])]
    return _grid(params, family)


def _stream_label(spec: dict) -> str:
    """:func:`config_label`, ``vw_squarecb_gs<g>`` / ``vw_regcb_mellow<c0>`` for Vowpal Wabbit's explorers, and
    ``<label>_logistic_lr<lr>`` on the online logistic oracle."""
    if spec.get("oracle") == "logistic":
        return f"{config_label(spec)}_logistic_lr{spec['lr']:g}"
    if spec["algo"] == "vw_squarecb":
        return f"vw_squarecb_gs{spec['gamma_scale']:g}"
    if spec["algo"] == "vw_regcb":
        return f"vw_regcb_mellow{spec['c0']:g}"
    return config_label(spec)


def _any_agent(spec: dict, env, oracle_kind: str = "ridge", oracle_seed: int = 0, lam: float = 1.0):
    """The agent of ``spec``: Vowpal Wabbit's (``vw_squarecb`` / ``vw_regcb``, its own online learner, VW's random
    seed ``oracle_seed``), OPO or SquareCB on a fresh online logistic oracle (``spec["oracle"] == "logistic"``,
    learning rate ``spec["lr"]``), or ours on a fresh oracle of ``oracle_kind`` (:func:`make_agent`)."""
    if spec["algo"] in ("vw_squarecb", "vw_regcb"):
        from papers.opo_cmab.vw_baselines import make_vw_agent
        return make_vw_agent(spec, env, seed=oracle_seed)
    if spec.get("oracle") == "logistic":
        from papers.opo_cmab.oracles import OnlineLogisticOracle
        oracle = OnlineLogisticOracle(env.context_dim, env.n_actions, spec["lr"])
        if spec["algo"] == "opo":
            return OPOCMAB(env.n_actions, spec["eta"], spec["gamma"], oracle)
        if spec["algo"] == "squarecb":
            return SquareCB(env.n_actions, oracle, gamma_scale=spec["gamma_scale"])
        raise ValueError(f"the online logistic oracle runs OPO and SquareCB only, got {spec['algo']!r}")
    return make_agent(spec, env, oracle_kind, oracle_seed, lam)


def streams(params: dict, ctx: RunContext):
    """Progressive-validation loss on the classification streams, ridge oracle. Tuned per stream on
    ``tune_shuffles`` held-out row orders (smallest mean final PV), then evaluated on ``shuffles`` other orders.

    Metrics under ``streams.<name>``: ``tuning.final_pv.<config>``, ``tuned.<family>``, ``pv.<family>`` (tuned,
    mean over the evaluation shuffles), ``pv_minus_supervised.<family>``, ``per_shuffle.<family>``, ``wins``
    (significance test). Summaries over streams, each with a per-shuffle list ``by_shuffle`` (the claims' samples):
    ``gap_uniform`` (min over streams of PV_uniform - PV_OPO), ``diff_eps_greedy``, ``diff_squarecb``,
    ``diff_regcb`` and ``diff_adacb`` (mean over streams of PV_OPO - PV_other, for the baselines that ran);
    ``control.uniform.*`` the same with uniform play in place of OPO. RegCB (grid ``regcb_c0``) and AdaCB (grid
    ``adacb_gamma_scale`` x ``adacb_c0``) are tuned like OPO and SquareCB, and so are Vowpal Wabbit's SquareCB
    (``vw_squarecb_gamma_scale``) and RegCB-optimistic (``vw_regcb_mellowness``), which run VW's own online learner
    on the same row orders and action and loss draws (:mod:`papers.opo_cmab.vw_baselines`; ``diff_vw_squarecb``,
    ``diff_vw_regcb``). OPO and SquareCB also run on the online logistic oracle, the learner of the paper's runs
    (``logistic_lr`` tuned with the other hyper-parameters); ``logistic`` holds the summaries with OPO-logistic as
    the learner (``logistic.gap_uniform``, ``logistic.diff_squarecb_logistic``, ...).
    """
    names, n_shuffles, lam = list(params["streams"]), int(params["shuffles"]), float(params.get("lam", 1.0))
    n_tune = int(params.get("tune_shuffles", 0))
    rows, per_stream, curves, timings = [], {}, {}, {}
    by_family = {fam: {_stream_label(s): s for s in _stream_grid(params, fam)} for fam in STREAM_FAMILIES
                 if _stream_grid(params, fam)}

    def play(name, spec, role, sh):
        env_seed, run_seed = _seed(ctx, name, role, "shuffle", str(sh)), _seed(ctx, name, role, "run", str(sh))
        env = make_env(name, env_seed)
        agent = _any_agent(spec, env, lam=lam)
        start = time.perf_counter()
        out = run_bandit(env, agent, env.n_rounds, run_seed)
        lab = _stream_label(spec)
        timings.setdefault(name, {}).setdefault(lab, [0.0, 0])
        timings[name][lab][0] += time.perf_counter() - start
        timings[name][lab][1] += env.n_rounds
        if hasattr(agent, "close"):
            agent.close()
        return env.n_rounds, out["pv_loss"]

    with threadpool_limits(1):
        for name in ctx.progress(names, total=len(names), what="data sets"):
            tuning = {}
            if n_tune:
                for fam, specs in by_family.items():
                    for lab, spec in specs.items():
                        tuning[lab] = float(np.mean([play(name, spec, "tune", sh)[1][-1] for sh in range(n_tune)]))
                tuned = {fam: min(specs, key=lambda lab: (tuning[lab], lab)) for fam, specs in by_family.items()}
            else:
                tuned = {fam: min(specs) for fam, specs in by_family.items()}
            final, pv_all = {fam: np.empty(n_shuffles) for fam in by_family}, {}
            for sh in range(n_shuffles):
                for fam, lab in tuned.items():
                    n, pv = play(name, by_family[fam][lab], "eval", sh)
                    final[fam][sh] = pv[-1]
                    pv_all.setdefault(fam, []).append(pv)
                    rows.append({"method": lab, "seed": sh, "step": n, "metric": "final_pv", "value": float(pv[-1]),
                                 "stream": name})
            for fam in tuned:
                curves[f"{name}__{fam}"] = np.mean(pv_all[fam], axis=0)
                curves[f"{name}__{fam}__se"] = _se_curve(np.array(pv_all[fam]))
            pv_mean = {fam: float(v.mean()) for fam, v in final.items()}
            wins = pairwise_wins(pv_mean, n)
            per_stream[name] = {
                "n": n, "n_actions": make_env(name, 0).n_actions, "tuning": {"final_pv": tuning, "shuffles": n_tune},
                "tuned": tuned, "pv": pv_mean, "pv_minus_supervised": {f: pv_mean[f] - pv_mean["supervised"]
                                                                        for f in pv_mean},
                "per_shuffle": {fam: [float(v) for v in final[fam]] for fam in tuned},
                "wins": {f"{r['a']}_vs_{r['b']}": r["a_wins"] for r in wins},
                "pval": {f"{r['a']}_vs_{r['b']}": r["pval"] for r in wins},
            }
            ctx.log(f"{name}: {n} rounds, tuned on {n_tune} held-out shuffles ({tuned['opo']}), "
                    f"evaluated on {n_shuffles}")
    metrics = {"streams": per_stream, "shuffles": n_shuffles, "tune_shuffles": n_tune}
    metrics.update(_stream_summaries(per_stream, "opo", n_shuffles))
    if all("opo_logistic" in d["per_shuffle"] for d in per_stream.values()):
        metrics["logistic"] = _stream_summaries(per_stream, "opo_logistic", n_shuffles)
    metrics["control"] = {"uniform": _stream_summaries(per_stream, "uniform", n_shuffles)}
    write_arrays(ctx.out_dir / "curves.npz", **curves)
    rps = {name: {lab: v[1] / v[0] for lab, v in d.items()} for name, d in timings.items()}
    write_metrics({"rounds_per_second": rps}, ctx.out_dir / "timings.json")
    ctx.record(rounds_per_second=rps)
    return rows, metrics


def _stream_summaries(per_stream: dict, learner: str, n_shuffles: int) -> dict:
    """``gap_uniform`` (min over streams of PV_uniform - PV_learner), ``diff_<other>`` for every baseline of
    ``STREAM_COMPARED`` that ran (mean over streams of PV_learner - PV_other): means over the streams of the
    shuffle means, and per-shuffle lists ``by_shuffle`` (shuffle sh of every stream)."""
    def per_shuffle(fn):
        return [fn(sh) for sh in range(n_shuffles)]

    ps = {name: d["per_shuffle"] for name, d in per_stream.items()}
    gaps = {name: d["pv"]["uniform"] - d["pv"][learner] for name, d in per_stream.items()}
    out = {"gap_uniform": {"min": min(gaps.values()), "by_stream": gaps,
                           "by_shuffle": per_shuffle(lambda sh: min(p["uniform"][sh] - p[learner][sh]
                                                                    for p in ps.values()))}}
    for other in (o for o in STREAM_COMPARED if all(o in p for p in ps.values())):
        by_shuffle = per_shuffle(lambda sh: float(np.mean([p[learner][sh] - p[other][sh] for p in ps.values()])))
        mean, se = mean_and_se(by_shuffle)
        out[f"diff_{other}"] = {"mean": mean, "se": se, "by_shuffle": by_shuffle,
                                "by_stream": {nm: d["pv"][learner] - d["pv"][other] for nm, d in per_stream.items()}}
    return out


# ----------------------------------------------------------------------------------------- performance
def _whole_run(env_factory, spec, oracle_kind, n_rounds, run_seed, oracle_seed=0):
    """One run of ``spec`` on a fresh env and agent (:func:`_any_agent`), the agent closed afterwards when it has
    a ``close`` (VW's workspace); returns :func:`run_bandit`'s outputs."""
    env = env_factory()
    agent = _any_agent(spec, env, oracle_kind, oracle_seed)
    try:
        return run_bandit(env, agent, n_rounds, run_seed)
    finally:
        if hasattr(agent, "close"):
            agent.close()


def _timed_run(env_factory, spec, oracle_kind, n_rounds, run_seed, repeats, oracle_seed=0):
    """Median wall time of ``repeats`` whole runs (:func:`_whole_run`: fresh env and agent each), and the last
    run's outputs."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = _whole_run(env_factory, spec, oracle_kind, n_rounds, run_seed, oracle_seed)
        times.append(time.perf_counter() - start)
    return float(np.median(times)), out


def performance(params: dict, ctx: RunContext):
    """Rounds per second of OPO (numba replay), of our SquareCB and of Vowpal Wabbit's SquareCB
    (``--cb_explore_adf --squarecb``, same gamma_scale, VW's own online learner) on the same stream, shuffle,
    action and loss draws, and process (one thread): process-CPU seconds of a whole run, least over ``repeats``
    alternating rounds (:func:`shared.timing.alternating_least_cpu`); the ratios SquareCB / OPO and VW / ours; and
    OPO's time at K and 2K on the synthetic class (median wall time; the replay is O(K^2 A)).

    metrics.json holds only deterministic facts (rounds, final PV of each run, sizes); times go to
    ``timings.json`` and provenance.json (``ctx.record``).
    """
    import vowpalwabbit

    stream, repeats = params.get("stream", "digits"), int(params.get("repeats", 3))
    opo_spec = {"algo": "opo", "eta": float(params["opo_eta"]), "gamma": float(params["opo_gamma"])}
    scb_spec = {"algo": "squarecb", "gamma_scale": float(params["squarecb_gamma_scale"])}
    vw_spec = {"algo": "vw_squarecb", "gamma_scale": float(params["squarecb_gamma_scale"])}
    shuffle_seed, run_seed = _seed(ctx, stream, "shuffle"), _seed(ctx, stream, "run")
    rows, timings, metrics = [], {}, {"stream": stream, "repeats": repeats}
    with threadpool_limits(1):
        warm = make_env("finite_class", 0, n_models=10, n_actions=3)
        run_bandit(warm, make_agent(opo_spec, warm, "finite_class", 0), 20, 0)  # load the compiled replay
        n = make_env(stream, shuffle_seed).n_rounds
        # whole runs (env, agent and n rounds each), least process-CPU seconds over rounds that call the three
        # in turn, so that load from other processes reaches all of them alike (shared.timing)
        specs = {"opo": opo_spec, "squarecb": scb_spec, "vw_squarecb": vw_spec}
        calls = {fam: (lambda spec=spec: _whole_run(lambda: make_env(stream, shuffle_seed), spec, "ridge", n,
                                                     run_seed)) for fam, spec in specs.items()}
        least = alternating_least_cpu(calls, rounds=repeats)["seconds"]
        for fam, spec in specs.items():
            out = calls[fam]()
            timings[f"{stream}_{fam}_seconds"] = least[fam]
            timings[f"{stream}_{fam}_rounds_per_second"] = n / least[fam]
            metrics[f"{fam}_final_pv"] = float(out["pv_loss"][-1])
            rows.append({"method": fam, "seed": 0, "step": n, "metric": "final_pv", "value": float(out["pv_loss"][-1]),
                         "stream": stream})
        metrics["rounds"] = n
        timings["ratio_squarecb_over_opo_rounds_per_second"] = (timings[f"{stream}_squarecb_rounds_per_second"]
                                                                 / timings[f"{stream}_opo_rounds_per_second"])
        timings["ratio_vw_squarecb_over_squarecb_rounds_per_second"] = (
            timings[f"{stream}_vw_squarecb_rounds_per_second"] / timings[f"{stream}_squarecb_rounds_per_second"])
        ctx.log(f"{stream}: OPO {timings[f'{stream}_opo_rounds_per_second']:.0f} rounds/s, SquareCB "
                f"{timings[f'{stream}_squarecb_rounds_per_second']:.0f} rounds/s, VW SquareCB "
                f"{timings[f'{stream}_vw_squarecb_rounds_per_second']:.0f} rounds/s")
        syn = params["synthetic"]
        Ks = [int(k) for k in syn["K"]]
        env_seed = _seed(ctx, "synthetic_scaling")
        for K in Ks:
            wall, out = _timed_run(lambda: make_env("finite_class", env_seed, n_models=int(syn["n_models"]),
                                                    n_actions=int(syn["n_actions"])),
                                   opo_spec, "finite_class", K, run_seed, repeats)
            timings[f"synthetic_opo_K{K}_seconds"] = wall
            metrics[f"synthetic_opo_K{K}_regret"] = float(out["cum_pseudo_regret"][-1])
        timings["synthetic_time_ratio"] = timings[f"synthetic_opo_K{Ks[-1]}_seconds"] / timings[
            f"synthetic_opo_K{Ks[0]}_seconds"]
        metrics["synthetic_K"] = Ks
    from papers.opo_cmab.vw_baselines import vw_arguments
    timings["vowpalwabbit"] = (f"vowpalwabbit {vowpalwabbit.__version__}: "
                               f"{vw_arguments('vw_squarecb', gamma_scale=vw_spec['gamma_scale'])}")
    write_metrics(timings, ctx.out_dir / "timings.json")
    ctx.record(timings=timings)
    return rows, {"performance": metrics}


EXPERIMENTS = {"synthetic": synthetic, "streams": streams, "performance": performance}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
