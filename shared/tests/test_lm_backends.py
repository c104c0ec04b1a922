"""shared.lm.backends: selection by environment, scripted stand-ins, record/replay, the OpenAI-compatible
path against a local HTTP stub on 127.0.0.1, and the local transformers backend on a tiny model."""
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from shared.lm import backends as B

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi"}]


def echo(messages, *, n, temperature, max_tokens, seed):
    return [f"{messages[-1]['content']} #{i}" for i in range(n)]


def test_cache_key_is_sha256_of_canonical_json():
    text = ('{"max_tokens":16,"messages":[{"content":"hi","role":"user"}],"model":"m","n":1,"seed":null,'
            '"temperature":0.0}')
    messages = [{"role": "user", "content": "hi"}]
    assert B.cache_key("m", messages, 1, 0, 16, None) == hashlib.sha256(text.encode()).hexdigest()
    assert B.cache_key("m", messages, 1, 0.0, 16) == B.cache_key("m", messages, 1, 0, 16)
    assert B.cache_key("m", messages, 1, 0.0, 16, seed=1) != B.cache_key("m", messages, 1, 0.0, 16)
    assert B.cache_key("m", [{"content": "hi", "role": "user"}], 1, 0, 16) == B.cache_key("m", messages, 1, 0, 16)


@pytest.mark.parametrize("messages, match", [
    ([], "non-empty"), ("hi", "non-empty"), ([{"role": "user"}], "exactly"),
    ([{"role": "robot", "content": "x"}], "role"), ([{"role": "user", "content": 3}], "content")])
def test_bad_messages(messages, match):
    with pytest.raises(ValueError, match=match):
        B.check_messages(messages)


@pytest.mark.parametrize("kwargs, match", [
    ({"n": 0}, "n must"), ({"temperature": -0.1}, "temperature"), ({"temperature": float("nan")}, "temperature"),
    ({"max_tokens": 0}, "max_tokens"), ({"seed": -1}, "seed"), ({"n": True}, "n must")])
def test_bad_request(kwargs, match):
    with pytest.raises(ValueError, match=match):
        B.ScriptedBackend(echo).complete(MESSAGES, **kwargs)


def test_scripted_is_the_default_and_says_it_is_not_an_llm(caplog):
    backend = B.get_backend(scripted=echo, scripted_model="echo-v1", env={})
    assert isinstance(backend, B.ScriptedBackend) and backend.is_llm is False
    assert backend.label == "SCRIPTED STAND-IN (not an LLM): echo-v1" and backend.name == "scripted"
    with caplog.at_level("INFO", logger="shared.lm.backends"):
        assert backend.complete(MESSAGES, n=2) == ["Say hi #0", "Say hi #1"]
    record = backend.calls[0]
    assert (record.backend, record.model, record.n, record.prompt_tokens, record.completion_tokens) == (
        "scripted", "echo-v1", 2, 4, 6)
    assert record.prompt_hash == B.cache_key("echo-v1", MESSAGES, 2, 0.0, B.DEFAULT_MAX_TOKENS)
    assert "backend=scripted" in caplog.text and backend.usage()["calls"] == 1
    same = B.ScriptedBackend(echo)
    assert B.get_backend(scripted=same, env={"REPRO_LLM_BACKEND": "scripted"}) is same


def test_scripted_must_return_n_strings():
    with pytest.raises(B.BackendError, match="2 strings"):
        B.ScriptedBackend(lambda m, **k: ["only one"]).complete(MESSAGES, n=2)
    assert B.ScriptedBackend(lambda m, **k: "single").complete(MESSAGES) == ["single"]


