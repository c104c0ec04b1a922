"""BBT-style soft-prompt objective (papers.romberg_zoge.prompt_lm) on a tiny random Llama, and the ZO-SGD
weights override used by its control. The 135M model is not needed here."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from papers.romberg_zoge.optim import zo_sgd  # noqa: E402
from papers.romberg_zoge.prompt_lm import (NEGATIVE_TEST, NEGATIVE_TRAIN, POSITIVE_TEST, POSITIVE_TRAIN,  # noqa: E402
                                           SoftPromptTask, bbt_projection, random_token_prompt, sentiment_task)

VOCAB, HIDDEN, N_TOKENS, DIM = 40, 32, 3, 6
LABELS = (5, 9)
TRAIN = [[1, 2, 3, 4], [7, 8], [11, 12, 13], [2, 2, 2, 2, 2]]
TEST = [[3, 4], [5, 6, 7]]


@pytest.fixture(scope="module")
def tiny():
    from shared.lm.tiny import tiny_llama

    torch.set_num_threads(1)
    return tiny_llama(VOCAB, num_layers=2, hidden_size=HIDDEN, num_heads=2, seed=3)


@pytest.fixture(scope="module")
def task(tiny):
    emb = tiny.get_input_embeddings().weight.detach().double().numpy()
    p0, _ = random_token_prompt(emb, N_TOKENS, seed=1)
    A = bbt_projection(N_TOKENS, HIDDEN, DIM, float(emb.std()), seed=2)
    return SoftPromptTask(tiny, TRAIN, [1, 0, 1, 0], TEST, [0, 1], LABELS, p0, A, max_sequences=3)


def _direct_loss(model, p0, sentences, labels):
    """Cross-entropy over the two label logits, one unpadded sentence at a time, through the full LM head."""
    emb = model.get_input_embeddings()
    losses = []
    with torch.no_grad():
        for ids, y in zip(sentences, labels):
            x = torch.cat([torch.as_tensor(p0, dtype=torch.float32), emb(torch.tensor(ids))])[None]
            logits = model(inputs_embeds=x).logits[0, -1, list(LABELS)].double()
            losses.append(float(torch.logsumexp(logits, 0) - logits[y]))
    return float(np.mean(losses))


def test_zero_z_is_the_fixed_prompt_p0(task, tiny):
    expected = _direct_loss(tiny, task.p0, TRAIN, [1, 0, 1, 0])
    got = task.loss(np.zeros((1, DIM)))
    assert got.shape == (1,)
    assert abs(got[0] - expected) < 1e-5 * max(1.0, abs(expected))
    assert np.array_equal(task.prompts(np.zeros((2, DIM))), np.stack([task.p0, task.p0]))


def test_nonzero_z_is_the_projected_prompt(task, tiny):
    z = np.random.default_rng(0).standard_normal(DIM)
    p = task.p0 + (task.projection @ z).reshape(N_TOKENS, HIDDEN)
    assert np.allclose(task.prompts(z[None])[0], p, rtol=0, atol=1e-12)
    assert abs(task.loss(z[None])[0] - _direct_loss(tiny, p, TRAIN, [1, 0, 1, 0])) < 1e-5


def test_objective_is_deterministic_and_batched_rows_agree(task):
    Z = np.random.default_rng(1).standard_normal((5, DIM))
    a, b = task.loss(Z), task.loss(Z)
    assert np.array_equal(a, b)
    single = np.array([task.loss(z[None])[0] for z in Z])
    assert np.allclose(a, single, rtol=0, atol=1e-6)  # padding and chunking do not change the values


def test_accuracy_and_test_split(task, tiny):
    acc = task.accuracy(np.zeros((2, DIM)))
    assert acc.shape == (2,) and set(np.round(acc * 2)) <= {0.0, 1.0, 2.0}
    assert abs(task.loss(np.zeros((1, DIM)), "test")[0] - _direct_loss(tiny, task.p0, TEST, [0, 1])) < 1e-5


def test_projection_has_the_bbt_scale():
    n_tokens, hidden, dim, emb_std = 4, 256, 20, 0.135
    A = bbt_projection(n_tokens, hidden, dim, emb_std, seed=0)
    assert A.shape == (n_tokens * hidden, dim)
    s = emb_std / math.sqrt(dim)  # sigma_m = 1
    assert abs(A.std() / s - 1) < 0.03 and abs(A.mean()) < 3 * s / math.sqrt(A.size)
    z = np.random.default_rng(1).standard_normal((2000, dim))  # z ~ N(0, I): A z has coordinate std emb_std
    assert abs((z @ A.T).std() / emb_std - 1) < 0.05
    assert np.array_equal(A, bbt_projection(n_tokens, hidden, dim, emb_std, seed=0))
    half = bbt_projection(n_tokens, hidden, dim, emb_std, seed=0, sigma_m=2.0)
    assert np.allclose(half, A / 2.0)


@pytest.mark.parametrize("kw", [dict(n_tokens=0), dict(dim=0), dict(embedding_std=0.0), dict(sigma_m=-1.0)])
def test_projection_bad_input(kw):
    args = dict(n_tokens=2, hidden=8, dim=3, embedding_std=0.1, seed=0) | kw
    with pytest.raises(ValueError):
        bbt_projection(**args)


def test_with_projection_shares_the_model_and_data(task):
    A = bbt_projection(N_TOKENS, HIDDEN, 4, 0.1, seed=9)
    other = task.with_projection(A)
    assert other.dim == 4 and task.dim == DIM and other.model is task.model
    assert abs(other.loss(np.zeros((1, 4)))[0] - task.loss(np.zeros((1, DIM)))[0]) < 1e-12
    with pytest.raises(ValueError):
        task.with_projection(np.zeros((3, 4)))


def test_bad_inputs(task, tiny):
    with pytest.raises(ValueError):
        task.loss(np.zeros((1, DIM + 1)))
    with pytest.raises(ValueError):
        SoftPromptTask(tiny, TRAIN, [1, 0, 1], TEST, [0, 1], LABELS, task.p0, task.projection)
    with pytest.raises(ValueError):
        SoftPromptTask(tiny, TRAIN, [1, 0, 1, 2], TEST, [0, 1], LABELS, task.p0, task.projection)
    with pytest.raises(ValueError):
        SoftPromptTask(tiny, TRAIN, [1, 0, 1, 0], TEST, [0, 1], LABELS, task.p0[:, :5], task.projection)


def test_sentiment_task_is_deterministic_balanced_and_held_out():
    a, b = sentiment_task(8, 32, seed=0), sentiment_task(8, 32, seed=0)
    assert a == b
    assert sum(a["train_labels"]) == 4 and sum(a["test_labels"]) == 16
    train_words = set(POSITIVE_TRAIN + NEGATIVE_TRAIN)
    test_words = set(POSITIVE_TEST + NEGATIVE_TEST)
    assert not train_words & test_words
    word = lambda t: t.rstrip(".").split()[-1]  # noqa: E731  (the adjective ends every template)
    assert all(word(t) in train_words for t in a["train_texts"])
    assert all(word(t) in test_words for t in a["test_texts"])
    for texts, labels in ((a["train_texts"], a["train_labels"]), (a["test_texts"], a["test_labels"])):
        for t, y in zip(texts, labels):
            assert (word(t) in POSITIVE_TRAIN + POSITIVE_TEST) == (y == 1)
    with pytest.raises(ValueError):
        sentiment_task(7, 32, seed=0)


def test_zo_sgd_weights_override():
    f = lambda X: np.sum(np.exp(X) - X, axis=1)  # noqa: E731
    x0 = np.full(3, 0.5)
    kw = dict(method="romberg", level=1, radius=0.4, evals_per_step=4, iterations=5, lr=0.05, seed=3)
    default = zo_sgd(f, x0, **kw)
    same = zo_sgd(f, x0, weights=[-1 / 3, 4 / 3], **kw)
    assert np.allclose(default["x_last"], same["x_last"], rtol=0, atol=1e-12)
    uniform = zo_sgd(f, x0, weights=[0.5, 0.5], **kw)
    # by hand: the same directions, (D(r) + D(r/2)) / 2
    rng, x = np.random.default_rng(3), x0.copy()
    for t in range(5):
        u = rng.standard_normal((1, 3))[0]
        D = [(f((x + h * u)[None])[0] - f((x - h * u)[None])[0]) / (2 * h) for h in (0.4, 0.2)]
        x = x - 0.05 / (1 + t / 500.0) ** 0.6 * 0.5 * (D[0] + D[1]) * u
    assert np.allclose(uniform["x_last"], x, rtol=0, atol=1e-12)
    with pytest.raises(ValueError):
        zo_sgd(f, x0, weights=[1.0], **kw)
    with pytest.raises(ValueError):
        zo_sgd(f, x0, weights=[np.nan, 1.0], **kw)
    with pytest.raises(ValueError):
        zo_sgd(f, x0, **(kw | dict(method="two_point")), weights=[1.0])
