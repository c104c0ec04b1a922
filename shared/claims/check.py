"""Claims: loading (schema v2), per-scale thresholds, and the decision of one claim (see shared.claims)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from shared.claims.stats import FAIL, MIN_SAMPLES, PASS, UNDECIDED, decide_interval, mean_interval, snap_to_threshold
from shared.config import SCALES, ConfigError, load_yaml, validate
from shared.results import get_key, read_metrics

__all__ = ["REPRODUCED", "REPRODUCED_REDUCED", "NOT_REPRODUCED", "INCONCLUSIVE", "NOT_EVALUATED", "CANNOT_FAIL",
           "PASSES", "FAILS", "MISSING", "SKIPPED", "PAPER_VERDICTS", "CHECK_VERDICTS", "Outcome", "Verdict",
           "load_claims_file", "load_claims", "check_for_scale", "expected_for_scale", "evaluate_check",
           "evaluate_claim", "claim_experiments", "format_check", "verdict_label"]

REPRODUCED = "reproduced"
REPRODUCED_REDUCED = "reproduced_reduced"
NOT_REPRODUCED = "not_reproduced"
INCONCLUSIVE = "inconclusive"
NOT_EVALUATED = "not_evaluated"
CANNOT_FAIL = "cannot_fail"
PASSES = "passes"
FAILS = "fails"
MISSING = "missing_metric"  # a gate failure at every scale
SKIPPED = "skipped"  # the claim lists this scale under skip_at (smoke only)

PAPER_VERDICTS = (REPRODUCED, REPRODUCED_REDUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_EVALUATED, CANNOT_FAIL)
CHECK_VERDICTS = (PASSES, FAILS, INCONCLUSIVE, NOT_EVALUATED)
_LABELS = {REPRODUCED: "reproduced", REPRODUCED_REDUCED: "reproduced-reduced", NOT_REPRODUCED: "not reproduced",
           INCONCLUSIVE: "inconclusive", NOT_EVALUATED: "not evaluated", CANNOT_FAIL: "cannot fail",
           PASSES: "passes", FAILS: "fails", MISSING: "missing metric", SKIPPED: "not run at this scale"}


def verdict_label(verdict: str) -> str:
    """The words a report prints for a verdict (``reproduced_reduced`` -> ``reproduced-reduced``)."""
    return _LABELS[verdict]


@dataclass(frozen=True)
class Outcome:
    """A check evaluated on one metric reference: the value (mean for samples), its interval, the result."""

    value: object
    lo: float | None = None
    hi: float | None = None
    n: int | None = None
    result: str = UNDECIDED  # pass | fail | inconclusive
    interval: str | None = None  # "t" or "bootstrap" when decided on samples

    def describe(self) -> str:
        from shared.claims.report import fmt_value

        if self.n is None:
            return fmt_value(self.value)
        return f"{fmt_value(self.value)} [{fmt_value(self.lo)}, {fmt_value(self.hi)}] (n={self.n}, {self.interval})"


@dataclass(frozen=True)
class Verdict:
    """The decision of one claim at one scale."""

    claim_id: str
    kind: str
    verdict: str
    expected: str
    check: dict
    outcome: Outcome | None = None
    spread: object = None
    control: Outcome | None = None
    control_name: str | None = None
    detail: str = ""
    not_run: bool = False  # not evaluated because its experiment was not run at this scale (claims' not_run)

    @property
    def matches_expected(self) -> bool:
        return self.verdict == self.expected

    @property
    def value(self):
        return None if self.outcome is None else self.outcome.value

    @property
    def control_flips(self) -> bool | None:
        """True when the control's outcome is a fail (the claim does not hold under the control)."""
        return None if self.control is None else self.control.result == FAIL


