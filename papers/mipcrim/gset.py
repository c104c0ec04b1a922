"""G-set MAX-CUT instances: fetch, parse and verify (rudy format).

A G-set file holds ``n m`` and then ``m`` lines ``i j w`` (1-based vertices, integer weights in {1} or {+-1}).
The canonical source is Yinyu Ye's G-set page (``https://web.stanford.edu/~yyye/yyye/Gset/G<k>``); the offline
mirror holds ``gset/G<k>.txt``. Copies differ in bytes (``G14.txt`` of the mirror is UTF-16-LE with a BOM and CRLF,
several files use CRLF, headers may carry trailing spaces), so the content check is a SHA-256 of a *canonical
content text*:

.. math::  \\mathrm{sha256}\\big(\\texttt{"n m\\n"} + \\textstyle\\sum_{(i,j,w)\\ \\mathrm{sorted}}
           \\texttt{"min(i,j) max(i,j) w\\n"}\\big)   \\quad (1\\text{-based}).

A second checksum, of the canonical text (``shared.data.canonical_text``: decoded, LF line ends, trailing blanks
and trailing empty lines dropped, one final LF; ``canonical_text=True`` of ``shared.data.fetch``), guards the
download itself. Both tables live in ``gset_checksums.csv`` beside this module, written once from the mirror by
``python -m papers.mipcrim.gset --write-checksums``.

Best-known cuts: ``later_best_known`` of the mirror's ``best_known.csv`` (Ma & Hao 2017-style values), falling back
to Benlic & Hao 2013 (BLS) where empty (G77, G81), except G25 = 13340 (BLS; the later source's 13349 is a typo).
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import os
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["GSET_NAMES", "CANONICAL_URL", "load_gset", "best_known", "parse_rudy", "decode_text",
           "content_sha256", "text_sha256", "gset_path", "fetch_gset", "checksums"]

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
CHECKSUM_FILE = HERE / "gset_checksums.csv"
DATA_DIR = Path("data") / "mipcrim" / "gset"          # relative to the repository root
CANONICAL_URL = "https://web.stanford.edu/~yyye/yyye/Gset/{name}"
MIRROR_RELPATH = "gset/{name}.txt"
BEST_KNOWN_OVERRIDES = {"G25": 13340}


@lru_cache(maxsize=1)
def checksums() -> dict[str, dict]:
    """The committed table: ``{name: {n, m, best_known, content_sha256, text_sha256}}`` for the 71 instances."""
    with open(CHECKSUM_FILE, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {r["name"]: {"n": int(r["n"]), "m": int(r["m"]), "best_known": int(r["best_known"]),
                        "content_sha256": r["content_sha256"], "text_sha256": r["text_sha256"]} for r in rows}


def _sort_key(name: str) -> int:
    return int(name[1:])


GSET_NAMES: tuple[str, ...] = tuple(sorted(checksums(), key=_sort_key)) if CHECKSUM_FILE.exists() else ()


def _check_name(name) -> str:
    if not isinstance(name, str) or name not in checksums():
        raise ValueError(f"name must be one of the 71 G-set instances (G1..G81 as stored), got {name!r}")
    return name


def best_known(name: str) -> int:
    """Best-known cut value of G-set instance ``name`` (see the module docstring for the sources)."""
    return checksums()[_check_name(name)]["best_known"]


def decode_text(raw: bytes) -> str:
    """Decode a G-set file: UTF-16 when the bytes start with a BOM, UTF-8 with BOM stripped, else ASCII."""
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return raw.decode("utf-16")
    if raw[:3] == b"\xef\xbb\xbf":
        raw = raw[3:]
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise ValueError(f"G-set file is neither ASCII nor BOM-marked UTF-16: {exc}") from exc


def text_sha256(raw: bytes) -> str:
    """SHA-256 of the canonical text (``shared.data.sha256_text``, ``canonical_text=True``)."""
    from shared.data import sha256_text

    return sha256_text(raw)


def _fmt_w(w: float) -> str:
    return str(int(w)) if float(w).is_integer() else repr(float(w))


def parse_rudy(text: str, *, name: str = "<text>") -> tuple[int, np.ndarray, str]:
    """Parse rudy text into ``(n, edges, content_sha256)``.

    ``edges`` is float64 of shape (m, 3): columns ``i < j`` (0-based) and ``w``, in file order. Raises ValueError
    (naming ``name`` and the line) for a malformed header or line, indices outside [1, n], self-loops, duplicate
    pairs, non-finite weights, or a header edge count that differs from the number of edge lines.
    """
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        raise ValueError(f"{name}: empty G-set file")
    head = lines[0].split()
    if len(head) != 2 or not all(t.isdigit() for t in head):
        raise ValueError(f"{name}: malformed header {lines[0]!r}; expected 'n m'")
    n, m = int(head[0]), int(head[1])
    body = lines[1:]
    if len(body) != m:
        raise ValueError(f"{name}: header says m={m} edges but the file has {len(body)} edge lines")
    edges = np.empty((m, 3), dtype=np.float64)
    for k, ln in enumerate(body):
        parts = ln.split()
        if len(parts) != 3:
            raise ValueError(f"{name}: line {k + 2} is malformed: {ln!r}; expected 'i j w'")
        try:
            i, j, w = int(parts[0]), int(parts[1]), float(parts[2])
        except ValueError as exc:
            raise ValueError(f"{name}: line {k + 2} is malformed: {ln!r}") from exc
        edges[k] = (min(i, j), max(i, j), w)
    if m and (edges[:, 0].min() < 1 or edges[:, 1].max() > n):
        raise ValueError(f"{name}: vertex index outside [1, {n}]")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError(f"{name}: self-loop in the edge list")
    if not np.all(np.isfinite(edges[:, 2])):
        raise ValueError(f"{name}: non-finite edge weight")
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    srt = edges[order]
    if m > 1 and np.any((np.diff(srt[:, 0]) == 0) & (np.diff(srt[:, 1]) == 0)):
        raise ValueError(f"{name}: duplicate vertex pair in the edge list")
    canon = f"{n} {m}\n" + "".join(f"{int(a)} {int(b)} {_fmt_w(w)}\n" for a, b, w in srt)
    digest = hashlib.sha256(canon.encode("ascii")).hexdigest()
    edges[:, :2] -= 1.0
    return n, edges, digest


def content_sha256(raw: bytes) -> str:
    """Canonical content SHA-256 of a G-set file's bytes (see the module docstring)."""
    return parse_rudy(decode_text(raw))[2]


