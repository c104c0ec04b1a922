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

__all__ = ["TOKEN_STRINGS", "make_tokenizer", "to_text", "run_trl_dpo"]

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


def run_trl_dpo(ref_model, pairs, *, steps: int, batch: int, lr: float, beta: float, seed: int):
    """``steps`` steps of ``DPOTrainer(loss_type="sigmoid")`` on ``pairs`` in order (no gradient clipping, as
    in our trainer); returns (per-step losses, CPU seconds of ``trainer.train()``)."""
    import torch
    from datasets import Dataset
    from torch.utils.data import SequentialSampler
    from trl import DPOConfig, DPOTrainer

    losses = []

    class SequentialDPO(DPOTrainer):
        def _get_train_sampler(self, *args, **kwargs):
            return SequentialSampler(self.train_dataset)

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            out = super().compute_loss(model, inputs, return_outputs=return_outputs,
                                       num_items_in_batch=num_items_in_batch)
            loss = out[0] if return_outputs else out
            losses.append(float(loss.detach()))
            return out

    rows = {"prompt": [to_text(p.prompt) for p in pairs],
            "chosen": [" " + to_text(p.chosen) for p in pairs],
            "rejected": [" " + to_text(p.rejected) for p in pairs]}
    dataset = Dataset.from_dict(rows)
    model, ref = copy.deepcopy(ref_model), copy.deepcopy(ref_model)
    with tempfile.TemporaryDirectory() as tmp:
        args = DPOConfig(output_dir=tmp, per_device_train_batch_size=batch, learning_rate=lr, max_steps=steps,
                         beta=beta, loss_type=["sigmoid"], lr_scheduler_type="constant", warmup_steps=0,
                         weight_decay=0.0, optim="adamw_torch", logging_steps=1, report_to=[], save_strategy="no",
                         seed=seed, use_cpu=True, dataloader_num_workers=0, disable_tqdm=True, max_length=None,
                         gradient_accumulation_steps=1, max_grad_norm=0.0)
        trainer = SequentialDPO(model=model, ref_model=ref, args=args, train_dataset=dataset,
                                processing_class=make_tokenizer())
        torch.manual_seed(seed)
        start = time.process_time()
        trainer.train()
        wall = time.process_time() - start
    return np.asarray(losses[:steps]), wall
