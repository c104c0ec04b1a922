"""Answer matching and program-output parsing (spec "Answer matching", reconstructed).

A numeric prediction p matches the gold g when |p - g| <= rel_tol * max(1, |g|); with ``rounding="integer"``
(the question asks for the nearest integer / dollar / whole number) p is rounded half away from zero first.
Gold ``None`` means "No Best Solution" and is matched by the status strings "infeasible" or "unbounded".
"""
from __future__ import annotations

import math
import re

__all__ = ["answers_match", "asks_rounding", "parse_final_line", "STATUS_STRINGS"]

STATUS_STRINGS = ("infeasible", "unbounded")
_ROUND_RE = re.compile(r"nearest\s+(whole\s+)?(integer|dollar|whole number|cent|unit|number)|round(ed)?\s+(to|the)|"
                       r"whole number", re.I)


def _round_half_away(x: float) -> float:
    return math.copysign(math.floor(abs(x) + 0.5), x)


def answers_match(predicted, gold, *, rel_tol: float = 1e-4, rounding: str | None = None) -> bool:
    """True when ``predicted`` matches ``gold``: |p - g| <= rel_tol * max(1, |g|).

    ``predicted``: a number, "infeasible"/"unbounded", or None (no answer: never matches). ``gold``: a number,
    or None for "No Best Solution" (matched by either status string). ``rounding``: None or "integer".
    Raises ``ValueError`` for NaN, a negative ``rel_tol``, an unknown status or rounding mode.
    """
    if isinstance(rel_tol, bool) or not isinstance(rel_tol, (int, float)) or not rel_tol >= 0:
        raise ValueError(f"rel_tol must be a non-negative number, got {rel_tol!r}")
    if rounding not in (None, "integer"):
        raise ValueError(f"rounding must be None or 'integer', got {rounding!r}")
    if gold is not None:
        if isinstance(gold, bool) or not isinstance(gold, (int, float)) or math.isnan(gold):
            raise ValueError(f"gold must be a number (not NaN) or None, got {gold!r}")
    if predicted is None:
        return False
    if isinstance(predicted, str):
        if predicted not in STATUS_STRINGS:
            raise ValueError(f"predicted status must be one of {STATUS_STRINGS}, got {predicted!r}")
        return gold is None
    if isinstance(predicted, bool) or not isinstance(predicted, (int, float)) or math.isnan(predicted):
        raise ValueError(f"predicted must be a number (not NaN), a status string or None, got {predicted!r}")
    if gold is None or math.isinf(predicted):
        return False
    p = _round_half_away(float(predicted)) if rounding == "integer" else float(predicted)
    return abs(p - gold) <= rel_tol * max(1.0, abs(gold))


def asks_rounding(question: str) -> str | None:
    """"integer" when the question asks for a rounded answer (nearest integer / dollar / whole number)."""
    return "integer" if _ROUND_RE.search(question or "") else None


def parse_final_line(stdout: str):
    """Parse the program contract's last non-empty line.

    Returns ("ok", value) for ``OBJECTIVE: <float>``, ("infeasible"|"unbounded", None) for
    ``STATUS: ...``, or ("error", None) for any other ending.
    """
    lines = [line.strip() for line in (stdout or "").splitlines() if line.strip()]
    if not lines:
        return "error", None
    last = lines[-1]
    if last.startswith("OBJECTIVE:"):
        try:
            value = float(last.split(":", 1)[1])
        except ValueError:
            return "error", None
        return ("ok", value) if math.isfinite(value) else ("error", None)
    if last in ("STATUS: infeasible", "STATUS: unbounded"):
        return last.split(": ")[1], None
    return "error", None
