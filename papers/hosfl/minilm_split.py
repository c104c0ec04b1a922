"""A pretrained text client: all-MiniLM-L6-v2 split between a client and a server (official claims 3 and 5 in
miniature).

Split. The pretrained encoder (``shared.lm.load_minilm``: BERT, 6 layers, hidden 384) is cut after layer k:

* client: the embeddings (word, position and token-type tables and their LayerNorm; held and run by the client,
  frozen for every method) and encoder layers 0..k-1, whose parameters theta_c (d_c = 1,774,464 per layer) are
  the ones the methods train;
* server: encoder layers k..k+m-1 (pretrained, trained first-order), masked mean pooling over the tokens and a
  new Linear(384, 2) head. ``client_layers + server_layers = 6`` is the whole encoder; fewer server layers
  truncate it (a reduction for cost).

The cut activation is z = f_c(x; theta_c), the hidden states after layer k (B x L x 384). The server also needs
the attention mask, which the client sends as one length per sentence (padding is on the right). Dropout is off
everywhere (eval mode), so every pass is deterministic.

Methods (the K clients of a round are one stacked batch, as in :mod:`papers.hosfl.pretrained`: every client takes
part every round and the client models are identical after every round):

* ``hosfl``: z under ``no_grad``; the server returns lambda = d loss / d z (loss = mean cross-entropy over the
  K B rows, so lambda carries the 1/K of the client mean); for shared seeds s_1..s_P,
  v_p = <lambda, f_c(x; theta_c + mu u_p) - z> (forward passes only) and
  ghat = (1/(P mu)) sum_p v_p u_p; theta_c <- SGD-momentum step on ghat (:func:`papers.hosfl.hybrid.sgd_momentum_step`).
* ``sfl_fo``: z with autograd; g = J_c^T lambda by backpropagation through the client layers; the same SGD
  step on g; client models averaged every round (tau = 1).
* ``frozen``: the server trained on z of the pretrained client, theta_c never updated.

Directions. u_p is drawn tensor by tensor, in ``parameters()`` order, from one ``torch.Generator`` seeded with
s_p: ``torch.randn(shape, generator=G(s_p))`` for each client tensor in turn (u ~ N(0, I), the law of
:func:`shared.oracles.zeroth_order.perturbation_directions`, whose numpy generator is about ten times slower at
d_c ~ 1.8e6). The flat vector (training) and the in-place, one tensor at a time form (memory probe) are the same
direction.

Client memory (:func:`client_step_inplace`): one client step written the way a memory-constrained client runs it.
HO-SFL perturbs the client's own parameters in place, one tensor at a time (theta += mu u_p, forward under
``no_grad``, theta -= mu u_p; the MeZO way, Malladi et al. 2023), so besides the inference footprint it holds z,
one perturbed output and one tensor-sized direction. SFL keeps the activations autograd saves for the backward and
a d_c-sized gradient.
"""
from __future__ import annotations

import copy
import math
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from shared import seeding
from shared.fed import FLOAT32_BYTES, INT64_BYTES, UINT32_BYTES, draw_batch, partition_iid

from papers.hosfl import hybrid as H
from papers.hosfl.model import module_vector, vector_params
from papers.hosfl.pretrained import check_rates, holdout_rows
from papers.hosfl.training import final_accuracy

__all__ = ["LayerStack", "TextServer", "MiniLMSplit", "client_direction", "iter_direction", "encode_task", "run_text_split",
           "client_step_inplace", "TEXT_METHODS", "MEMORY_METHODS", "text_bytes_per_round", "minilm_task_and_split",
           "minilm_memory_probe", "measure_memory_in_fresh_process", "memory_summary"]

TEXT_METHODS = ("hosfl", "sfl_fo", "frozen")
MEMORY_METHODS = ("hosfl", "sfl_fo", "hosfl_grad", "inference")


class LayerStack(nn.Module):
    """Encoder layers applied in turn: h <- layer(h, mask) (``mask`` as the encoder builds it)."""

    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, h: torch.Tensor, mask) -> torch.Tensor:
        for layer in self.layers:
            h = layer(h, mask)
        return h


