"""Experiments of the opo_cmab reproduction (spec "Experiments by scale").

``python -m papers.opo_cmab.experiments NAME --config papers/opo_cmab/config.yaml --scale quick --out DIR`` with
NAME one of ``synthetic`` (regret on the realisable finite class), ``streams`` (progressive-validation loss on
classification streams) and ``performance`` (rounds per second, OPO against SquareCB). Each function takes the
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

from papers.opo_cmab.baselines import FALCON, EpsilonGreedy, SquareCB, Supervised, Uniform
from papers.opo_cmab.envs import make_env
from papers.opo_cmab.opo import OPOCMAB, check_distribution
from papers.opo_cmab.oracles import FiniteClassOracle, RidgeOracle
from papers.opo_cmab.stats import pairwise_wins

__all__ = ["EXPERIMENTS", "run_bandit", "make_agent", "loglog_slope", "synthetic", "streams", "performance",
           "config_label", "jackknife_se"]


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
    if algo == "opo_theory":
        return "opo_theory"
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
        oracle = FiniteClassOracle(env.thetas, oracle_seed)
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
    if algo == "greedy":
        return EpsilonGreedy(A, oracle, eps=0.0)
    if algo == "eps_greedy":
        return EpsilonGreedy(A, oracle, eps=spec.get("eps", 0.05))
    raise ValueError(f"unknown algorithm {algo!r}")


def loglog_slope(t, values) -> float:
    """Least-squares slope of log(values) against log(t)."""
    t, v = np.asarray(t, dtype=float), np.asarray(values, dtype=float)
    if np.any(v <= 0):
        raise ValueError("loglog_slope needs positive values")
    return float(np.polyfit(np.log(t), np.log(v), 1)[0])


def _seed(ctx: RunContext, *names: str) -> int:
    return int(ctx.generator(*names).integers(2 ** 31 - 1))


def _grid(params: dict, family: str) -> list[dict]:
    """Configurations of one algorithm family from the params."""
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
    return f"F{p['n_models']}_A{p['n_actions']}"


def synthetic(params: dict, ctx: RunContext):
    """Pseudo-regret on the realisable finite class, every algorithm and configuration on the same seeds.

    For each problem (|F|, A) and seed: one env (class and contexts), one run seed shared by all algorithms.
    Anytime regret read at ``checkpoints``. "Tuned" = smallest mean final regret over the seeds (selected on
    the evaluation seeds). Metrics under ``<problem>``: ``final_regret[_se].<config>``, ``tuned.<family>``,
    ``slope.<family>`` (log mean R(t) vs log t over the checkpoints), ``normalised[_se].opo_tuned`` at each
    ``normalise_at`` K (and the max), ``competitive`` (R_OPO / min(R_SquareCB, R_FALCON)), ``bonus_ratio``
    (min over eta of R(gamma = 0) / R(tuned OPO)), and the theory tuning.
    """
    K = int(params["K"])
    checkpoints = [int(c) for c in params["checkpoints"]]
    if max(checkpoints) != K:
        raise ValueError(f"the last checkpoint must be K={K}, got {checkpoints}")
    n_seeds, delta = int(params["seeds"]), float(params.get("delta", 0.05))
    families = ["opo", "opo_nobonus", "squarecb", "falcon", "greedy", "eps_greedy", "uniform"]
    rows, metrics, curves, timings = [], {"K": K, "checkpoints": checkpoints, "seeds": n_seeds}, {}, {}
    with threadpool_limits(1):
        for problem in params["problems"]:
            pkey = _problem_key(problem)
            n_models, A = int(problem["n_models"]), int(problem["n_actions"])
            theory = {"algo": "opo_theory", "eta": math.sqrt(math.log(A) / K),
                      "gamma": math.sqrt(math.log(n_models * K / delta))}
            specs = [s for fam in families for s in _grid(params, fam)]
            if params.get("theory_tuned", True):
                specs.append(theory)
            regret = {config_label(s): np.empty((n_seeds, K)) for s in specs}
            for s in range(n_seeds):
                env_seed = _seed(ctx, pkey, "env", str(s))
                run_seed = _seed(ctx, pkey, "run", str(s))
                oracle_seed = _seed(ctx, pkey, "oracle", str(s))
                for spec in specs:
                    label = config_label(spec)
                    env = make_env("finite_class", env_seed, n_models=n_models, n_actions=A,
                                   context_dim=int(problem.get("context_dim", 4)))
                    agent = make_agent(spec, env, "finite_class", oracle_seed)
                    start = time.perf_counter()
                    out = run_bandit(env, agent, K, run_seed)
                    timings.setdefault(pkey, {}).setdefault(label, []).append(time.perf_counter() - start)
                    regret[label][s] = out["cum_pseudo_regret"]
                    for c in checkpoints:
                        rows.append({"method": label, "seed": s, "step": c, "metric": "cum_pseudo_regret",
                                     "value": float(out["cum_pseudo_regret"][c - 1]), "problem": pkey})
                ctx.log(f"{pkey} seed {s}: {len(specs)} configurations, K={K}")
            metrics[pkey] = _synthetic_metrics(regret, specs, checkpoints, params, n_models, A, theory)
            for label, r in regret.items():
                curves[f"{pkey}__{label}"] = r.mean(axis=0)
    write_arrays(ctx.out_dir / "curves.npz", **curves)
    rps = {p: {lab: K * len(v) / sum(v) for lab, v in d.items()} for p, d in timings.items()}
    write_metrics({"rounds_per_second": rps}, ctx.out_dir / "timings.json")
    return rows, metrics


def jackknife_se(statistic, n: int) -> float:
    """Leave-one-seed-out jackknife standard error of ``statistic(index array)`` over ``n`` seeds (0 if n < 2)."""
    if n < 2:
        return 0.0
    vals = np.array([statistic(np.delete(np.arange(n), i)) for i in range(n)])
    return float(math.sqrt((n - 1) / n * np.sum((vals - vals.mean()) ** 2)))


def _synthetic_metrics(regret, specs, checkpoints, params, n_models, A, theory) -> dict:
    final = {lab: r[:, -1] for lab, r in regret.items()}
    m = {"final_regret": {lab: float(v.mean()) for lab, v in final.items()},
         "final_regret_se": {lab: mean_and_se(v)[1] for lab, v in final.items()},
         "tuned": {}, "slope": {}, "theory": {"eta": theory["eta"], "gamma": theory["gamma"]}}
    by_family = {"opo": [config_label(s) for s in _grid(params, "opo")],
                 "squarecb": [config_label(s) for s in _grid(params, "squarecb")],
                 "falcon": [config_label(s) for s in _grid(params, "falcon")],
                 "greedy": ["greedy"], "eps_greedy": ["eps_greedy"], "uniform": ["uniform"]}
    if "opo_theory" in regret:
        by_family["opo_theory"] = ["opo_theory"]
    tuned = {fam: min(labels, key=lambda lab: (m["final_regret"][lab], lab)) for fam, labels in by_family.items()}
    m["tuned"] = tuned
    idx = [c - 1 for c in checkpoints]
    for fam, lab in tuned.items():
        m["slope"][f"{fam}_tuned" if fam in ("opo", "squarecb", "falcon") else fam] = loglog_slope(
            checkpoints, regret[lab].mean(axis=0)[idx])
    n_seeds = next(iter(regret.values())).shape[0]
    m["slope_se"] = {name: jackknife_se(lambda ix, lab=tuned[fam]: loglog_slope(
        checkpoints, regret[lab][ix].mean(axis=0)[idx]), n_seeds)
        for name, fam in (("opo_tuned", "opo"), ("uniform", "uniform"))}
    opo = regret[tuned["opo"]]
    m["regret_at"] = {f"{fam}_tuned" if fam in ("opo", "squarecb", "falcon") else fam:
                      {str(c): float(regret[lab][:, c - 1].mean()) for c in checkpoints} for fam, lab in tuned.items()}
    norm, norm_se = {}, {}
    for k in [int(k) for k in params.get("normalise_at", [checkpoints[-1]])]:
        scaled = opo[:, k - 1] / math.sqrt(k * A * math.log(n_models))
        norm[str(k)], norm_se[str(k)] = mean_and_se(scaled)
    m["normalised"] = {"opo_tuned": norm, "opo_tuned_se": norm_se, "max": {"opo_tuned": max(norm.values())}}
    best_igw = min(m["final_regret"][tuned["squarecb"]], m["final_regret"][tuned["falcon"]])
    m["competitive"] = {"ratio": m["final_regret"][tuned["opo"]] / best_igw,
                        "ratio_vs_squarecb": m["final_regret"][tuned["opo"]] / m["final_regret"][tuned["squarecb"]],
                        "ratio_vs_falcon": m["final_regret"][tuned["opo"]] / m["final_regret"][tuned["falcon"]],
                        "ratio_vs_greedy": m["final_regret"][tuned["opo"]] / m["final_regret"]["greedy"]}
    igw = (tuned["squarecb"], tuned["falcon"])
    m["competitive"]["ratio_se"] = jackknife_se(
        lambda ix: final[tuned["opo"]][ix].mean() / min(final[lab][ix].mean() for lab in igw), n_seeds)
    nobonus = {config_label(s): m["final_regret"][config_label(s)] for s in _grid(params, "opo_nobonus")}
    ratios = {lab: v / m["final_regret"][tuned["opo"]] for lab, v in nobonus.items()}
    m["bonus"] = {"ratio_min": min(ratios.values()), "ratios": ratios,
                  "best_nobonus": min(nobonus, key=lambda lab: (nobonus[lab], lab)),
                  "ratio_min_se": jackknife_se(lambda ix: min(final[lab][ix].mean() for lab in nobonus)
                                               / final[tuned["opo"]][ix].mean(), n_seeds)}
    return m


# --------------------------------------------------------------------------------------------- streams
STREAM_FAMILIES = ("opo", "squarecb", "eps_greedy", "uniform", "supervised")


def streams(params: dict, ctx: RunContext):
    """Progressive-validation loss on the classification streams, ridge oracle, every configuration on the same
    shuffles. Tuned per stream (smallest mean final PV over shuffles, selected on the same shuffles).

    Metrics under ``streams.<name>``: ``final_pv.<config>``, ``tuned.<family>``, ``pv.<family>`` (tuned, mean over
    shuffles), ``pv_minus_supervised.<family>``, ``wins`` (significance test). Summaries: ``gap_uniform.min``
    (min over streams of PV_uniform - PV_OPO), ``diff_eps_greedy.mean`` and ``diff_squarecb.mean`` (mean over
    streams of PV_OPO - PV_other) with their standard errors over shuffles.
    """
    names, n_shuffles, lam = list(params["streams"]), int(params["shuffles"]), float(params.get("lam", 1.0))
    specs = [s for fam in STREAM_FAMILIES for s in _grid(params, fam)]
    rows, per_stream, curves, timings = [], {}, {}, {}
    by_family = {fam: [config_label(s) for s in _grid(params, fam)] for fam in STREAM_FAMILIES}
    with threadpool_limits(1):
        for name in names:
            final = {config_label(s): np.empty(n_shuffles) for s in specs}
            pv_sum = {}
            for sh in range(n_shuffles):
                env_seed, run_seed = _seed(ctx, name, "shuffle", str(sh)), _seed(ctx, name, "run", str(sh))
                for spec in specs:
                    label = config_label(spec)
                    env = make_env(name, env_seed)
                    agent = make_agent(spec, env, "ridge", 0, lam)
                    start = time.perf_counter()
                    out = run_bandit(env, agent, env.n_rounds, run_seed)
                    elapsed = time.perf_counter() - start
                    timings.setdefault(name, {}).setdefault(label, [0.0, 0])
                    timings[name][label][0] += elapsed
                    timings[name][label][1] += env.n_rounds
                    final[label][sh] = out["pv_loss"][-1]
                    pv_sum[label] = pv_sum.get(label, 0.0) + out["pv_loss"]
                    rows.append({"method": label, "seed": sh, "step": env.n_rounds, "metric": "final_pv",
                                 "value": float(out["pv_loss"][-1]), "stream": name})
            n = env.n_rounds
            tuned = {fam: min(labs, key=lambda lab: (final[lab].mean(), lab)) for fam, labs in by_family.items()}
            for fam, lab in tuned.items():
                curves[f"{name}__{fam}"] = pv_sum[lab] / n_shuffles
            pv = {fam: float(final[lab].mean()) for fam, lab in tuned.items()}
            per_stream[name] = {
                "n": n, "n_actions": env.n_actions, "final_pv": {lab: float(v.mean()) for lab, v in final.items()},
                "tuned": tuned, "pv": pv, "pv_minus_supervised": {f: pv[f] - pv["supervised"] for f in pv},
                "per_shuffle": {fam: [float(v) for v in final[lab]] for fam, lab in tuned.items()},
                "wins": {f"{r['a']}_vs_{r['b']}": r["a_wins"] for r in pairwise_wins(pv, n)},
                "pval": {f"{r['a']}_vs_{r['b']}": r["pval"] for r in pairwise_wins(pv, n)},
            }
            ctx.log(f"{name}: {n} rounds x {n_shuffles} shuffles, {len(specs)} configurations; "
                    f"tuned OPO {tuned['opo']}")
    metrics = {"streams": per_stream, "shuffles": n_shuffles}
    gaps = {name: d["pv"]["uniform"] - d["pv"]["opo"] for name, d in per_stream.items()}
    metrics["gap_uniform"] = {"min": min(gaps.values()), "by_stream": gaps}
    for other in ("eps_greedy", "squarecb"):
        per_shuffle = np.array([[d["per_shuffle"]["opo"][sh] - d["per_shuffle"][other][sh] for d in per_stream.values()]
                                for sh in range(n_shuffles)]).mean(axis=1)
        mean, se = mean_and_se(per_shuffle)
        metrics[f"diff_{other}"] = {"mean": mean, "se": se,
                                    "by_stream": {nm: d["pv"]["opo"] - d["pv"][other] for nm, d in per_stream.items()}}
    write_arrays(ctx.out_dir / "curves.npz", **curves)
    rps = {name: {lab: v[1] / v[0] for lab, v in d.items()} for name, d in timings.items()}
    write_metrics({"rounds_per_second": rps}, ctx.out_dir / "timings.json")
    ctx.record(rounds_per_second=rps)
    return rows, metrics


# ----------------------------------------------------------------------------------------- performance
def _timed_run(env_factory, spec, oracle_kind, n_rounds, run_seed, repeats, oracle_seed=0):
    """Median wall time of ``repeats`` full runs (fresh env and agent each), and the last run's outputs."""
    times, out = [], None
    for _ in range(repeats):
        env = env_factory()
        agent = make_agent(spec, env, oracle_kind, oracle_seed)
        start = time.perf_counter()
        out = run_bandit(env, agent, n_rounds, run_seed)
        times.append(time.perf_counter() - start)
    return float(np.median(times)), out