def load_claims_file(path: str | Path) -> dict:
    """Load a v2 ``claims.yaml`` (validated against ``claims.schema.json``); ConfigError names the problem."""
    path = Path(path)
    data = load_yaml(path)
    if isinstance(data, list):
        raise ConfigError(f"{path}: key '<top level>': a list of claims is the v1 format; audit v2 wants "
                          "{version: 2, reduced: {...}, claims: [...]} (see shared/claims/__init__.py)")
    if isinstance(data, dict) and isinstance(data.get("official_not_addressed"), dict):  # YAML reads 3: as an int
        data["official_not_addressed"] = {str(k): v for k, v in data["official_not_addressed"].items()}
    doc = validate(data, "claims.schema.json", where=str(path))
    seen = set()
    for i, claim in enumerate(doc["claims"]):
        where = f"{path}: key 'claims.{i}'"
        if claim["id"] in seen:
            raise ConfigError(f"{where}.id: duplicate claim id {claim['id']!r}")
        seen.add(claim["id"])
        _cross_field_rules(claim, where)
        allowed = PAPER_VERDICTS if claim["kind"] == "paper" else CHECK_VERDICTS
        expected = claim["expected"]
        for scale, verdict in (expected.items() if isinstance(expected, dict) else [("all", expected)]):
            if verdict not in allowed:
                raise ConfigError(f"{where}.expected: {verdict!r} (scale {scale}) is not a verdict of a "
                                  f"{claim['kind']!r} claim; choose one of {list(allowed)}")
    return doc


def _cross_field_rules(claim: dict, where: str) -> None:
    """The rules the schema cannot state with a clear message; ConfigError naming the claim's key."""
    if ("metric" in claim) == ("samples" in claim):
        raise ConfigError(f"{where}: a claim reads exactly one of 'metric' (a number) or 'samples' (a list)")
    if "samples" in claim and "spread" in claim:
        raise ConfigError(f"{where}.spread: a claim on samples shows its interval; 'spread' is for 'metric' only")
    if "interval" in claim and "samples" not in claim:
        raise ConfigError(f"{where}.interval: only a claim on 'samples' is decided by an interval")
    if "control" in claim and "no_control" in claim:
        raise ConfigError(f"{where}: a claim has either a 'control' or a 'no_control' reason, not both")
    if claim["kind"] == "paper" and "control" not in claim and "no_control" not in claim:
        raise ConfigError(f"{where}: a paper claim names a 'control' (a variant under which it must not hold) "
                          f"or says in 'no_control' why none exists")
    if claim["origin"] == "theory" and claim.get("paper_value") is not None and "theory_value" not in claim:
        raise ConfigError(f"{where}.paper_value: a threshold of origin 'theory' puts the theory's number in "
                          f"'theory_value'; 'paper_value' is only a number the paper prints")
    for holder, name in ([(claim["control"], "control")] if "control" in claim else []) + [
            (pre, f"requires.{i}") for i, pre in enumerate(claim.get("requires", []))]:
        if ("metric" in holder) == ("samples" in holder):
            raise ConfigError(f"{where}.{name}: reads exactly one of 'metric' or 'samples'")


def load_claims(path: str | Path) -> list[dict]:
    """The list of claims of a v2 ``claims.yaml``."""
    return load_claims_file(path)["claims"]


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
    default = REPRODUCED if claim.get("kind", "paper") == "paper" else PASSES
    return expected.get(scale, expected.get("quick", default))


def evaluate_check(value, check: dict) -> bool:
    """True when the number (or string/bool for ``==``) ``value`` satisfies ``check``.

    Ops: ``<, <=, >, >=`` against ``value``; ``==`` (exact); ``between`` [lo, hi] inclusive; ``within``:
    |value - target| <= abs_tol or <= rel_tol * |target|. A non-finite number never satisfies a check. A
    number within rounding of a threshold (``TIE_RTOL``) is a tie with it: ``>=`` passes it and ``>`` fails it.
    """
    op, target = check["op"], check.get("value")
    if op == "==":
        return value == target
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"operator {op!r} needs a number, got {value!r}")
    if not math.isfinite(value):
        return False
    if op in ("<", "<=", ">", ">="):
        value = snap_to_threshold(value, target)
        return {"<": value < target, "<=": value <= target, ">": value > target, ">=": value >= target}[op]
    if op == "between":
        value = snap_to_threshold(snap_to_threshold(value, target[0]), target[1])
        return target[0] <= value <= target[1]
    if op == "within":
        err = abs(value - target)
        return ("abs_tol" in check and err <= check["abs_tol"]) or (
            "rel_tol" in check and err <= check["rel_tol"] * abs(target))
    raise ValueError(f"unknown operator {op!r}")


