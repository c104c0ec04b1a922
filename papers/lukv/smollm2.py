"""SmolLM2 experiment (spec "SmolLM2 tasks" and the claims ``80pct`` and ``metric-agnostic``).

One run: load SmolLM2-135M-Instruct offline (``shared.lm.pretrained.load_smollm2``), profile one LU-KV curve
per scorer on a single profiling context with M project-written questions (future window = question +
greedy continuation under the full cache, K tokens), then answer RULER-like items (``smol_tasks``) with the
context compressed before the question arrives, for every method and scorer. Accuracy = exact match of the
greedy (argmax) answer tokens, teacher-forced after the question on the compressed cache.
"""
from __future__ import annotations

import copy

import numpy as np

from shared import seeding
from shared.device import resolve_device
from shared.experiment import RunContext

from papers.lukv.profile import build_budget_curve, kept_per_head, save_curve
from papers.lukv.smol_tasks import PROFILE_QUESTIONS, make_task_batch, profile_story

__all__ = ["smollm2", "answer_positions", "answer_metrics", "summarize_claims", "NULL_CLAIMS"]

NULL_CLAIMS = {"acc_ratio_rho80": None, "scorers_lukv_ge_uniform": None, "scorers_lukv_nll_le_uniform": None,
               "nll_ratio_lukv_uniform": None, "context_len": None, "full_acc_mean": None,
               "control": {"shuffled_heads": {"scorers_lukv_ge_uniform": None, "scorers_lukv_nll_le_uniform": None},
                           "streaming": {"acc_ratio_rho80": None}}}
#: Methods that take a scorer (run once per scorer); the others run once per rho.
SCORER_METHODS = ("uniform", "lukv", "lukv_shuffled", "scorer", "adakv", "criticalkv")


def answer_positions(question_len: int, answer_len: int) -> list[int]:
    """Future-window positions whose logits predict the answer tokens: Q-1 .. Q+A-2 (column t predicts t+1)."""
    if question_len < 1 or answer_len < 1:
        raise ValueError(f"question_len and answer_len must be >= 1, got {question_len} and {answer_len}")
    return list(range(question_len - 1, question_len - 1 + answer_len))


def answer_metrics(logits, answer_ids):
    """Per item: exact match of the argmax answer tokens and the mean answer-token NLL. ``logits`` (n, A, V)
    are the logits at :func:`answer_positions` (row i predicts answer token i)."""
    import torch

    answer_ids = torch.as_tensor(answer_ids, device=logits.device)
    if logits.shape[:2] != answer_ids.shape:
        raise ValueError(f"logits must have shape (n, A, V) = {tuple(answer_ids.shape)} + (V,), got "
                         f"{tuple(logits.shape)}")
    pred_logits = logits.double()
    exact = (pred_logits.argmax(-1) == answer_ids).all(dim=1)
    nll = -torch.log_softmax(pred_logits, -1).gather(-1, answer_ids[..., None])[..., 0].mean(dim=1)
    return exact.double().cpu().numpy(), nll.cpu().numpy()


def summarize_claims(acc: dict, full_acc: dict, primary: str, scorers, rho_key: str = "rho80",
                     nll: dict | None = None) -> dict:
    """``acc[task][scorer][rho_key][method]`` and ``full_acc[task]`` -> the claim metrics.

    acc_ratio_rho80: mean over tasks with full-cache accuracy > 0 of LU-KV accuracy / full accuracy (primary
    scorer); None when no task has a non-zero full-cache accuracy. scorers_lukv_ge_uniform: number of
    scorers whose task-mean LU-KV accuracy is >= the task-mean uniform accuracy; None when every LU-KV and
    uniform accuracy is 0 (a comparison of ties at zero). With ``nll`` (same layout,
    mean answer-token NLL): scorers_lukv_nll_le_uniform (LU-KV task-mean NLL <= uniform's) and
    nll_ratio_lukv_uniform (primary scorer, task-mean NLL LU-KV / uniform)."""
    tasks = list(full_acc)
    if not tasks:
        raise ValueError("full_acc must name at least one task")
    if primary not in scorers:
        raise ValueError(f"primary scorer {primary!r} is not among the scorers {list(scorers)}")
    ratios = [acc[t][primary][rho_key]["lukv"] / full_acc[t] for t in tasks if full_acc[t] > 0]
    mean = lambda table, s, m: float(np.mean([table[t][s][rho_key][m] for t in tasks]))  # noqa: E731
    out = {"acc_ratio_rho80": float(np.mean(ratios)) if ratios else None,
           "scorers_lukv_ge_uniform": sum(int(mean(acc, s, "lukv") >= mean(acc, s, "uniform")) for s in scorers)}
    if all(mean(acc, s, m) == 0 for s in scorers for m in ("lukv", "uniform")):
        out["scorers_lukv_ge_uniform"] = None  # every accuracy is 0: ties at zero say nothing (not evaluated)
    if nll is not None:
        out["scorers_lukv_nll_le_uniform"] = sum(int(mean(nll, s, "lukv") <= mean(nll, s, "uniform"))
                                                 for s in scorers)
        out["nll_ratio_lukv_uniform"] = mean(nll, primary, "lukv") / mean(nll, primary, "uniform")
    return out


