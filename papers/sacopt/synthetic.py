"""Synthetic stand-ins of the five benchmarks, for the smoke scale (no network, no data mirror).

Written by the ``sacopt_data_synthetic`` rule under ``data/sacopt/synthetic/`` in the public files' own formats
and names (JSON Lines with ``en_question``/``en_answer``; a ``ComplexOR/<problem>/`` folder with
``description.txt``, ``sample.json`` and ``gt_model.txt``), so that the loaders of :mod:`papers.sacopt.datasets`
read them unchanged. The items are the project's generated problems (:func:`papers.sacopt.problems.
generate_problems`, gold answer = the HiGHS optimum, rounded to 4 decimals), one item per file asking for the
nearest integer, one "No Best Solution" item per file, and a ComplexOR 0/1 knapsack whose recorded output is the
brute-force optimum over all item subsets. The files are a pure function of the code: the loader checks them
byte for byte against :func:`synthetic_files` (the counterpart of the public files' SHA-256 digests).
These are NOT the benchmarks; quick and full read the public files.
"""
from __future__ import annotations

import argparse
import itertools
import json
from functools import lru_cache
from pathlib import Path


from shared import seeding
from shared.results import atomic_write_text

__all__ = ["SYNTHETIC_SEED", "N_ITEMS", "synthetic_files", "write_synthetic", "knapsack_brute_force"]

SYNTHETIC_SEED = 20260715
N_ITEMS = 4
_JSONL = {"industryor": "IndustryOR_fixedV2.json", "complexlp": "MAMO_ComplexLP_fixed.jsonl",
          "nl4opt": "NL4OPT.json", "easylp": "MAMO_EasyLP.json"}


def knapsack_brute_force(values, weights, capacity) -> float:
    """max over subsets S with sum_{i in S} w_i <= capacity of sum_{i in S} v_i (enumerates all 2^n subsets)."""
    best = 0.0
    for take in itertools.product((0, 1), repeat=len(values)):
        if sum(t * w for t, w in zip(take, weights)) <= capacity:
            best = max(best, float(sum(t * v for t, v in zip(take, values))))
    return best


def _jsonl_text(name: str, k: int) -> str:
    from papers.sacopt.problems import generate_problems

    probs = generate_problems(N_ITEMS - 1, seed=SYNTHETIC_SEED + k, verify=False)
    lines = []
    for i, p in enumerate(probs):
        text = p.text + (" Round the answer to the nearest integer." if i == 0 else "")
        answer = round(p.answer) if i == 0 else round(p.answer, 4)
        lines.append({"id": i + 1, "en_question": text, "en_answer": repr(float(answer))})
    lines.append({"id": N_ITEMS, "en_question": f"Synthetic {name} item: maximise x subject to x >= 1 and x <= 0.",
                  "en_answer": "No Best Solution"})
    return "".join(json.dumps(rec, sort_keys=True) + "\n" for rec in lines)


def _knapsack_files() -> dict[str, str]:
    rng = seeding.generator(SYNTHETIC_SEED, "sacopt-synthetic-knapsack")
    values = [int(v) for v in rng.integers(10, 100, size=6)]
    weights = [int(w) for w in rng.integers(5, 40, size=6)]
    capacity = int(sum(weights) // 2)
    sample = [{"input": {"item_values": values, "item_weights": weights, "max_weight_knapsack": capacity},
               "output": [knapsack_brute_force(values, weights, capacity)]}]
    base = "ComplexOR/knapsack_optimization/"
    return {base + "description.txt": "Synthetic 0/1 knapsack: choose items of the given values and weights to "
                                      "maximise the total value with total weight at most the capacity.\n",
            base + "sample.json": json.dumps(sample, indent=4) + "\n",
            base + "gt_model.txt": "maximize sum_i v_i x_i s.t. sum_i w_i x_i <= C, x_i in {0, 1}\n"}


@lru_cache(maxsize=1)
def synthetic_files() -> dict[str, bytes]:
    """Relative path -> bytes of every synthetic file (deterministic)."""
    texts = {fname: _jsonl_text(name, k) for k, (name, fname) in enumerate(sorted(_JSONL.items()))}
    texts.update(_knapsack_files())
    return {rel: t.encode("utf-8") for rel, t in sorted(texts.items())}


def write_synthetic(marker: str | Path) -> Path:
    """Write every synthetic file beside ``marker`` (``<root>/.complete``), then the marker."""
    marker = Path(marker)
    for rel, data in synthetic_files().items():
        atomic_write_text(marker.parent / rel, data.decode("utf-8"))
    atomic_write_text(marker, "ok\n")
    return marker


if __name__ == "__main__":  # pragma: no cover - the data rule
    ap = argparse.ArgumentParser(description="write the synthetic smoke benchmarks")
    ap.add_argument("marker", help="path of the .complete marker inside the output folder")
    write_synthetic(ap.parse_args().marker)
