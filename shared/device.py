"""Where torch work runs: one rule for every paper that can use a GPU (``device`` in an experiment's params)."""
from __future__ import annotations

import os

__all__ = ["DEVICE_ENV", "resolve_device"]

#: Environment variable that overrides every experiment's ``device`` (e.g. ``REPRO_DEVICE=cuda`` for a GPU check
#: of a smoke run without editing the config).
DEVICE_ENV = "REPRO_DEVICE"


def resolve_device(device="auto") -> str:
    """``"auto"`` (or None) -> ``"cuda"`` when torch sees a CUDA device, else ``"cpu"``; ``"cpu"``, ``"cuda"`` and
    ``"cuda:N"`` pass through. A non-empty ``$REPRO_DEVICE`` replaces ``device``.

    Raises ValueError for another value, and for a CUDA device that torch does not see (a config that asks
    for a GPU never falls back to the CPU silently; ``"auto"`` is the setting that may).
    """
    import torch

    device = os.environ.get(DEVICE_ENV) or device
    if device is None or device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not isinstance(device, str) or not (device == "cpu" or device == "cuda" or
                                           (device.startswith("cuda:") and device[5:].isdigit())):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was requested but torch reports no CUDA device; use 'cpu' or 'auto'")
    return device
