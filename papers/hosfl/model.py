"""Split MLP: a client part f_c(x; theta_c) and a server part f_s(z; theta_s).

Parameter-vector convention (used by perturbations and estimates): theta_c is the concatenation, in
``client.parameters()`` order, of each tensor flattened row-major; for the Linear client that is the
weight (cut_dim, in_dim) then the bias (cut_dim,), so d_c = cut_dim * (in_dim + 1).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

__all__ = ["SplitMLP", "ACTIVATIONS", "DTYPES", "module_vector", "vector_params", "module_apply"]

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "identity": nn.Identity}
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _positive(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def module_vector(module: nn.Module) -> np.ndarray:
    """The parameters of ``module`` as one vector (``parameters()`` order, each tensor row-major)."""
    with torch.no_grad():
        return torch.cat([p.detach().reshape(-1) for p in module.parameters()]).cpu().numpy().copy()


def vector_params(module: nn.Module, vec: torch.Tensor) -> dict[str, torch.Tensor]:
    """Split a flat tensor into a ``{name: tensor}`` dict for ``torch.func.functional_call`` (views, so
    gradients flow back into ``vec``)."""
    out, start = {}, 0
    for name, p in module.named_parameters():
        n = p.numel()
        out[name] = vec[start:start + n].view(p.shape)
        start += n
    if start != vec.numel():
        raise ValueError(f"vector has {vec.numel()} entries, the module has {start} parameters")
    return out


def module_apply(module: nn.Module, x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """module(x) with its parameters replaced by the flat vector ``theta`` (:func:`vector_params`)."""
    return functional_call(module, vector_params(module, theta), (x,))


class SplitMLP(nn.Module):
    """Split MLP ``f_s(f_c(x))``: client = Linear(in_dim, cut_dim) + activation; server =
    Linear(cut_dim, hidden_dim), ReLU, Linear(hidden_dim, n_classes).

    Parameters are initialised with torch's default init from ``seed`` (the global torch RNG is left as
    it was). ``dtype`` is "float32" or "float64".
    """

    def __init__(self, in_dim: int = 64, cut_dim: int = 32, hidden_dim: int = 64, n_classes: int = 10, *,
                 client_activation: str = "relu", client_bias: bool = True, dtype: str = "float32",
                 seed: int = 0):
        super().__init__()
        self.in_dim = _positive(in_dim, "in_dim")
        self.cut_dim = _positive(cut_dim, "cut_dim")
        self.hidden_dim = _positive(hidden_dim, "hidden_dim")
        self.n_classes = _positive(n_classes, "n_classes")
        if client_activation not in ACTIVATIONS:
            raise ValueError(f"client_activation must be one of {sorted(ACTIVATIONS)}, got {client_activation!r}")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.client_activation = client_activation
        self.dtype_name = dtype
        self.torch_dtype = DTYPES[dtype]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.client = nn.Sequential(nn.Linear(self.in_dim, self.cut_dim, bias=bool(client_bias)),
                                        ACTIVATIONS[client_activation]())
            self.server = nn.Sequential(nn.Linear(self.cut_dim, self.hidden_dim), nn.ReLU(),
                                        nn.Linear(self.hidden_dim, self.n_classes))
        self.to(self.torch_dtype)

    @property
    def client_dim(self) -> int:
        """d_c, the number of client parameters."""
        return sum(p.numel() for p in self.client.parameters())

    @property
    def server_dim(self) -> int:
        """d_s, the number of server parameters."""
        return sum(p.numel() for p in self.server.parameters())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.server(self.client(x))

    def client_vector(self) -> np.ndarray:
        """theta_c as a (d_c,) array in the model dtype (weight row-major, then bias)."""
        return module_vector(self.client)

    def _check_vector(self, v, dim: int, what: str) -> np.ndarray:
        v = np.asarray(v)
        if v.shape != (dim,):
            raise ValueError(f"{what} must have shape ({dim},), got {v.shape}")
        if not np.issubdtype(v.dtype, np.number) or not np.all(np.isfinite(v)):
            raise ValueError(f"{what} must be finite numbers")
        return v

    def set_client_vector(self, v) -> None:
        """Copy a (d_c,) vector into the client parameters (cast to the model dtype)."""
        v = self._check_vector(v, self.client_dim, "client vector")
        t = torch.as_tensor(np.ascontiguousarray(v)).to(self.torch_dtype)
        with torch.no_grad():
            start = 0
            for p in self.client.parameters():
                n = p.numel()
                p.copy_(t[start:start + n].view(p.shape))
                start += n

    def server_vector(self) -> np.ndarray:
        """theta_s as a (d_s,) array (server ``parameters()`` order, row-major)."""
        return module_vector(self.server)

    def set_server_vector(self, v) -> None:
        """Copy a (d_s,) vector into the server parameters."""
        v = self._check_vector(v, self.server_dim, "server vector")
        t = torch.as_tensor(np.ascontiguousarray(v)).to(self.torch_dtype)
        with torch.no_grad():
            start = 0
            for p in self.server.parameters():
                n = p.numel()
                p.copy_(t[start:start + n].view(p.shape))
                start += n

    def init_client_pca(self, x_train) -> None:
        """"Pretrained" surrogate: client weight rows [V_k; -V_k], bias = -W mean(x_train).

        V_k (k = cut_dim / 2) are the top-k principal axes of ``x_train`` (unit norm, sign chosen so the
        largest-magnitude entry is positive). With a ReLU client, relu(V(x - m)) and relu(-V(x - m)) keep the
        top-k principal scores exactly (their difference).
        """
        x = np.asarray(x_train, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.in_dim:
            raise ValueError(f"x_train must have shape (n, {self.in_dim}), got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("x_train must be finite")
        if self.cut_dim % 2 or self.cut_dim // 2 > min(x.shape):
            raise ValueError(f"init_client_pca needs an even cut_dim <= 2 min(n, in_dim), got {self.cut_dim}")
        if self.client[0].bias is None:
            raise ValueError("init_client_pca needs a client with a bias")
        k = self.cut_dim // 2
        mean = x.mean(axis=0)
        _, _, vt = np.linalg.svd(x - mean, full_matrices=False)
        v = vt[:k].copy()
        idx = np.argmax(np.abs(v), axis=1)
        v *= np.sign(v[np.arange(k), idx])[:, None]
        w = np.vstack([v, -v])
        b = -w @ mean
        self.set_client_vector(np.concatenate([w.ravel(), b]))
