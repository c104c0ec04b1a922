"""Metrics of CIRBench: unbiased Metric@k and the Analysis scores.

Metric@k (Chen et al. 2021, the pass@k estimator) with n samples of which c pass:

    Metric@k = 1 - C(n - c, k) / C(n, k).

Analysis: EM = every asked field equal (lists compared as sets); micro-F1 over (field, element) pairs.
"""
from __future__ import annotations

import json
import re
from math import comb

__all__ = ["pass_at_k", "analysis_scores", "parse_analysis_reply"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator 1 - C(n-c, k)/C(n, k). Raises ValueError unless 0 <= c <= n and 1 <= k <= n."""
    for name, v in (("n", n), ("c", c), ("k", k)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{name} must be an integer, got {v!r}")
    if not 0 <= c <= n:
        raise ValueError(f"c must satisfy 0 <= c <= n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k must satisfy 1 <= k <= n, got k={k}, n={n}")
    return 1.0 - comb(n - c, k) / comb(n, k)


def _elements(field: str, value) -> set:
    if field == "loops":
        out = set()
        for lp in value if isinstance(value, list) else []:
            if isinstance(lp, dict):
                out.add((field, str(lp.get("header")), tuple(sorted(map(str, lp.get("latches", []) or []))),
                         lp.get("depth")))
        return out
    if isinstance(value, list):
        return {(field, str(v)) for v in value}
    return {(field, value)}


def analysis_scores(pred: dict | None, gold: dict) -> tuple[bool, float]:
    """(EM, micro-F1) of one Analysis answer; a missing or unparsable answer scores (False, 0)."""
    if not isinstance(pred, dict):
        return False, 0.0
    gold_el, pred_el = set(), set()
    em = True
    for f, g in gold.items():
        ge, pe = _elements(f, g), _elements(f, pred.get(f, None)) if f in pred else set()
        em &= ge == pe
        gold_el |= ge
        pred_el |= pe
    tp = len(gold_el & pred_el)
    f1 = 0.0 if tp == 0 else 2 * tp / (len(gold_el) + len(pred_el))
    return bool(em), float(f1)


def parse_analysis_reply(reply: str) -> dict | None:
    """The first ```json block (or the whole reply) as a dict; None if it does not parse."""
    m = re.search(r"```json\s*\n(.*?)```", reply or "", re.S)
    try:
        out = json.loads(m.group(1) if m else reply)
    except (TypeError, ValueError):
        return None
    return out if isinstance(out, dict) else None