@pytest.mark.parametrize("env, error, match", [
    ({}, B.BackendError, "scripted stand-in"),
    ({"REPRO_LLM_BACKEND": "gpt"}, ValueError, "REPRO_LLM_BACKEND must be one of"),
    ({"REPRO_LLM_BACKEND": "scripted", "REPRO_LLM_RECORD": "1"}, ValueError, "records an openai or local"),
    ({"REPRO_LLM_BACKEND": "replay"}, B.BackendError, "REPRO_LLM_REPLAY"),
    ({"REPRO_LLM_BACKEND": "replay", "REPRO_LLM_REPLAY": "/no/such.jsonl"}, B.BackendError, "does not exist"),
    ({"REPRO_LLM_BACKEND": "openai", "REPRO_LLM_MODEL": "m"}, B.BackendError, "REPRO_LLM_BASE_URL"),
    ({"REPRO_LLM_BACKEND": "openai", "REPRO_LLM_BASE_URL": "http://127.0.0.1:9/v1"}, B.BackendError,
     "REPRO_LLM_MODEL"),
    ({"REPRO_LLM_BACKEND": "openai", "REPRO_LLM_RECORD": "maybe"}, ValueError, "REPRO_LLM_RECORD"),
])
def test_environment_errors(env, error, match):
    with pytest.raises(error, match=match):
        B.get_backend(env=env)


class _Stub:
    """A minimal OpenAI-compatible /v1/chat/completions server on 127.0.0.1."""

    def __init__(self, honour_n: bool = True):
        self.requests, stub = [], self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append((self.path, body, self.headers.get("Authorization")))
                count = body.get("n", 1) if honour_n else 1
                offset = sum(r[1].get("n", 1) if honour_n else 1 for r in stub.requests[:-1])
                reply = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [{"index": i, "finish_reason": "stop", "message": {
                             "role": "assistant", "content": f"answer {offset + i}"}} for i in range(count)],
                         "usage": {"prompt_tokens": 7, "completion_tokens": 3 * count, "total_tokens": 7 + 3 * count}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub(monkeypatch):
    pytest.importorskip("openai")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server = _Stub()
    yield server
    server.close()


def test_openai_record_then_replay(stub, tmp_path):
    cache = tmp_path / "replay.jsonl"
    env = {"REPRO_LLM_BACKEND": "openai", "REPRO_LLM_BASE_URL": stub.url, "REPRO_LLM_MODEL": "stub-model",
           "REPRO_LLM_API_KEY": "sk-test", "REPRO_LLM_RECORD": "1", "REPRO_LLM_REPLAY": str(cache)}
    backend = B.get_backend(env=env)
    assert isinstance(backend, B.RecordingBackend) and backend.is_llm and backend.label == "openai:stub-model"
    first = backend.complete(MESSAGES, n=2, temperature=0.2, max_tokens=32, seed=7)
    assert first == ["answer 0", "answer 1"]
    path, body, auth = stub.requests[0]
    assert path == "/v1/chat/completions" and auth == "Bearer sk-test"
    assert (body["model"], body["n"], body["temperature"], body["max_tokens"], body["seed"]) == (
        "stub-model", 2, 0.2, 32, 7)
    assert body["messages"] == MESSAGES
    assert backend.calls[0].prompt_tokens == 7 and backend.calls[0].completion_tokens == 6
    assert backend.complete(MESSAGES, n=2, temperature=0.2, max_tokens=32, seed=7) == first  # from the cache
    assert len(stub.requests) == 1 and backend.calls[1].cached
    entry = json.loads(cache.read_text().splitlines()[0])
    assert entry["key"] == B.cache_key("stub-model", MESSAGES, 2, 0.2, 32, 7) and "sk-test" not in cache.read_text()
    stub.close()
    replay = B.get_backend(env={"REPRO_LLM_BACKEND": "replay", "REPRO_LLM_REPLAY": str(cache)})
    assert replay.model == "stub-model" and replay.is_llm and replay.name == "replay"
    assert replay.complete(MESSAGES, n=2, temperature=0.2, max_tokens=32, seed=7) == first
    with pytest.raises(B.ReplayMissError, match="no response for key"):
        replay.complete(MESSAGES, n=2, temperature=0.2, max_tokens=32, seed=8)


