"""Answer matching and program-output parsing (spec "Answer matching", reconstructed).

A numeric prediction p matches the gold g when |p - g| <= rel_tol * max(1, |g|). When the question asks for a
rounded answer, p also matches when it does so after rounding half away from zero to the precision the question
names (a gold answer that is itself not rounded as asked, e.g. MAMO EasyLP item 600, is still matched by the
exact optimum):

    "nearest integer / dollar / whole number / unit" (and a bare "rounded off")  -> 0 decimal places,
    "nearest cent"                                                              -> 2 decimal places,
    "rounded to k decimal places"                                               -> k decimal places,
    "nearest ten / hundred / thousand (dollars)"                                -> -1 / -2 / -3.

A statement that the *variables* are whole numbers ("allocations must be whole numbers") is not a rounding
instruction for the answer. Gold ``None`` means "No Best Solution" and is matched by the status strings
"infeasible" or "unbounded".
"""
from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["answers_match", "asks_rounding", "round_half_away", "parse_final_line", "STATUS_STRINGS"]

STATUS_STRINGS = ("infeasible", "unbounded")
_WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_POWERS = {"ten": -1, "tens": -1, "hundred": -2, "hundreds": -2, "thousand": -3, "thousands": -3,
           "million": -6, "millions": -6}
_ROUND = r"\bround(?:ed|ing)?\b"
# An instruction about the answer: "round(ed) ... [to] [the] nearest ..." within one clause.
_NEAREST_RE = re.compile(_ROUND + r"[^.?!;\n]{0,40}?\bnearest\s+(?:whole\s+)?([a-z]+)", re.I)
_DECIMALS_RE = re.compile(_ROUND + r"[^.?!;\n]{0,40}?\b(\d+|" + "|".join(_WORD_NUMBERS) + r")\s+decimal\s+places?\b",
                          re.I)
_BARE_RE = re.compile(r"\brounded\s+(?:off|up)\b(?!\s+to\b)", re.I)


def round_half_away(x: float, decimals: int = 0) -> float:
    """``x`` rounded half away from zero to ``decimals`` places (negative: tens, hundreds, ...).

    Decimal arithmetic on the shortest repr of ``x``, so 117.145 -> 117.15 and 2.675 -> 2.68 as written.
    """
    quantum = Decimal(1).scaleb(-decimals)
    return float(Decimal(repr(float(x))).quantize(quantum, rounding=ROUND_HALF_UP)) if decimals >= 0 else \
        float((Decimal(repr(float(x))) / quantum).quantize(Decimal(1), rounding=ROUND_HALF_UP) * quantum)


def _decimals_of(rounding) -> int | None:
    if rounding is None:
        return None
    if rounding == "integer":
        return 0
    if isinstance(rounding, bool) or not isinstance(rounding, int):
        raise ValueError(f"rounding must be None, 'integer' or a number of decimal places (int), got {rounding!r}")
    return rounding


def answers_match(predicted, gold, *, rel_tol: float = 1e-4, rounding: str | int | None = None) -> bool:
    """True when ``predicted`` matches ``gold``: |p - g| or |round(p) - g| <= rel_tol * max(1, |g|).

    ``predicted``: a number, "infeasible"/"unbounded", or None (no answer: never matches). ``gold``: a number,
    or None for "No Best Solution" (matched by either status string). ``rounding``: None (no rounding),
    "integer" (= 0) or the number of decimal places to round p to first (negative for tens, hundreds, ...), as
    returned by :func:`asks_rounding`. Raises ``ValueError`` for NaN, a negative ``rel_tol``, an unknown status
    or rounding mode.
    """
    if isinstance(rel_tol, bool) or not isinstance(rel_tol, (int, float)) or not rel_tol >= 0:
        raise ValueError(f"rel_tol must be a non-negative number, got {rel_tol!r}")
    decimals = _decimals_of(rounding)
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
    tol = rel_tol * max(1.0, abs(gold))
    if abs(float(predicted) - gold) <= tol:
        return True
    return decimals is not None and abs(round_half_away(predicted, decimals) - gold) <= tol


def asks_rounding(question: str) -> int | None:
    """The number of decimal places the question asks the answer to be rounded to, or None.

    0 for "nearest integer / dollar / whole number / unit ..." and a bare "rounded off" or "rounded up", 2 for
    "nearest cent", k for "k decimal places", -1/-2/-3 for "nearest ten / hundred / thousand". Words such as
    "around the" or "allocations are whole numbers" are not rounding instructions.
    """
    text = question or ""
    m = _DECIMALS_RE.search(text)
    if m:
        word = m.group(1).lower()
        return int(word) if word.isdigit() else _WORD_NUMBERS[word]
    m = _NEAREST_RE.search(text)
    if m:
        unit = m.group(1).lower()
        if unit in ("cent", "cents", "penny", "pennies"):
            return 2
        if unit in ("tenth", "tenths"):
            return 1
        if unit in ("hundredth", "hundredths"):
            return 2
        return _POWERS.get(unit, 0)
    return 0 if _BARE_RE.search(text) else None


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
