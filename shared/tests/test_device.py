"""shared.device.resolve_device: auto picks CUDA only when torch sees it; explicit requests never fall back."""
import pytest
import torch

from shared.device import resolve_device


def test_resolve_device(monkeypatch):
    monkeypatch.delenv("REPRO_DEVICE", raising=False)
    assert resolve_device("cpu") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu" and resolve_device(None) == "cpu"
    with pytest.raises(ValueError, match="no CUDA device"):
        resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda" and resolve_device("cuda:1") == "cuda:1"
    for bad in ("gpu", "cuda:x", 3):
        with pytest.raises(ValueError, match="device must be"):
            resolve_device(bad)


def test_environment_overrides_the_config(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("REPRO_DEVICE", "cuda")
    with pytest.raises(ValueError, match="no CUDA device"):
        resolve_device("cpu")
    monkeypatch.setenv("REPRO_DEVICE", "cpu")
    assert resolve_device("auto") == "cpu"
