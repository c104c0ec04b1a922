"""The official scored claims of the ICML 2026 reproducibility challenge, and our combined verdict on each.

``official_claims.json`` beside this module is a copy of the challenge's anchored claims (slug -> {openreview,
source, claims: [{index, text, cites}]}), so that reports render the same on every machine; a test keeps it
equal to the project's reference copy when that is present.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from shared.claims.check import (CANNOT_FAIL, INCONCLUSIVE, NOT_EVALUATED, NOT_REPRODUCED, REPRODUCED,
                                 REPRODUCED_REDUCED, Verdict)
from shared.config import ConfigError

__all__ = ["OFFICIAL_FILE", "official_claims", "OfficialRow", "combine", "official_rows", "coverage_problems"]

OFFICIAL_FILE = Path(__file__).with_name("official_claims.json")
NOT_ADDRESSED = "not addressed"


@lru_cache(maxsize=None)
def _all() -> dict:
    with open(OFFICIAL_FILE, encoding="utf-8") as fh:
        return json.load(fh)


def official_claims(slug: str) -> list[dict]:
    """The official claims of ``slug`` ([] when none were found for the paper)."""
    return list(_all().get(slug, {}).get("claims", []))


def combine(verdicts: list[str]) -> str:
    """One verdict for an official claim from the verdicts of the paper claims that address it.

    not reproduced > inconclusive (also a claim that cannot fail) > reproduced-reduced > reproduced; claims that
    were not evaluated do not count, and all of them not evaluated gives not evaluated.
    """
    judged = [v for v in verdicts if v != NOT_EVALUATED]
    if not verdicts:
        return NOT_ADDRESSED
    if not judged:
        return NOT_EVALUATED
    for verdict, outcome in ((NOT_REPRODUCED, NOT_REPRODUCED), (INCONCLUSIVE, INCONCLUSIVE),
                             (CANNOT_FAIL, INCONCLUSIVE), (REPRODUCED_REDUCED, REPRODUCED_REDUCED)):
        if verdict in judged:
            return outcome
    return REPRODUCED if all(v == REPRODUCED for v in judged) else INCONCLUSIVE


@dataclass(frozen=True)
class OfficialRow:
    index: int
    cites: str
    text: str
    ours: list[str]
    verdict: str
    reason: str = ""


def official_rows(slug: str, claims: list[dict], verdicts: list[Verdict], not_addressed: dict) -> list[OfficialRow]:
    """One row per official claim of ``slug``: the paper claims that address it and the combined verdict."""
    rows = []
    for oc in official_claims(slug):
        idx = oc["index"]
        mine = [(c, v) for c, v in zip(claims, verdicts) if c["kind"] == "paper" and idx in c.get("official", ())]
        rows.append(OfficialRow(idx, oc.get("cites") or "", oc["text"], [c["id"] for c, _ in mine],
                                combine([v.verdict for _, v in mine]), not_addressed.get(str(idx), "")))
    return rows


def coverage_problems(slug: str, doc: dict) -> list[str]:
    """What is wrong with a claims file's mapping onto the official claims (empty when it is complete).

    Every official claim is addressed by a paper claim or listed in ``official_not_addressed``, not both;
    every index named exists.
    """
    indices = {oc["index"] for oc in official_claims(slug)}
    addressed = {i for c in doc["claims"] if c["kind"] == "paper" for i in c.get("official", ())}
    named = {i for c in doc["claims"] for i in c.get("official", ())}
    listed = {int(k) for k in doc.get("official_not_addressed", {})}
    problems = [f"official claim {i} does not exist for {slug}" for i in sorted((named | listed) - indices)]
    problems += [f"official claim {i} is neither addressed by a paper claim nor listed in official_not_addressed"
                 for i in sorted(indices - addressed - listed)]
    problems += [f"official claim {i} is addressed and also listed in official_not_addressed"
                 for i in sorted(addressed & listed)]
    return problems


def validate_coverage(slug: str, doc: dict, where: str) -> None:
    """ConfigError naming the first problem of :func:`coverage_problems`."""
    problems = coverage_problems(slug, doc)
    if problems:
        raise ConfigError(f"{where}: {problems[0]}")