def format_check(check: dict) -> str:
    """Human-readable threshold, e.g. ``<= -1.8`` or ``within 0.001 (rel) of 4``."""
    op, v = check["op"], check.get("value")
    if op == "between":
        return f"in [{v[0]:g}, {v[1]:g}]"
    if op == "within":
        tol = " or ".join(f"{check[k]:g} ({k[:3]})" for k in ("abs_tol", "rel_tol") if k in check)
        return f"within {tol} of {v:g}"
    return f"{op} {v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else f"{op} {v}"


class _Missing(KeyError):
    pass


def _lookup(results_dir: Path, ref: dict):
    path = results_dir / ref["file"]
    if not path.is_file():
        raise _Missing(f"metrics file {ref['file']} not found")
    try:
        return get_key(read_metrics(path), ref["key"])
    except KeyError as exc:
        raise _Missing(f"{ref['file']}: {str(exc).strip(chr(39) + chr(34))}") from None


def _outcome(holder: dict, results_dir: Path, check: dict, interval: str) -> Outcome | None:
    """The check evaluated on ``holder``'s ``metric`` (a number) or ``samples`` (a list); None for a null metric.

    Raises _Missing when the file or key is absent and TypeError when the value has the wrong type.
    """
    if "samples" in holder:
        values = _lookup(results_dir, holder["samples"])
        if values is None:
            return None
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise TypeError(f"samples {holder['samples']['key']!r} must be a non-empty list of numbers, "
                            f"got {values!r}")
        mean, lo, hi = mean_interval(values, interval)
        return Outcome(mean, lo, hi, len(values), decide_interval(lo, hi, check), interval)
    value = _lookup(results_dir, holder["metric"])
    if value is None:
        return None
    return Outcome(value, result=PASS if evaluate_check(value, check) else FAIL)


def _is_reduced(claim: dict, scale: str, reduced: dict) -> bool:
    return scale in reduced and scale not in claim.get("equivalent_at", ())


def _failed_precondition(claim: dict, results_dir: Path) -> str | None:
    """Why a precondition of ``claim`` (``requires``) is not met, or None when all are."""
    for pre in claim.get("requires", ()):
        try:
            out = _outcome(pre, results_dir, pre["check"], "t")
        except (_Missing, TypeError) as exc:
            return f"precondition {pre['name']!r} could not be read: {exc}"
        if out is None or out.result != PASS:
            shown = "null" if out is None else out.describe()
            return f"precondition {pre['name']!r} not met: {shown}, needs {format_check(pre['check'])}"
    return None


def _not_run(claim: dict, not_run: dict, scale: str, base: dict) -> Verdict | None:
    """``not evaluated`` when a metric is missing because its experiment is listed in ``not_run``."""
    skipped = sorted(claim_experiments(claim) & set(not_run))
    if not skipped:
        return None
    why = "; ".join(f"{name}: {not_run[name]}" for name in skipped)
    return Verdict(verdict=NOT_EVALUATED, not_run=True, detail=f"not run at {scale} scale ({why})", **base)


def _decide(claim: dict, out: Outcome, scale: str, reduced: dict) -> tuple[str, str]:
    """Verdict and detail from the main outcome (before the control is considered)."""
    few = out.n is not None and out.n < MIN_SAMPLES and scale != "smoke"
    detail = f"only {out.n} samples (< {MIN_SAMPLES})" + (f": {claim['few_samples']}" if "few_samples" in claim
                                                          else "") if few else ""
    if claim["kind"] != "paper":
        return {PASS: PASSES, FAIL: FAILS, UNDECIDED: INCONCLUSIVE}[out.result], detail
    if out.result == UNDECIDED:
        return INCONCLUSIVE, detail
    if out.result == FAIL:
        return (INCONCLUSIVE if few else NOT_REPRODUCED), detail
    if few or _is_reduced(claim, scale, reduced):
        if not few:
            detail = f"smaller than the paper: {reduced[scale]}"
        return REPRODUCED_REDUCED, detail
    return REPRODUCED, detail


