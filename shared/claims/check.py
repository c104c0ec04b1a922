"""Claims: loading, per-scale thresholds, and evaluation of one claim against a metrics file."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from shared.config import SCALES, load_yaml, validate
from shared.results import get_key, read_metrics

__all__ = ["REPRODUCED", "NOT_REPRODUCED", "MISSING", "NOT_EVALUATED", "SKIPPED", "Verdict", "load_claims", "check_for_scale",
           "expected_for_scale", "evaluate_check", "evaluate_claim", "format_check"]

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not_reproduced"
MISSING = "missing_metric"
NOT_EVALUATED = "not_evaluated"  # the metric is null: the run could not measure it (e.g. no LLM backend)
SKIPPED = "skipped"  # the claim lists this scale under skip_at (smoke only: its settings cannot produce the metric)


@dataclass(frozen=True)
class Verdict:
    """Evaluation of one claim at one scale: the metric value (and spread), the check, the verdict."""

    claim_id: str
    value: object
    spread: object
    check: dict
    verdict: str
    expected: str
    detail: str = ""

    @property
    def matches_expected(self) -> bool:
        return self.verdict == self.expected


def load_claims(path: str | Path) -> list[dict]:
    """Load ``claims.yaml``, validated against ``workflow/schemas/claims.schema.json``; ids must be unique."""
    claims = validate(load_yaml(path), "claims.schema.json", where=str(path))
    seen = set()
    for claim in claims:
        if claim["id"] in seen:
            from shared.config import ConfigError

            raise ConfigError(f"{path}: key 'id': duplicate claim id {claim['id']!r}")
        seen.add(claim["id"])
    return claims


def _for_scale(default, by_scale: dict | None, scale: str):
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {list(SCALES)}")
    return (by_scale or {}).get(scale, default)


def check_for_scale(claim: dict, scale: str) -> dict:
    """The check that applies at ``scale`` (``check_by_scale`` overrides ``check``)."""
    return _for_scale(claim["check"], claim.get("check_by_scale"), scale)


def expected_for_scale(claim: dict, scale: str) -> str:
    """The expected verdict at ``scale``; a per-scale mapping falls back to its ``quick`` entry."""
    expected = claim["expected"]
    if isinstance(expected, str):
        return expected
    return expected.get(scale, expected.get("quick", REPRODUCED))


def evaluate_check(value, check: dict) -> bool:
    """True when ``value`` satisfies ``check``.

    Ops: ``<, <=, >, >=`` against ``value``; ``==`` (exact, also for strings and booleans); ``between``
    [lo, hi] inclusive; ``within``: |value - target| <= abs_tol or <= rel_tol * |target|.
    """
    op, target = check["op"], check.get("value")
    if op == "==":
        return value == target
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"operator {op!r} needs a number, got {value!r}")
    if not math.isfinite(value):
        return False
    if op == "<":
        return value < target
    if op == "<=":
        return value <= target
    if op == ">":
        return value > target
    if op == ">=":
        return value >= target
    if op == "between":
        lo, hi = target
        return lo <= value <= hi
    if op == "within":
        err = abs(value - target)
        ok_abs = "abs_tol" in check and err <= check["abs_tol"]
        ok_rel = "rel_tol" in check and err <= check["rel_tol"] * abs(target)
        return ok_abs or ok_rel
    raise ValueError(f"unknown operator {op!r}")


def format_check(check: dict) -> str:
    """Human-readable threshold, e.g. ``<= -1.8`` or ``within 1e-3 (rel) of 4``."""
    op, v = check["op"], check.get("value")
    if op == "between":
        return f"in [{v[0]:g}, {v[1]:g}]"
    if op == "within":
        tol = " or ".join(f"{check[k]:g} ({k[:3]})" for k in ("abs_tol", "rel_tol") if k in check)
        return f"within {tol} of {v:g}"
    return f"{op} {v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else f"{op} {v}"


def _lookup(results_dir: Path, ref: dict):
    path = results_dir / ref["file"]
    if not path.is_file():
        raise KeyError(f"metrics file {ref['file']} not found")
    return get_key(read_metrics(path), ref["key"])


def evaluate_claim(claim: dict, results_dir: str | Path, scale: str) -> Verdict:
    """Evaluate one claim on the metrics under ``results_dir`` (``results/<scale>/<slug>``)."""
    results_dir = Path(results_dir)
    check, expected = check_for_scale(claim, scale), expected_for_scale(claim, scale)
    if scale in claim.get("skip_at", ()):
        return Verdict(claim["id"], None, None, check, SKIPPED, expected, f"not run at {scale} scale (skip_at)")
    try:
        value = _lookup(results_dir, claim["metric"])
    except KeyError as exc:
        return Verdict(claim["id"], None, None, check, MISSING, expected, str(exc).strip("'\""))
    if value is None:
        return Verdict(claim["id"], None, None, check, NOT_EVALUATED, expected,
                       "the experiment recorded no value (null) for this metric")
    spread = None
    if "spread" in claim:
        try:
            spread = _lookup(results_dir, claim["spread"])
        except KeyError as exc:
            return Verdict(claim["id"], value, None, check, MISSING, expected, str(exc).strip("'\""))
    try:
        ok = evaluate_check(value, check)
    except TypeError as exc:
        return Verdict(claim["id"], value, spread, check, MISSING, expected, str(exc))
    return Verdict(claim["id"], value, spread, check, REPRODUCED if ok else NOT_REPRODUCED, expected)