def performance(params: dict, ctx: RunContext):
    """Rounds per second of OPO (numba replay) and of SquareCB on the same stream, shuffle and process (one
    thread), their ratio, and OPO's time at K and 2K on the synthetic class (the replay is O(K^2 A)).

    metrics.json holds only deterministic facts (rounds, final PV of each run, sizes); times go to
    ``timings.json`` and provenance.json. Vowpal Wabbit is not run here (optional, outside CI).
    """
    stream, repeats = params.get("stream", "digits"), int(params.get("repeats", 3))
    opo_spec = {"algo": "opo", "eta": float(params["opo_eta"]), "gamma": float(params["opo_gamma"])}
    scb_spec = {"algo": "squarecb", "gamma_scale": float(params["squarecb_gamma_scale"])}
    shuffle_seed, run_seed = _seed(ctx, stream, "shuffle"), _seed(ctx, stream, "run")
    rows, timings, metrics = [], {}, {"stream": stream, "repeats": repeats}
    with threadpool_limits(1):
        warm = make_env("finite_class", 0, n_models=10, n_actions=3)
        run_bandit(warm, make_agent(opo_spec, warm, "finite_class", 0), 20, 0)  # load the compiled replay
        n = make_env(stream, shuffle_seed).n_rounds
        for fam, spec in (("opo", opo_spec), ("squarecb", scb_spec)):
            wall, out = _timed_run(lambda: make_env(stream, shuffle_seed), spec, "ridge", n, run_seed, repeats)
            timings[f"{stream}_{fam}_seconds"] = wall
            timings[f"{stream}_{fam}_rounds_per_second"] = n / wall
            metrics[f"{fam}_final_pv"] = float(out["pv_loss"][-1])
            rows.append({"method": fam, "seed": 0, "step": n, "metric": "final_pv", "value": float(out["pv_loss"][-1]),
                         "stream": stream})
        metrics["rounds"] = n
        timings["ratio_squarecb_over_opo_rounds_per_second"] = (timings[f"{stream}_squarecb_rounds_per_second"]
                                                                 / timings[f"{stream}_opo_rounds_per_second"])
        ctx.log(f"{stream}: OPO {timings[f'{stream}_opo_rounds_per_second']:.0f} rounds/s, SquareCB "
                f"{timings[f'{stream}_squarecb_rounds_per_second']:.0f} rounds/s")
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
    try:
        import vowpalwabbit  # noqa: F401
        timings["vowpalwabbit"] = "installed, not run (optional comparison outside CI)"
    except ImportError:
        timings["vowpalwabbit"] = "not installed: our SquareCB is the comparison"
    write_metrics(timings, ctx.out_dir / "timings.json")
    ctx.record(timings=timings)
    return rows, {"performance": metrics}


EXPERIMENTS = {"synthetic": synthetic, "streams": streams, "performance": performance}

if __name__ == "__main__":
    raise SystemExit(main(EXPERIMENTS))