def _relabel(table: dict, method: str) -> dict:
    """``table[task][scorer][rho_key][method]`` with the ``lukv`` entry replaced by ``method``'s (the control)."""
    return {t: {s: {k: {**by_m, "lukv": by_m[method]} for k, by_m in by_k.items()} for s, by_k in by_s.items()}
            for t, by_s in table.items()}


def _truncate_layers(model, n_layers: int):
    """Keep the first ``n_layers`` decoder layers (smoke scale only: exercises the code paths quickly)."""
    import torch

    model.model.layers = torch.nn.ModuleList(list(model.model.layers)[:n_layers])
    model.config.num_hidden_layers = n_layers
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = model.config.layer_types[:n_layers]
    return model


def _profile_futures(model, tokenizer, story: np.ndarray, questions, K: int):
    """Future windows: question tokens followed by the greedy continuation under the full cache, K tokens."""
    import torch
    from transformers import DynamicCache

    base = DynamicCache()
    with torch.no_grad():
        dev = model.device
        out = model(input_ids=torch.tensor(story[None], device=dev), past_key_values=base, use_cache=True,
                    logits_to_keep=1)
    futures = []
    for q in questions:
        q_ids = list(tokenizer("\nQuestion: " + q + " Answer:", add_special_tokens=False)["input_ids"])[:K]
        cache = copy.deepcopy(base)
        fut = list(q_ids)
        with torch.no_grad():
            out = model(input_ids=torch.tensor([q_ids], device=dev), past_key_values=cache, use_cache=True,
                        logits_to_keep=1)
            while len(fut) < K:
                tok = int(out.logits[0, -1].argmax())
                fut.append(tok)
                if len(fut) == K:
                    break
                out = model(input_ids=torch.tensor([[tok]], device=dev), past_key_values=cache, use_cache=True)
        futures.append(fut)
    return np.array(futures, dtype=np.int64)


def _profile(model, tokenizer, params: dict, ctx: RunContext):
    import torch

    from papers.lukv.experiments import attention
    from papers.lukv.online import make_scorer, record_scores
    from papers.lukv.oracle import extract_oracle

    prof = params["profile"]
    T, M, K = int(prof["context_len"]), int(prof["n_questions"]), int(prof["future_len"])
    if M > len(PROFILE_QUESTIONS):
        raise ValueError(f"profile.n_questions must be <= {len(PROFILE_QUESTIONS)}, got {M}")
    rng = seeding.generator(ctx.seed, "smollm2", "profile")
    story = profile_story(tokenizer, rng, T)
    with attention(model, "sdpa"):
        futures = _profile_futures(model, tokenizer, story, PROFILE_QUESTIONS[:M], K)
    context = torch.tensor(np.repeat(story[None], M, axis=0), device=model.device)
    fut = torch.tensor(futures, device=model.device)
    with attention(model, "eager"):   # one sample at a time: eager attention maps are (H, T+K, T+K) per layer
        imp = np.concatenate([extract_oracle(model, context[i:i + 1], fut[i:i + 1]) for i in range(M)])
    grid = np.round(np.arange(1, 100) / 100, 2)
    sink, window = int(params.get("sink", 4)), int(params.get("window", 1))
    curves = {}
    with attention(model, "sdpa"):
        for name, spec in params["scorers"].items():
            s = record_scores(model, make_scorer(spec["press"], spec.get("params")), context[:1])[0]
            curves[name] = build_budget_curve(list(imp), [s] * M, rho_grid=grid, sink=sink, window=window)
            save_curve(curves[name], ctx.out_dir / f"curve_{name}.npy", model="SmolLM2-135M-Instruct (Q4_1 GGUF)",
                       scorer=name, scorer_params=spec.get("params", {}), sink=sink, window=window, T=T, M=M, K=K,
                       seed=ctx.seed, story="grammar")
    err = max(float(np.abs(c.astype(np.float64).mean(axis=(1, 2)) - grid).max()) for c in curves.values())
    return curves, {"T": T, "M": M, "K": K, "curve_mean_err_max": err}