class TextServer(nn.Module):
    """Server part: encoder layers, masked mean pooling over the tokens, Linear(hidden, n_classes)."""

    def __init__(self, layers: LayerStack, head: nn.Linear):
        super().__init__()
        self.layers, self.head = layers, head

    def hidden(self, z: torch.Tensor, mask) -> torch.Tensor:
        """The last hidden states (B, L, hidden) from the cut activations z."""
        return self.layers(z, mask)

    def forward(self, z: torch.Tensor, mask, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.hidden(z, mask)
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(dim=1) / m.sum(dim=1).clamp_min(1.0)
        return self.head(pooled)


def _positive_int(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


class MiniLMSplit:
    """all-MiniLM-L6-v2 (``bert``, a ``BertModel`` from ``shared.lm.load_minilm``) cut after ``client_layers``
    layers, with ``server_layers`` more on the server. Holds the pretrained pieces; every run takes fresh copies
    (:meth:`new_server`, ``theta0``)."""

    def __init__(self, bert, client_layers: int, server_layers: int):
        k, m = _positive_int(client_layers, "client_layers"), _positive_int(server_layers, "server_layers")
        n = len(bert.encoder.layer)
        if k + m > n:
            raise ValueError(f"client_layers + server_layers = {k + m} exceeds the encoder's {n} layers")
        self.config = bert.config
        self.hidden_size = int(bert.config.hidden_size)
        self.client_layers, self.server_layers = k, m
        self.embeddings = copy.deepcopy(bert.embeddings).eval()
        self.client = LayerStack([copy.deepcopy(bert.encoder.layer[i]) for i in range(k)]).eval()
        self._server_layers = LayerStack([copy.deepcopy(bert.encoder.layer[i]) for i in range(k, k + m)]).eval()
        for module in (self.embeddings, self.client, self._server_layers):
            for p in module.parameters():
                p.requires_grad_(False)
        self.theta0 = module_vector(self.client)   # float32, parameters() order
        self.shapes = [tuple(p.shape) for p in self.client.parameters()]

    @property
    def client_dim(self) -> int:
        return int(self.theta0.size)

    def new_server(self, n_classes: int, seed) -> TextServer:
        """A copy of the pretrained server layers and a Linear(hidden, n_classes) head (torch default init from
        ``seed``; the global torch RNG is left as it was), all trainable."""
        layers = copy.deepcopy(self._server_layers)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seeding.generator(seed, "server").integers(2 ** 31)))
            head = nn.Linear(self.hidden_size, int(n_classes))
        server = TextServer(layers, head).eval()
        for p in server.parameters():
            p.requires_grad_(True)
        return server

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        """(h0, mask): the frozen embeddings of the tokens and the attention mask in the form the encoder layers
        take (``transformers.masking_utils.create_bidirectional_mask``, as ``BertModel`` builds it)."""
        from transformers.masking_utils import create_bidirectional_mask

        with torch.no_grad():
            h0 = self.embeddings(input_ids=input_ids)
            mask = create_bidirectional_mask(config=self.config, inputs_embeds=h0, attention_mask=attention_mask)
        return h0, mask

    def client_apply(self, h0: torch.Tensor, mask, theta: torch.Tensor) -> torch.Tensor:
        """f_c with the client layers' parameters replaced by the flat vector ``theta``."""
        return functional_call(self.client, vector_params(self.client, theta), (h0, mask))


def iter_direction(seed: int, shapes):
    """u for seed s, one tensor per client parameter drawn lazily: ``torch.randn(shape, generator=G)`` for each
    shape in turn, G a ``torch.Generator`` seeded with s (float32). Lazily, so that a client can apply u one
    tensor at a time without holding all of it (:func:`client_step_inplace`)."""
    gen = torch.Generator().manual_seed(int(seed))
    for shape in shapes:
        yield torch.randn(shape, generator=gen)


def client_direction(seed: int, shapes) -> list[torch.Tensor]:
    """u for seed s as a list of :func:`iter_direction`'s tensors; ``torch.cat([t.reshape(-1) ...])`` is the
    flat u."""
    return list(iter_direction(seed, shapes))


def _flat_direction(seed, shapes) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in client_direction(seed, shapes)])


