"""Performance and cross-check against TRL's ``DPOTrainer`` (spec "Performance").

Same tiny model (the SFT reference), data, data order (sequential), batch size, optimiser (AdamW, constant lr, no
weight decay) and beta. TRL needs a tokenizer: a word-level ``tokenizers`` model over our token strings wrapped
in ``PreTrainedTokenizerFast`` (offline).
"""
from __future__ import annotations

import copy
import tempfile
import time

import numpy as np

from papers.adpo.tasks import VOCAB_SIZE

__all__ = ["TOKEN_STRINGS", "make_tokenizer", "to_text", "run_trl_dpo", "step1_gradients"]

TOKEN_STRINGS = [f"d{i}" for i in range(10)] + ["<pad>", "<bos>", "<sep>", "<eos>", "+"]


def make_tokenizer():
    """A ``PreTrainedTokenizerFast`` whose ids are our token ids (whitespace-separated words)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    assert len(TOKEN_STRINGS) == VOCAB_SIZE
    tok = Tokenizer(WordLevel({s: i for i, s in enumerate(TOKEN_STRINGS)}, unk_token="<pad>"))
    tok.pre_tokenizer = WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<pad>")


def to_text(ids) -> str:
    """Token ids as whitespace-separated words."""
    return " ".join(TOKEN_STRINGS[i] for i in ids)


def _trl_trainer(ref_model, pairs, tmp: str, *, steps: int, batch: int, lr: float, beta: float, seed: int,
                 bf16: bool, callbacks=(), losses=None):
    """``DPOTrainer(loss_type="sigmoid")`` on ``pairs`` in order: no gradient clipping (as in our trainer) and,
    unless ``bf16``, no mixed precision. TRL's configs default to ``bf16=True``, which autocasts the policy and
    reference forward passes to bfloat16 even on the CPU: that, not the fused chunked log-prob head, is what made
    TRL's step-1 gradient differ from an exact float64 DPO gradient (see ``step1_gradients``)."""
    from datasets import Dataset
    from torch.utils.data import SequentialSampler
    from trl import DPOConfig, DPOTrainer

    class SequentialDPO(DPOTrainer):
        def _get_train_sampler(self, *args, **kwargs):
            return SequentialSampler(self.train_dataset)

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            out = super().compute_loss(model, inputs, return_outputs=return_outputs,
                                       num_items_in_batch=num_items_in_batch)
            if losses is not None and model.training:
                losses.append(float((out[0] if return_outputs else out).detach()))
            return out

    rows = {"prompt": [to_text(p.prompt) for p in pairs],
            "chosen": [" " + to_text(p.chosen) for p in pairs],
            "rejected": [" " + to_text(p.rejected) for p in pairs]}
    args = DPOConfig(output_dir=tmp, per_device_train_batch_size=batch, learning_rate=lr, max_steps=steps,
                     beta=beta, loss_type=["sigmoid"], lr_scheduler_type="constant", warmup_steps=0,
                     weight_decay=0.0, optim="adamw_torch", logging_steps=1, report_to=[], save_strategy="no",
                     seed=seed, use_cpu=True, dataloader_num_workers=0, disable_tqdm=True, max_length=None,
                     gradient_accumulation_steps=1, max_grad_norm=0.0, bf16=bool(bf16))
    return SequentialDPO(model=copy.deepcopy(ref_model), ref_model=copy.deepcopy(ref_model), args=args,
                         train_dataset=Dataset.from_dict(rows), processing_class=make_tokenizer(),
                         callbacks=list(callbacks))


def run_trl_dpo(ref_model, pairs, *, steps: int, batch: int, lr: float, beta: float, seed: int, bf16: bool = False):
    """``steps`` steps of TRL's DPO on ``pairs`` in order; returns (per-step losses, per-step CPU seconds of the
    training step, from ``on_step_begin`` to ``on_step_end``)."""
    import torch
    from transformers import TrainerCallback

    losses, step_s = [], []

    class StepClock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.t0 = time.process_time()

        def on_step_end(self, args, state, control, **kwargs):
            step_s.append(time.process_time() - self.t0)

    with tempfile.TemporaryDirectory() as tmp:
        trainer = _trl_trainer(ref_model, pairs, tmp, steps=steps, batch=batch, lr=lr, beta=beta, seed=seed,
                               bf16=bf16, callbacks=[StepClock()], losses=losses)
        torch.manual_seed(seed)
        trainer.train()
    return np.asarray(losses[:steps]), np.asarray(step_s[:steps])


def _flat_grad(model):
    import torch

    return torch.cat([p.grad.detach().double().reshape(-1) for p in model.parameters() if p.grad is not None])


def step1_gradients(ref_model, pairs, *, beta: float) -> dict:
    """Relative differences ||g - g64|| / ||g64|| of the first-batch DPO gradient (before any optimiser step) from
    the exact one, g64 = our DPO loss with the model in float64: ``ours_float32`` (our trainer), ``trl_float32``
    (TRL with ``bf16=False``), ``trl_bf16_default`` (TRL's default mixed precision). ``pairs`` is the batch."""
    import torch

    from papers.adpo.train import _rho, encode_pairs, method_spec, pair_loss

    def ours(dtype):
        model = copy.deepcopy(ref_model).to(dtype)
        data = encode_pairs(pairs, model)
        model.train()
        idx = np.arange(len(pairs))
        rw, rl = _rho(model, data, idx)
        pair_loss(method_spec({"loss": "dpo"}), rw, rl, data.mask_w[idx], data.mask_l[idx], data.weights[idx],
                  beta).backward()
        return _flat_grad(model)

    def trl(bf16):
        with tempfile.TemporaryDirectory() as tmp:
            trainer = _trl_trainer(ref_model, pairs, tmp, steps=1, batch=len(pairs), lr=1e-5, beta=beta, seed=0,
                                   bf16=bf16)
            inputs = next(iter(trainer.get_train_dataloader()))
            model = trainer.accelerator.prepare_model(trainer.model)   # as trainer.train() does (autocast when bf16)
            model.train()
            trainer.compute_loss(model, inputs).backward()
            return _flat_grad(trainer.model)

    exact = ours(torch.float64)
    rel = lambda g: float((g - exact).norm() / exact.norm())  # noqa: E731
    return {"ours_float32": rel(ours(torch.float32)), "trl_float32": rel(trl(False)),
            "trl_bf16_default": rel(trl(True))}
