"""Fetching public data with SHA-256 verification and offline mirrors.

``fetch`` tries, in order: the mirror directories of ``REPRO_DATA_MIRROR`` (a path list, ``os.pathsep``
separated) when it is set, then the canonical URL. Every source is verified in memory before anything is
written, and the verified bytes are renamed into place from a temporary file, so a wrong, truncated or
undecodable file is never left where a later run would trust it (see :func:`fetch`). Package-shipped datasets (scikit-learn) need no fetching.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from shared.results import atomic_path

__all__ = ["ChecksumError", "FetchError", "mirror_dirs", "sha256_bytes", "sha256_text", "file_sha256", "fetch"]

MIRROR_ENV = "REPRO_DATA_MIRROR"


class ChecksumError(ValueError):
    """A fetched file does not have the expected SHA-256."""


class FetchError(OSError):
    """No source (mirror or URL) could provide the file."""


def mirror_dirs() -> list[Path]:
    """Directories listed in ``REPRO_DATA_MIRROR`` (empty when unset)."""
    raw = os.environ.get(MIRROR_ENV, "")
    return [Path(p) for p in raw.split(os.pathsep) if p.strip()]


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of raw bytes."""
    return hashlib.sha256(data).hexdigest()


def canonical_text(data: bytes) -> str:
    """The canonical text of ``data``: the form whose SHA-256 identifies a text file across mirrors.

    Decode UTF-16 (when the bytes start with a BOM) or UTF-8 (a UTF-8 BOM is dropped); split the lines on
    CRLF, LF or CR; strip trailing whitespace from every line; drop trailing empty lines; join with LF and end
    with exactly one LF (an empty text stays empty). Mirrors that differ only in encoding, line ends,
    trailing blanks or the final newline give the same text.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16")
    else:
        text = data.decode("utf-8-sig")
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def sha256_text(data: bytes) -> str:
    """Hex SHA-256 of the canonical UTF-8 text of ``data`` (mirrors that differ in encoding agree)."""
    return sha256_bytes(canonical_text(data).encode("utf-8"))


def file_sha256(path: str | Path, *, canonical: bool = False) -> str:
    """SHA-256 of a file's bytes, or of its canonical text."""
    data = Path(path).read_bytes()
    return sha256_text(data) if canonical else sha256_bytes(data)


def _download(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - fixed https URLs
        return response.read()


def _sources(url: str, mirror_relpath: str):
    mirrors = [("mirror " + str(d), d / mirror_relpath) for d in mirror_dirs()]
    yield from mirrors
    yield ("url " + url, url)


def _digest_or_none(data: bytes, canonical: bool) -> str | None:
    """SHA-256 of ``data`` (of its canonical text when ``canonical``); None when the text cannot be decoded."""
    try:
        return sha256_text(data) if canonical else sha256_bytes(data)
    except UnicodeDecodeError:
        return None


def _set_aside(path: Path) -> Path:
    bad = path.with_name(path.name + ".bad")
    shutil.move(str(path), bad)
    return bad


def fetch(url: str, dest: str | Path, *, sha256: str, mirror_relpath: str, canonical_text: bool = False,
          timeout: float = 30.0) -> Path:
    """Place the verified file at ``dest``; return ``dest``.

    Every source's bytes are verified in memory before anything is written; a verified file is written to a
    temporary file beside ``dest`` and renamed into place, so ``dest`` is either absent or verified. A file
    already at ``dest`` that does not verify (altered, truncated, undecodable) is moved aside to
    ``<dest>.bad`` and fetched again. A source whose bytes do not verify is skipped; when no source verifies,
    :class:`ChecksumError` names every bad source, and when none could be read, :class:`FetchError`.

    Parameters
    ----------
    url : canonical download address.
    dest : where the file goes (under ``data/``).
    sha256 : expected hex digest (of the bytes, or of the canonical text when ``canonical_text``).
    mirror_relpath : path of the file inside a mirror directory (e.g. ``"gset/G1.txt"``).
    """
    dest = Path(dest)
    if len(sha256) != 64:
        raise ValueError(f"sha256 must be 64 hex digits, got {sha256!r}")
    if dest.is_file():
        if _digest_or_none(dest.read_bytes(), canonical_text) == sha256:
            return dest
        _set_aside(dest)
    unreadable, altered = [], []
    for label, source in _sources(url, mirror_relpath):
        try:
            data = Path(source).read_bytes() if isinstance(source, Path) else _download(source, timeout)
        except (OSError, urllib.error.URLError, ValueError) as exc:
            unreadable.append(f"{label}: {type(exc).__name__}")
            continue
        got = _digest_or_none(data, canonical_text)
        if got != sha256:
            altered.append(f"{label}: " + ("not decodable as text" if got is None else f"SHA-256 {got}"))
            continue
        with atomic_path(dest) as tmp:
            tmp.write_bytes(data)
        return dest
    if altered:
        raise ChecksumError(f"{dest.name}: no source matches the expected SHA-256 {sha256} "
                            f"({'; '.join(altered)}); nothing was written to {dest}")
    raise FetchError(f"could not fetch {dest.name}: " + "; ".join(unreadable)
                     + f" (set {MIRROR_ENV} to a directory holding {mirror_relpath})")