def encode_task(tokenizer, sentences, labels, max_length: int):
    """Token ids and attention masks (right padding to the longest sentence, at most ``max_length`` tokens) and
    labels as tensors."""
    enc = tokenizer(list(sentences), padding=True, truncation=True, max_length=int(max_length), return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"], torch.as_tensor(np.asarray(labels), dtype=torch.int64)


def text_bytes_per_round(method: str, *, batch_size: int, seq_len: int, hidden: int, client_dim: int, P: int) -> dict:
    """Bytes per client and round on the wire (float32 = 4 B, int64 = 8 B, seeds uint32 = 4 B): cut activations
    B L hidden floats up, one length and one label per sentence up; lambda down (HO-SFL, SFL); HO-SFL P scalars up,
    P scalars and P seeds down; SFL the client model up and down (FedAvg every round)."""
    if method not in TEXT_METHODS:
        raise ValueError(f"method must be one of {list(TEXT_METHODS)}, got {method!r}")
    B, L = int(batch_size), int(seq_len)
    out = {"cut.act_up": B * L * hidden * FLOAT32_BYTES, "cut.mask_up": B * INT64_BYTES,
           "cut.labels_up": B * INT64_BYTES, "cut.grad_down": 0, "weights.up": 0, "weights.down": 0, "seeds.down": 0}
    if method in ("hosfl", "sfl_fo"):
        out["cut.grad_down"] = B * L * hidden * FLOAT32_BYTES
    if method == "hosfl":
        out.update({"weights.up": P * FLOAT32_BYTES, "weights.down": P * FLOAT32_BYTES, "seeds.down": P * UINT32_BYTES})
    if method == "sfl_fo":
        out.update({"weights.up": client_dim * FLOAT32_BYTES, "weights.down": client_dim * FLOAT32_BYTES})
    return out


def _accuracy(split, server, theta, ids, attn, y, chunk=64) -> float:
    hits = 0
    with torch.no_grad():
        for i in range(0, y.numel(), chunk):
            h0, mask = split.embed(ids[i:i + chunk], attn[i:i + chunk])
            z = split.client_apply(h0, mask, theta)
            hits += int((server(z, mask, attn[i:i + chunk]).argmax(1) == y[i:i + chunk]).sum())
    return hits / y.numel()


def run_text_split(method: str, split: MiniLMSplit, data: dict, *, rounds, n_clients=4, batch_size=4, P=5, mu=1e-3,
                   server_lr=0.05, client_lr=0.01, momentum=0.9, eval_every=10, seed=0, holdout=0.0) -> dict:
    """Fine-tune the split MiniLM from its pretrained client with ``method`` (IID partition of the training rows
    over ``n_clients``, each draws ``batch_size`` rows a round; see the module docstring). ``data`` holds
    ``train`` and ``test`` as (ids, attention mask, labels) tensors (:func:`encode_task`). ``holdout`` in [0, 1):
    the fraction of training rows held out (:func:`papers.hosfl.pretrained.holdout_rows`, stream
    "minilm_split"); the run then trains on the rest and its accuracy is
    measured on the held-out rows, never on the test set (learning-rate trials).

    Returns the evaluation rounds, test accuracy, training loss per round (the server's loss at the round's
    starting point), final_acc (mean over the last 10% of evaluations), the bytes per client and round and d_c."""
    if method not in TEXT_METHODS:
        raise ValueError(f"method must be one of {list(TEXT_METHODS)}, got {method!r}")
    for name, v in (("rounds", rounds), ("n_clients", n_clients), ("batch_size", batch_size), ("P", P),
                    ("eval_every", eval_every)):
        _positive_int(v, name)
    mu = H.check_mu(mu)
    check_rates(momentum=momentum, holdout=holdout, server_lr=server_lr, client_lr=client_lr)
    ids, attn, y = data["train"]
    ids_te, attn_te, y_te = data["test"]
    if float(holdout) > 0:
        fit, val = holdout_rows(y.numel(), holdout, "minilm_split")
        ids_te, attn_te, y_te = ids[val], attn[val], y[val]
        ids, attn, y = ids[fit], attn[fit], y[fit]
    n_classes = int(max(int(y.max()), int(y_te.max()))) + 1
    K, B = int(n_clients), int(batch_size)
    parts = partition_iid(y.numel(), K, seeding.generator(seed, "partition"))
    batch_rng, rng = seeding.generator(seed, "batches"), seeding.generator(seed, "perturb")
    server = split.new_server(n_classes, seed)
    params = list(server.parameters())
    opt = torch.optim.SGD(params, lr=float(server_lr), momentum=float(momentum))
    theta, buf = split.theta0.copy(), None
    eval_rounds, acc, losses = [], [], []
    for t in range(int(rounds)):
        idx = torch.from_numpy(np.concatenate([draw_batch(parts[k], B, batch_rng) for k in range(K)]))
        h0, mask = split.embed(ids[idx], attn[idx])
        th = torch.from_numpy(theta)
        if method == "sfl_fo":
            th = th.clone().requires_grad_(True)
            z = split.client_apply(h0, mask, th)
        else:
            with torch.no_grad():
                z = split.client_apply(h0, mask, th)
        zs = z.detach().clone().requires_grad_(True)   # the server's copy of the cut activations
        loss = F.cross_entropy(server(zs, mask, attn[idx]), y[idx])
        grads = torch.autograd.grad(loss, [zs] + params)
        for p, g in zip(params, grads[1:]):
            p.grad = g
        opt.step()
        opt.zero_grad(set_to_none=True)
        lam = grads[0].detach()   # lambda = d loss / d z
        if method == "sfl_fo":
            (g,) = torch.autograd.grad(z, [th], grad_outputs=lam)
            theta, buf = H.sgd_momentum_step(theta, g.numpy(), float(client_lr), float(momentum), buf)
        elif method == "hosfl":
            seeds = [int(s) for s in rng.choice(H.SEED_BOUND, size=int(P), replace=False)]
            vbar, ghat = np.empty(int(P)), torch.zeros(split.client_dim, dtype=torch.float64)
            with torch.no_grad():
                for p, s in enumerate(seeds):   # vbar_p = <lambda, f_c(theta + mu u_p) - z>, summed over the K clients
                    u = _flat_direction(s, split.shapes)
                    zp = split.client_apply(h0, mask, th + mu * u)
                    vbar[p] = float((lam.double() * (zp - z).double()).sum())
                    ghat.add_(u, alpha=vbar[p] / (int(P) * mu))
            theta, buf = H.sgd_momentum_step(theta, ghat.numpy(), float(client_lr), float(momentum), buf)
        loss = float(loss.detach())
        if not (math.isfinite(loss) and np.all(np.isfinite(theta))):
            raise FloatingPointError(f"method {method!r}: non-finite loss or client parameters at round {t}")
        losses.append(loss)
        if (t + 1) % int(eval_every) == 0 or t + 1 == int(rounds):
            eval_rounds.append(t + 1)
            acc.append(_accuracy(split, server, torch.from_numpy(theta), ids_te, attn_te, y_te))
    return {"method": method, "round": np.array(eval_rounds), "test_accuracy": np.array(acc),
            "train_loss": np.array(losses), "final_acc": final_accuracy(acc), "client_dim": split.client_dim,
            "bytes_per_client_round": text_bytes_per_round(method, batch_size=B, seq_len=int(ids.shape[1]),
                                                           hidden=split.hidden_size, client_dim=split.client_dim,
                                                           P=int(P)),
            "n_clients": K, "client_vector": theta.copy()}


def client_step_inplace(method: str, split: MiniLMSplit, input_ids, attention_mask, lam, *, seeds=(), mu=1e-3,
                        lr=1e-4) -> list[float]:
    """One client step of ``method`` on the client's own parameters (``split.client``, changed in place), from the
    tokens to the update, with the multiplier ``lam`` (the shape of z) from the server. Returns the scalars v_p
    (HO-SFL and its control; empty otherwise).

    * ``hosfl``: under ``no_grad``: h0 = embeddings, z = f_c(h0); for each seed s_p, theta += mu u_p one tensor at a
      time (u_p from :func:`client_direction`), v_p = <lam, f_c(h0) - z>, theta -= mu u_p; then for each tensor
      theta -= lr (1/(P mu)) sum_p v_p u_p (the P directions redrawn from their seeds in lockstep). Plain SGD.
    * ``sfl_fo``: z = f_c(h0) with autograd on theta, g = J_c^T lam by ``torch.autograd.grad``, theta -= lr g.
    * ``hosfl_grad`` (negative control): the HO-SFL step with theta requiring grad and autograd enabled in the
      forwards, so each forward records its graph and keeps the activations a backward would need (none comes).
    * ``inference``: h0 and z = f_c(h0) under ``no_grad``, no update.
    """
    if method not in MEMORY_METHODS:
        raise ValueError(f"method must be one of {list(MEMORY_METHODS)}, got {method!r}")
    client = split.client
    params = list(client.parameters())
    h0, mask = split.embed(input_ids, attention_mask)
    if method == "inference":
        with torch.no_grad():
            client(h0, mask)
        return []
    if method == "sfl_fo":
        for p in params:
            p.requires_grad_(True)
        try:
            z = client(h0, mask)
            if z.shape != lam.shape:
                raise ValueError(f"lam shape {tuple(lam.shape)} must equal the client output shape {tuple(z.shape)}")
            grads = torch.autograd.grad(z, params, grad_outputs=lam)
            del z
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p.sub_(g, alpha=float(lr))
        finally:
            for p in params:
                p.requires_grad_(False)
        return []
    seeds = H.check_seeds(seeds)
    mu = H.check_mu(mu)
    shapes = [tuple(p.shape) for p in params]
    grad = method == "hosfl_grad"
    if grad:
        for p in params:
            p.requires_grad_(True)
    v = []
    try:
        with torch.set_grad_enabled(grad):
            z = client(h0, mask)
            if z.shape != lam.shape:
                raise ValueError(f"lam shape {tuple(lam.shape)} must equal the client output shape {tuple(z.shape)}")
            for s in seeds:
                with torch.no_grad():
                    for p, u in zip(params, iter_direction(s, shapes)):
                        p.add_(u, alpha=mu)
                zp = client(h0, mask)
                v.append(float((lam.double() * (zp.detach() - z.detach()).double()).sum()))
                del zp
                with torch.no_grad():
                    for p, u in zip(params, iter_direction(s, shapes)):
                        p.sub_(u, alpha=mu)
            del z
    finally:
        if grad:
            for p in params:
                p.requires_grad_(False)
    streams = [iter_direction(s, shapes) for s in seeds]   # the P directions redrawn in lockstep
    scale = [vp / (len(seeds) * mu) for vp in v]
    with torch.no_grad():
        for p, shape in zip(params, shapes):
            step = torch.zeros(shape)
            for stream, c in zip(streams, scale):
                step.add_(next(stream), alpha=c)
            p.sub_(step, alpha=float(lr))
    return v


# ------------------------------------------------------------------------------------------- measured client memory
def minilm_task_and_split(tokenizer, bert, task: dict, split_params: dict, task_seed: int):
    """(lexicon words, encoded data {"train", "test"}, :class:`MiniLMSplit`) of the MiniLM experiment: the
    VADER-lexicon sentence task (:mod:`papers.hosfl.text_task`) drawn with ``task_seed`` and the encoder cut after
    ``split_params["client_layers"]`` layers. Deterministic in its arguments."""
    from papers.hosfl.text_task import sentiment_sentences, sentiment_words
    words, labels = sentiment_words(min_abs_valence=float(task.get("min_abs_valence", 1.0)),
                                    min_length=int(task.get("min_length", 3)), vocab=tokenizer.get_vocab())
    sents = sentiment_sentences(words, labels, n_train=int(task["n_train"]), n_test=int(task["n_test"]),
                                seed=int(task_seed))
    data = {k: encode_task(tokenizer, *sents[k], int(task["max_length"])) for k in ("train", "test")}
    split = MiniLMSplit(bert, int(split_params["client_layers"]), int(split_params["server_layers"]))
    return words, data, split


def minilm_memory_probe(probe: dict) -> dict:
    """Peak RSS growth in bytes of one client step per method of :data:`MEMORY_METHODS`, measured in this process.

    The setup of the experiment is built from ``probe`` (``task``, ``split``, ``task_seed``, ``batch_size``,
    ``server_seed``, ``step_seeds``, ``mu``, ``lr``, ``repeats``): the first ``batch_size`` training sentences and
    the multiplier lambda = d loss / d z of a fresh server (seeded ``server_seed``) at the pretrained client. Then,
    ``repeats`` times, each method's step (:func:`client_step_inplace`) runs in a forked child after a one-sentence
    warm-up of the same step and is measured as the growth of the child's peak RSS
    (:func:`papers.hosfl.memory_probe.peak_rss_growth`): the child starts with the model, tokens and lambda
    resident, so the growth is the step's own working memory (activations, saved tensors, gradients, directions).

    Returns {"peak_bytes": method -> list over repeats, "batch_size", "seq_len", "hidden", "client_dim", "P",
    "pid"} (``pid``: the measuring process)."""
    from shared.lm.pretrained import load_minilm
    from papers.hosfl.memory_probe import peak_rss_growth
    torch.set_num_threads(1)
    tokenizer, bert = load_minilm()
    _, data, split = minilm_task_and_split(tokenizer, bert, probe["task"], probe["split"], probe["task_seed"])
    del bert
    B = int(probe["batch_size"])
    ids, attn, y = (t[:B] for t in data["train"])
    server0 = split.new_server(2, int(probe["server_seed"]))
    h0, mask = split.embed(ids, attn)
    with torch.no_grad():
        z0 = split.client(h0, mask)
    zs = z0.clone().requires_grad_(True)
    (lam,) = torch.autograd.grad(F.cross_entropy(server0(zs, mask, attn), y), [zs])
    del server0, h0, mask, z0, zs
    step_kw = {"seeds": [int(s) for s in probe["step_seeds"]], "mu": float(probe["mu"]), "lr": float(probe["lr"])}
    peaks = {m: [] for m in MEMORY_METHODS}
    for _ in range(int(probe["repeats"])):
        for m in MEMORY_METHODS:
            def step(m=m):
                client_step_inplace(m, split, ids, attn, lam, **step_kw)

            def warm(m=m):   # the same step on one sentence: faults the kernels' code pages in first
                client_step_inplace(m, split, ids[:1], attn[:1], lam[:1], **step_kw)
            peaks[m].append(int(peak_rss_growth(step, warmup=warm)))
    return {"peak_bytes": peaks, "batch_size": B, "seq_len": int(ids.shape[1]), "hidden": int(split.hidden_size),
            "client_dim": int(split.client_dim), "P": len(step_kw["seeds"]), "pid": os.getpid()}


def measure_memory_in_fresh_process(probe: dict) -> dict:
    """:func:`minilm_memory_probe` run in a newly spawned Python process (``multiprocessing`` "spawn" context, one
    process per call), so that separate calls are independent runs: the growth was seen to vary between processes
    by far more than between forked repeats of one process (cause not found; fixing the address-space layout or
    the hash seed did not remove it in trial runs)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(minilm_memory_probe, probe).result()


def memory_summary(per_process: list) -> dict:
    """The memory metrics of ``minilm_split`` from the outputs of :func:`minilm_memory_probe`, one per process.

    Per process, each method's growth is the mean over its forked repeats (MiB); ``peak_mib[m]`` lists these over
    processes, ``ratio["<m>_over_sfl_fo"]`` and ``ratio["hosfl_over_inference"]`` the per-process ratios (the
    samples of the memory claims), ``within_process_range_mib[m]`` the largest max - min over a process's repeats."""
    if not per_process:
        raise ValueError("memory_summary needs at least one process")
    first = per_process[0]
    methods = list(first["peak_bytes"])
    mib = {m: [float(np.mean(p["peak_bytes"][m])) / 2 ** 20 for p in per_process] for m in methods}
    ratio = {f"{m}_over_sfl_fo": [a / b for a, b in zip(mib[m], mib["sfl_fo"])] for m in methods if m != "sfl_fo"}
    ratio["hosfl_over_inference"] = [a / b for a, b in zip(mib["hosfl"], mib["inference"])]
    return {"measurement": "peak RSS growth of a forked child per client step; one value per independent process "
                           "(mean over its forked repeats)",
            "batch_size": first["batch_size"], "seq_len": first["seq_len"], "P": first["P"],
            "repeats": len(first["peak_bytes"][methods[0]]), "processes": len(per_process),
            "cut_activation_mib": first["batch_size"] * first["seq_len"] * first["hidden"] * 4 / 2 ** 20,
            "client_params_mib": first["client_dim"] * 4 / 2 ** 20,
            "peak_mib": mib, "peak_mib_mean": {m: float(np.mean(v)) for m, v in mib.items()},
            "within_process_range_mib": {m: max((max(p["peak_bytes"][m]) - min(p["peak_bytes"][m])) / 2 ** 20
                                                for p in per_process) for m in methods},
            "ratio": ratio, "ratio_mean": {k: float(np.mean(v)) for k, v in ratio.items()}}
