"""Loaders of the public optimisation-modelling benchmarks (files placed under ``data/sacopt/`` by the
``sacopt_fetch_*`` rules, SHA-256 verified).

IndustryOR (SIRL fixedV2, 100), MAMO ComplexLP (SIRL fixed, 203), NL4Opt (OptMATH, 245), MAMO EasyLP (OptMATH,
652) are JSON Lines with ``en_question``/``en_answer`` (a string; "No Best Solution" -> answer None);
ComplexOR (Chain-of-Experts, 18 abstract problems: description, sample input/output, gt_model.txt).
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Problem", "DataError", "DATASETS", "FILES", "COMPLEXOR_DIGEST", "COMPLEXOR_BASE", "SOURCES", "load_dataset",
           "default_root", "complexor_manifest", "fetch_jsonl", "fetch_complexor"]

_SIRL = "https://raw.githubusercontent.com/Cardinal-Operations/SIRL/8e85194b8f251ec229cc310c2c6e8794ead85682/test_data/"
_OPTMATH = "https://raw.githubusercontent.com/optsuite/OptMATH/f15bbc4477c70db85ad148df8bcc1b780bca0f8c/benchmark/"
COMPLEXOR_BASE = ("https://raw.githubusercontent.com/xzymustbexzy/Chain-of-Experts/"
                  "9ce1fb7e522e930fe45100ce60661a4236514de6/dataset/ComplexOR/")
# name -> (file name under data/sacopt and the mirror, canonical URL, SHA-256 of the bytes)
FILES = {
    "industryor": ("IndustryOR_fixedV2.json", _SIRL + "IndustryOR_fixedV2.json",
                   "756549264386d9c28f3bf15b442e4d45e345f809155f7c7951c9b7edfd25ee8b"),
    "complexlp": ("MAMO_ComplexLP_fixed.jsonl", _SIRL + "MAMO_ComplexLP_fixed.jsonl",
                  "0fe155db0ddb62ab82cdf270f2966afae9f46a512b1c02f6d8a9233f5d3f33c7"),
    "nl4opt": ("NL4OPT.json", _OPTMATH + "NL4OPT.json",
               "87bc1930251dfef551a7cb1d4c79889a0b0522f7a715b285257f0ed7598f95f0"),
    "easylp": ("MAMO_EasyLP.json", _OPTMATH + "MAMO_EasyLP.json",
               "24acb11eef798501b79ce0f02287755e155113645c531af880f02a2c65e0ead8"),
}
COMPLEXOR_DIGEST = "faf5279a71070ab95c9dee3f70b7bcd0f1cf3bc64440a9a9c1274f759306c67a"
DATASETS = ("industryor", "complexlp", "nl4opt", "easylp", "complexor")
#: "public": the benchmark files (SHA-256 verified); "synthetic": papers/sacopt/synthetic.py's smoke stand-ins
SOURCES = ("public", "synthetic")
_MANIFEST = Path(__file__).with_name("data_manifest.json")


class DataError(ValueError):
    """A data file is missing, truncated, malformed or fails its checksum."""


@dataclass
class Problem:
    """A benchmark item: ``answer`` None means "No Best Solution"."""

    id: str
    text: str
    answer: float | None
    meta: dict = field(default_factory=dict)


def default_root(source: str = "public") -> Path:
    """``data/sacopt`` of the repository (``data/sacopt/synthetic`` for the synthetic stand-ins)."""
    root = Path(__file__).resolve().parents[2] / "data" / "sacopt"
    return root / "synthetic" if source == "synthetic" else root


def fetch_jsonl(fname: str, dest: str | Path) -> Path:
    """Fetch the public file ``fname`` (one of ``FILES``) to ``dest`` (mirror first, SHA-256 verified)."""
    from shared.data import fetch

    matches = [v for v in FILES.values() if v[0] == fname]
    if len(matches) != 1:
        raise ValueError(f"fname must be one of {sorted(v[0] for v in FILES.values())}, got {fname!r}")
    _, url, sha = matches[0]
    return fetch(url, dest, sha256=sha, mirror_relpath=f"optmodel/{fname}")


def fetch_complexor(marker: str | Path) -> Path:
    """Fetch every ComplexOR file of the committed manifest beside ``marker`` (``<root>/ComplexOR/.complete``),
    each SHA-256 verified, then write the marker."""
    from shared.data import fetch

    marker = Path(marker)
    root = marker.parent.parent
    for rel, sha in complexor_manifest().items():
        fetch(COMPLEXOR_BASE + rel.partition("ComplexOR/")[2], root / rel, sha256=sha, mirror_relpath=f"optmodel/{rel}")
    marker.write_text("ok\n")
    return marker


def _expected_digests(source: str) -> tuple[dict, dict]:
    """(file name -> SHA-256 of the four JSON Lines files, ComplexOR path -> SHA-256) of ``source``."""
    if source == "public":
        return {v[0]: v[2] for v in FILES.values()}, complexor_manifest()
    from papers.sacopt.synthetic import synthetic_files

    digests = {rel: hashlib.sha256(data).hexdigest() for rel, data in synthetic_files().items()}
    return ({rel: h for rel, h in digests.items() if "/" not in rel},
            {rel: h for rel, h in digests.items() if rel.startswith("ComplexOR/")})


def complexor_manifest() -> dict[str, str]:
    """Committed per-file SHA-256 list of ComplexOR (``data_manifest.json``): path -> digest."""
    return json.loads(_MANIFEST.read_text())


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _parse_answer(raw, where: str):
    if isinstance(raw, str) and raw.strip() == "No Best Solution":
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise DataError(f"{where}: en_answer {raw!r} is neither a number nor 'No Best Solution'") from None
    if not math.isfinite(value):
        raise DataError(f"{where}: en_answer {raw!r} is not finite")
    return value


def _load_jsonl(name: str, root: Path, digests: dict) -> list[Problem]:
    fname, url, _ = FILES[name]
    sha = digests[fname]
    path = root / fname
    if not path.is_file():
        raise DataError(f"{name}: missing file {path} (mirror path optmodel/{fname}, URL {url}); "
                        "; the sacopt data rules make it (`snakemake --cores 1 <that path>`; the synthetic smoke files: "
                        "`data/sacopt/synthetic/.complete`)")
    if _sha(path) != sha:
        raise DataError(f"{name}: checksum mismatch for {path} (expected SHA-256 {sha}; truncated or altered?)")
    out = []
    for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{name}: line {k} of {fname} is not JSON ({exc.msg})") from None
        if not isinstance(rec, dict) or "en_question" not in rec or "en_answer" not in rec:
            raise DataError(f"{name}: line {k} of {fname} lacks en_question/en_answer")
        meta = {key: v for key, v in rec.items() if key not in ("en_question", "en_answer", "id")}
        out.append(Problem(str(rec.get("id", k)), rec["en_question"], _parse_answer(rec["en_answer"], f"{name} line {k}"),
                           meta))
    return out


def _load_complexor(root: Path, manifest: dict, public: bool = True) -> list[Problem]:
    base = root / "ComplexOR"
    digest = hashlib.sha256("".join(f"{h}  {p}\n" for p, h in sorted(manifest.items())).encode()).hexdigest()
    if public and digest != COMPLEXOR_DIGEST:
        raise DataError(f"complexor: the committed manifest digest {digest} differs from {COMPLEXOR_DIGEST}")
    for rel, sha in manifest.items():
        path = root / rel
        if not path.is_file():
            raise DataError(f"complexor: missing file {path} (mirror path optmodel/{rel}, URL "
                            f"{COMPLEXOR_BASE}{rel.split('/', 1)[1]}); run `snakemake sacopt_fetch_complexor`")
        if _sha(path) != sha:
            raise DataError(f"complexor: checksum mismatch for {path} (expected SHA-256 {sha})")
    out = []
    for folder in sorted({rel.split("/")[1] for rel in manifest}):
        d = base / folder
        sample = json.loads((d / "sample.json").read_text())
        gt = d / "gt_model.txt"
        out.append(Problem(folder, (d / "description.txt").read_text(),
                           float(sample[0]["output"][0]) if sample[0].get("output") else None,
                           {"sample_input": sample[0]["input"], "gt_model": gt.read_text() if gt.is_file() else None}))
    return out


def load_dataset(name: str, *, root: str | None = None, source: str = "public") -> list[Problem]:
    """Items of benchmark ``name`` in {"industryor", "complexlp", "nl4opt", "easylp", "complexor"}.

    Ids are upstream ``id`` where present, else 1-based line numbers (ComplexOR: folder names). Raises
    ``ValueError`` for an unknown name and :class:`DataError` for a missing, truncated or altered file, a line
    that is not JSON or lacks en_question/en_answer, or a non-numeric answer other than "No Best Solution".
    ``source="synthetic"`` reads the smoke stand-ins (:mod:`papers.sacopt.synthetic`, default root
    ``data/sacopt/synthetic``), checked against the bytes their generator writes.
    """
    if name not in DATASETS:
        raise ValueError(f"name must be one of {DATASETS}, got {name!r}")
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    base = Path(root) if root is not None else default_root(source)
    jsonl, manifest = _expected_digests(source)
    if name == "complexor":
        return _load_complexor(base, manifest, public=source == "public")
    return _load_jsonl(name, base, jsonl)