def test_openai_tops_up_when_the_endpoint_ignores_n(monkeypatch):
    pytest.importorskip("openai")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server = _Stub(honour_n=False)
    try:
        backend = B.OpenAIBackend(server.url, "stub-model")
        assert backend.complete(MESSAGES, n=3, temperature=0.5) == ["answer 0", "answer 1", "answer 2"]
        assert [r[1]["n"] for r in server.requests] == [3, 2, 1] and "seed" not in server.requests[0][1]
    finally:
        server.close()


def test_openai_endpoint_failure_is_a_backend_error():
    pytest.importorskip("openai")
    backend = B.OpenAIBackend("http://127.0.0.1:9/v1", "m", timeout_s=2, max_retries=0)
    with pytest.raises(B.BackendError, match="127.0.0.1:9"):
        backend.complete(MESSAGES)


def test_openai_client_missing(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "openai", None)
    with pytest.raises(B.BackendError, match="pip install openai==3.57.0"):
        B.OpenAIBackend("http://127.0.0.1:9/v1", "m")


def test_replay_cache_problems(tmp_path):
    good = {"key": B.cache_key("a", MESSAGES), "request": B._request("a", MESSAGES, 1, 0.0, 1024, None),
            "responses": ["x"]}
    other = dict(good, key=B.cache_key("b", MESSAGES), request=B._request("b", MESSAGES, 1, 0.0, 1024, None))
    two = tmp_path / "two.jsonl"
    two.write_text(json.dumps(good) + "\n" + json.dumps(other) + "\n")
    with pytest.raises(B.BackendError, match="REPRO_LLM_MODEL"):
        B.ReplayBackend(two)
    assert B.ReplayBackend(two, model="b").complete(MESSAGES) == ["x"]
    for text, match in [("not json\n", "not a cache entry"), (json.dumps(dict(good, key="0" * 64)), "key does not"),
                        (json.dumps(dict(good, responses=["x", "y"])), "expected 1 responses")]:
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text)
        with pytest.raises(B.BackendError, match=match):
            B.ReplayBackend(bad)


def test_recording_only_wraps_llm_backends(tmp_path):
    with pytest.raises(ValueError, match="openai or local"):
        B.RecordingBackend(B.ScriptedBackend(echo), tmp_path / "c.jsonl")


@pytest.fixture(scope="module")
def tiny_chat():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from shared.lm import tiny_llama

    words = ["<pad>", "<eos>", "<unk>", "system", "user", "assistant", ":", "Be", "brief.", "Say", "hi"]
    words += [f"w{i}" for i in range(32 - len(words))]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>",
                                        unk_token="<unk>")
    tokenizer.chat_template = ("{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
                               "{% if add_generation_prompt %}assistant :{% endif %}")
    torch.manual_seed(0)
    return tiny_llama(len(words), num_layers=1, hidden_size=32, num_heads=4, seed=1), tokenizer


def test_local_backend_on_a_tiny_model(tiny_chat):
    model, tokenizer = tiny_chat
    backend = B.LocalBackend(model, tokenizer, model_name="tiny")
    assert backend.name == "local" and backend.is_llm and backend.model == "tiny"
    greedy = backend.complete(MESSAGES, max_tokens=5)
    assert len(greedy) == 1 and isinstance(greedy[0], str) and greedy == backend.complete(MESSAGES, max_tokens=5)
    sampled = backend.complete(MESSAGES, n=3, temperature=1.0, max_tokens=6, seed=3)
    assert len(sampled) == 3 and sampled == backend.complete(MESSAGES, n=3, temperature=1.0, max_tokens=6, seed=3)
    assert backend.calls[0].prompt_tokens == 10 and backend.calls[0].completion_tokens <= 5
    with pytest.raises(ValueError, match="together"):
        B.LocalBackend(model, None)


def test_local_backend_can_be_recorded(tiny_chat, tmp_path):
    model, tokenizer = tiny_chat
    cache = tmp_path / "local.jsonl"
    recorded = B.RecordingBackend(B.LocalBackend(model, tokenizer, model_name="tiny"), cache).complete(
        MESSAGES, max_tokens=4)
    assert B.ReplayBackend(cache).complete(MESSAGES, max_tokens=4) == recorded