def _run_batched(model, new_press, c, f, batch_size: int, positions):
    """``run_compressed`` over chunks of ``batch_size`` items (a fresh press per chunk); the kept fraction is
    the item-weighted mean."""
    import torch

    from papers.lukv.online import run_compressed

    logits, kept = [], 0.0
    for start in range(0, c.shape[0], batch_size):
        lg, kp = run_compressed(model, new_press(), c[start:start + batch_size], f[start:start + batch_size],
                                logit_positions=positions)
        logits.append(lg)
        kept += kp * lg.shape[0]
    return torch.cat(logits), kept / c.shape[0]


def smollm2(params: dict, ctx: RunContext):
    """Profile LU-KV curves on SmolLM2 and compare every method on the RULER-like tasks."""
    import torch

    from shared.lm.pretrained import ModelPackageError, load_smollm2

    from papers.lukv.experiments import _kl, attention
    from papers.lukv.online import make_press, make_scorer

    missing = {"full", "uniform", "lukv"} - set(params["methods"])
    if missing:
        raise ValueError(f"methods must include full, uniform and lukv (the claims compare them); missing "
                         f"{sorted(missing)}")
    if params["primary_scorer"] not in params["scorers"]:
        raise ValueError(f"primary_scorer {params['primary_scorer']!r} is not one of the scorers "
                         f"{sorted(params['scorers'])}")
    if not any(abs(float(r) - 0.8) < 1e-9 for r in params["rhos"]):
        raise ValueError(f"rhos must contain 0.8 (the claims are read at rho = 0.8), got {params['rhos']!r}")
    if params.get("run", True) is False:   # quick: the short-context setting tests nothing the paper claims
        ctx.log("SmolLM2 run switched off at this scale (params.run: false): the claims read null")
        return ([{"method": "none", "seed": 0, "step": 0, "metric": "available", "value": 0.0}],
                {"available": False, "run": False, **NULL_CLAIMS, "context_len": int(params["context_len"])})
    seeding.seed_torch(ctx.seed % (2 ** 31))
    try:
        model, tokenizer = load_smollm2()
    except ModelPackageError as err:  # no weights here: the claims read null ("not evaluated")
        ctx.log(f"SmolLM2 unavailable: {err}")
        ctx.record(smollm2_unavailable=str(err))
        return ([{"method": "none", "seed": 0, "step": 0, "metric": "available", "value": 0.0}],
                {"available": False, **NULL_CLAIMS})
    if params.get("keep_layers"):
        model = _truncate_layers(model, int(params["keep_layers"]))
    model = model.to(resolve_device(params.get("device", "cpu")))   # full scale: "auto" (the GPU when there is one)
    ctx.record(smollm2_device=str(model.device))
    L, G = model.config.num_hidden_layers, model.config.num_key_value_heads
    sink, window = int(params.get("sink", 4)), int(params.get("window", 1))
    curves, prof_metrics = _profile(model, tokenizer, params, ctx)
    shuffle_seed = int(seeding.seed_sequence(ctx.seed, "smollm2", "shuffle").generate_state(1)[0])
    primary = params["primary_scorer"]
    rows, acc, nlls, full_acc, details = [], {}, {}, {}, {}
    tasks = params["tasks"]
    with attention(model, "sdpa"):
        for task, tparams in tasks.items():
            rng = seeding.generator(ctx.seed, "smollm2", task)
            batch = make_task_batch(task, tokenizer, rng, int(params["n_items"]), int(params["context_len"]),
                                    **(tparams or {}))
            c = torch.tensor(batch.context, device=model.device)
            f = torch.tensor(np.concatenate([batch.question, batch.answer], axis=1), device=model.device)
            q_len = batch.question.shape[1]
            bs = int(params.get("batch_size", c.shape[0]))
            pos = answer_positions(q_len, batch.answer.shape[1])
            full_logits, _ = _run_batched(model, lambda: None, c, f, bs, pos)
            ex, nll = answer_metrics(full_logits, batch.answer)
            full_acc[task] = float(ex.mean())
            ctx.log(f"{task}: full-cache accuracy {full_acc[task]:.3f}, answer NLL {float(nll.mean()):.3f}")
            details[task] = {"full": {"acc": float(ex.mean()), "nll": float(nll.mean())}}
            rows.append({"method": "full", "seed": 0, "step": 0, "metric": "accuracy", "value": float(ex.mean()),
                         "task": task, "scorer": ""})
            acc[task] = {}
            for rho in params["rhos"]:
                key = f"rho{int(round(rho * 100))}"
                runs = [(m, s) for s in params["scorers"] for m in params["methods"] if m in SCORER_METHODS]
                runs += [(m, "") for m in params["methods"] if m not in SCORER_METHODS and m != "full"]
                for method, sname in runs:
                    spec = params["scorers"].get(sname, {"press": "knorm"})
                    def new_press():
                        return make_press(method, make_scorer(spec["press"], spec.get("params")), rho,
                                          seq_len=int(c.shape[1]), curve=curves.get(sname), n_layers=L,
                                          n_kv_heads=G, sink=sink, window=window,
                                          pyramid_window=int(params.get("pyramid_window", 64)),
                                          shuffle_seed=shuffle_seed)
                    # kvpress 0.5.5's CriticalAdaKVPress adds head budgets over the batch: one item at a time
                    logits, kept = _run_batched(model, new_press, c, f, 1 if method == "criticalkv" else bs, pos)
                    target = kept_per_head(rho, int(c.shape[1])) / int(c.shape[1])
                    if abs(kept - target) > 1e-12:
                        raise AssertionError(f"{method} ({sname}, rho={rho}) keeps a fraction {kept} of the context "
                                             f"keys, not {target}: the budgets are not matched")
                    ex, nll = answer_metrics(logits, batch.answer)
                    vals = {"acc": float(ex.mean()), "nll": float(nll.mean()), "kl": _kl(full_logits, logits),
                            "kept": kept}
                    if sname:
                        acc[task].setdefault(sname, {}).setdefault(key, {})[method] = vals["acc"]
                        nlls.setdefault(task, {}).setdefault(sname, {}).setdefault(key, {})[method] = vals["nll"]
                    details[task].setdefault(sname or "none", {}).setdefault(key, {})[method] = vals
                    for metric, value in vals.items():
                        rows.append({"method": method, "seed": 0, "step": int(round(rho * 100)), "metric": metric,
                                     "value": value, "task": task, "scorer": sname})
    claims = summarize_claims(acc, full_acc, primary, list(params["scorers"]), nll=nlls)
    control = {"shuffled_heads": dict(NULL_CLAIMS["control"]["shuffled_heads"]), "streaming": {"acc_ratio_rho80": None}}
    if "lukv_shuffled" in params["methods"]:
        shuffled = summarize_claims(_relabel(acc, "lukv_shuffled"), full_acc, primary, list(params["scorers"]),
                                    nll=_relabel(nlls, "lukv_shuffled"))
        control["shuffled_heads"] = {k: shuffled[k] for k in control["shuffled_heads"]}
    if "streaming" in params["methods"]:
        ratios = [details[t]["none"]["rho80"]["streaming"]["acc"] / full_acc[t] for t in tasks if full_acc[t] > 0]
        control["streaming"]["acc_ratio_rho80"] = float(np.mean(ratios)) if ratios else None
    claims["control"] = control
    claims["full_acc_mean"] = float(np.mean(list(full_acc.values())))
    metrics = {"available": True, "L": L, "G": G, "context_len": int(params["context_len"]),
               "n_items": int(params["n_items"]), "profile": prof_metrics, "full_acc": full_acc,
               "tasks": details, **claims}
    return rows, metrics