def claim_experiments(claim: dict) -> set[str]:
    """The experiments whose metrics ``claim`` reads (its metric or samples, control, spread, preconditions)."""
    refs = [claim.get(k) for k in ("metric", "samples", "spread")]
    refs += [claim.get("control", {}).get(k) for k in ("metric", "samples")]
    refs += [pre.get(k) for pre in claim.get("requires", ()) for k in ("metric", "samples")]
    return {ref["file"].split("/", 1)[0] for ref in refs if ref}


def evaluate_claim(claim: dict, results_dir: str | Path, scale: str, *, reduced: dict | None = None,
                   not_run: dict | None = None) -> Verdict:
    """Decide one claim on the metrics under ``results_dir`` (``results/<scale>/<slug>``).

    ``reduced`` is the claims file's top-level mapping of scales smaller than the paper's; ``not_run`` its
    mapping ``{experiment: reason}`` of experiments deliberately not run at this scale (``not_run[scale]``): a
    claim that reads the missing metrics of one of them is not evaluated, with the reason.
    """
    results_dir, reduced, not_run = Path(results_dir), reduced or {}, not_run or {}
    check, expected = check_for_scale(claim, scale), expected_for_scale(claim, scale)
    interval = claim.get("interval", "t")
    base = dict(claim_id=claim["id"], kind=claim["kind"], expected=expected, check=check)
    if scale in claim.get("skip_at", ()):
        return Verdict(verdict=SKIPPED, detail=f"not run at {scale} scale (skip_at)", **base)
    try:
        out = _outcome(claim, results_dir, check, interval)
        spread = _lookup(results_dir, claim["spread"]) if "spread" in claim else None
    except _Missing as exc:
        return _not_run(claim, not_run, scale, base) or Verdict(verdict=MISSING, detail=str(exc), **base)
    except TypeError as exc:
        return Verdict(verdict=MISSING, detail=str(exc), **base)
    control, control_name, control_problem = None, None, ""
    if "control" in claim:  # evaluated whatever the rest gives, so that the report always shows it
        control_name = claim["control"]["name"]
        try:
            control = _outcome(claim["control"], results_dir, check, interval)
        except _Missing as exc:
            return _not_run(claim, not_run, scale, base) or Verdict(
                verdict=MISSING, outcome=out, spread=spread, control_name=control_name,
                detail=f"control {control_name!r}: {exc}", **base)
        except TypeError as exc:
            return Verdict(verdict=MISSING, outcome=out, spread=spread, control_name=control_name,
                           detail=f"control {control_name!r}: {exc}", **base)
        if control is None:
            control_problem = f"control {control_name!r} recorded no value"
    controlled = dict(spread=spread, control=control, control_name=control_name)
    failed = _failed_precondition(claim, results_dir)
    if failed:
        return Verdict(verdict=NOT_EVALUATED, outcome=out, detail=failed, **controlled, **base)
    if out is None:
        return Verdict(verdict=NOT_EVALUATED, detail="the experiment recorded no value (null) for this metric",
                       **controlled, **base)
    verdict, detail = _decide(claim, out, scale, reduced)
    detail = "; ".join(x for x in (detail, control_problem) if x)
    if claim["kind"] == "paper" and "control" in claim and verdict in (REPRODUCED, REPRODUCED_REDUCED) and (
            control is None or control.result != FAIL):
        verdict = CANNOT_FAIL
        detail = "; ".join(x for x in (detail, f"the claim also holds (or is not refuted) under its control "
                                                f"{control_name!r}, so this run cannot tell") if x)
    return Verdict(verdict=verdict, outcome=out, spread=spread, control=control, control_name=control_name,
                   detail=detail, **base)