def _mirror_dirs() -> list[Path]:
    env = os.environ.get("REPRO_DATA_MIRROR", "")
    return [Path(p) for p in env.split(os.pathsep) if p]


def gset_path(name: str) -> Path:
    """Where the workflow's data rule puts instance ``name`` (relative to the repository root)."""
    return DATA_DIR / f"{_check_name(name)}.txt"


def fetch_gset(name: str, dest: str | Path | None = None) -> Path:
    """Fetch ``name`` to ``dest`` through ``shared.data.fetch`` (canonical URL, mirror via REPRO_DATA_MIRROR).

    The text checksum (``canonical_text=True``) comes from the committed table. Used by the data rule.
    """
    from shared.data import fetch

    name = _check_name(name)
    dest = Path(dest) if dest is not None else REPO_ROOT / gset_path(name)
    return fetch(CANONICAL_URL.format(name=name), dest, sha256=checksums()[name]["text_sha256"],
                 mirror_relpath=MIRROR_RELPATH.format(name=name), canonical_text=True)


def _read_bytes(name: str, offline: bool | None) -> tuple[bytes, str]:
    local = REPO_ROOT / gset_path(name)
    if local.is_file():
        return local.read_bytes(), str(gset_path(name))
    mirrors = [d / MIRROR_RELPATH.format(name=name) for d in _mirror_dirs()]
    for path in mirrors:
        if path.is_file():
            return path.read_bytes(), f"mirror:{MIRROR_RELPATH.format(name=name)}"
    if offline:
        raise FileNotFoundError(f"G-set instance {name}: not in {gset_path(name)} nor in any REPRO_DATA_MIRROR "
                                f"directory, and offline=True forbids a download")
    try:
        fetch_gset(name, local)
    except OSError as exc:
        raise FileNotFoundError(f"G-set instance {name}: download failed and no mirror holds it ({exc})") from exc
    return local.read_bytes(), str(gset_path(name))


def load_gset(name: str, *, offline: bool | None = None) -> tuple[int, np.ndarray]:
    """Load G-set instance ``name`` as ``(n, edges)``; edges float64 (m, 3): ``i < j`` (0-based), ``w``.

    Looks in ``data/mipcrim/gset/`` (the data rule's output), then in the ``REPRO_DATA_MIRROR`` directories, then
    (unless ``offline``) downloads through ``shared.data.fetch``. The canonical content SHA-256 is verified
    against the committed table. Raises ValueError (unknown name, malformed file, header/edge-count mismatch,
    hash mismatch) and FileNotFoundError (neither file, mirror nor download available).
    """
    name = _check_name(name)
    raw, where = _read_bytes(name, offline)
    n, edges, digest = parse_rudy(decode_text(raw), name=f"{name} ({where})")
    expected = checksums()[name]["content_sha256"]
    if digest != expected:
        raise ValueError(f"{name} ({where}): canonical content SHA-256 {digest} differs from the committed "
                         f"{expected}; the file is not the G-set instance")
    return n, edges


def _write_checksums(mirror: Path) -> None:  # pragma: no cover - run once by hand
    best = {}
    with open(mirror / "gset" / "best_known.csv", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            best[r["instance"]] = int(r["later_best_known"] or r["bls_2013"])
    best.update(BEST_KNOWN_OVERRIDES)
    rows = []
    for path in sorted((mirror / "gset").glob("G*.txt"), key=lambda p: int(p.stem[1:])):
        raw = path.read_bytes()
        n, edges, digest = parse_rudy(decode_text(raw), name=path.name)
        rows.append((path.stem, n, len(edges), best[path.stem], digest, text_sha256(raw)))
    with open(CHECKSUM_FILE, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["name", "n", "m", "best_known", "content_sha256", "text_sha256"])
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {CHECKSUM_FILE}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    ap = argparse.ArgumentParser(description="G-set utilities")
    ap.add_argument("--write-checksums", action="store_true", help="regenerate gset_checksums.csv from a mirror")
    ap.add_argument("--mirror", default=None, help="mirror root (default: first REPRO_DATA_MIRROR entry)")
    args = ap.parse_args()
    if args.write_checksums:
        root = Path(args.mirror) if args.mirror else _mirror_dirs()[0]
        _write_checksums(root)
