"""Tidy results and metrics, written atomically.

Tidy results are long-form CSV with at least the columns ``method, seed, step, metric, value``; metrics are a
nested JSON object of finite numbers, strings and booleans. Every writer goes through :func:`atomic_path`:
the file appears complete or not at all, so a half-written output never looks complete.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd

__all__ = [
    "TIDY_COLUMNS", "NonFiniteError", "atomic_path", "atomic_write_text", "write_tidy", "read_tidy",
    "metrics_json", "write_metrics", "read_metrics", "check_finite", "get_key", "mean_and_se", "markdown_table",
    "write_markdown_table",
    "write_arrays", "read_arrays",
]

TIDY_COLUMNS = ("method", "seed", "step", "metric", "value")


class NonFiniteError(FloatingPointError):
    """A NaN or Inf reached a result; the message names where (step, method, key)."""


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def check_finite(value, *, what: str, method: str | None = None, step: int | None = None):
    """Return ``value`` unchanged, or raise :class:`NonFiniteError` naming ``what``, ``method`` and ``step``."""
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        where = ", ".join(p for p in (f"method={method}" if method else "", f"step={step}" if step is not None
                                      else "") if p)
        raise NonFiniteError(f"non-finite value in {what}" + (f" ({where})" if where else ""))
    return value


def _to_frame(rows) -> pd.DataFrame:
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    missing = [c for c in TIDY_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"tidy results lack the columns {missing}; need {list(TIDY_COLUMNS)}")
    return frame


def write_tidy(rows, path: str | os.PathLike) -> Path:
    """Write long-form results (DataFrame or iterable of dicts) as CSV, columns ``TIDY_COLUMNS`` first.

    Non-finite values are allowed in tidy results (a diverged run is a result), but not in metrics.
    """
    frame = _to_frame(rows)
    ordered = list(TIDY_COLUMNS) + [c for c in frame.columns if c not in TIDY_COLUMNS]
    with atomic_path(path) as tmp:
        frame[ordered].to_csv(tmp, index=False, float_format="%.17g")
    return Path(path)


def read_tidy(path: str | os.PathLike) -> pd.DataFrame:
    """Read a tidy CSV written by :func:`write_tidy`."""
    return _to_frame(pd.read_csv(path, float_precision="round_trip"))


def _plain(obj: Any, key: str):
    """Convert numpy scalars/arrays to plain JSON types, refusing NaN/Inf (naming the key)."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v, f"{key}.{k}" if key else str(k)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [_plain(v, f"{key}[{i}]") for i, v in enumerate(np.asarray(obj, dtype=object).tolist()
                                                              if isinstance(obj, np.ndarray) else obj)]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        if not math.isfinite(float(obj)):
            raise NonFiniteError(f"metric {key!r} is {float(obj)}; metrics must be finite")
        return float(obj)
    if obj is None or isinstance(obj, str):
        return obj
    raise TypeError(f"metric {key!r} has unsupported type {type(obj).__name__}")


def metrics_json(metrics: Mapping) -> str:
    """Metrics as sorted, indented JSON text; NonFiniteError naming the key of any NaN/Inf."""
    return json.dumps(_plain(metrics, ""), indent=2, sort_keys=True, allow_nan=False) + "\n"


def write_metrics(metrics: Mapping, path: str | os.PathLike) -> Path:
    """Write a nested dict of metrics as sorted, indented JSON; refuses NaN/Inf and names the key."""
    return atomic_write_text(path, metrics_json(metrics))


def read_metrics(path: str | os.PathLike) -> dict:
    """Read a metrics JSON file."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def get_key(metrics: Mapping, dotted: str):
    """Value at a dotted key (``"p1.slope.goma"``); KeyError naming the first missing part."""
    node = metrics
    for i, part in enumerate(dotted.split(".")):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"metric key {dotted!r}: {'.'.join(dotted.split('.')[:i + 1])!r} not found")
        node = node[part]
    return node


def mean_and_se(values) -> tuple[float, float]:
    """Mean and standard error (sample std / sqrt(n); 0 for one value) of finite values."""
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError("mean_and_se needs at least one value")
    check_finite(arr, what="mean_and_se input")
    se = float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else 0.0
    return float(arr.mean()), se


def markdown_table(frame: pd.DataFrame, *, floatfmt: str = ".4g", title: str | None = None) -> str:
    """A DataFrame as a GitHub markdown table (with an optional bold title line), for documents of several
    tables and notes; floats are formatted with ``floatfmt``, non-finite ones as ``nan``/``inf``."""
    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return format(float(v), floatfmt) if math.isfinite(v) else str(float(v))
        return str(v)

    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    lines = ([f"**{title}**", ""] if title else []) + [header, rule, *body]
    return "\n".join(lines) + "\n"


def write_markdown_table(frame: pd.DataFrame, path: str | os.PathLike, *, floatfmt: str = ".4g",
                         title: str | None = None) -> Path:
    """Write :func:`markdown_table` of ``frame`` to ``path`` (atomically)."""
    return atomic_write_text(path, markdown_table(frame, floatfmt=floatfmt, title=title))


def write_arrays(path: str | os.PathLike, **arrays) -> Path:
    """Save named arrays to an ``.npz`` file atomically (for plots that need whole traces)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)
    return Path(path)


def read_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Load the arrays saved by :func:`write_arrays`."""
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}
