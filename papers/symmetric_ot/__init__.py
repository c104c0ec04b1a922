"""symmetric_ot: "Optimal Transport with Symmetry Groups" (ICML 2026, poster 65591), reconstructed.

Linear and entropic optimal transport reduced to the cells of an equitable partition of the cost matrix
(recovered by colour refinement, no group needed), solved with POT on the small problem and lifted back.
Modules: ``partition`` (colour refinement), ``reduce`` (reduced EMD / Sinkhorn), ``problems`` (generated
symmetric problems), ``experiments``, ``plots``.
"""
import os as _os

# Only POT's numpy backend is used here; skipping the probes of torch/jax/tensorflow/cupy saves seconds of
# import time per experiment process (setdefault: a user's own choice wins).
for _key in ("POT_BACKEND_DISABLE_PYTORCH", "POT_BACKEND_DISABLE_JAX", "POT_BACKEND_DISABLE_TENSORFLOW",
             "POT_BACKEND_DISABLE_CUPY"):
    _os.environ.setdefault(_key, "1")
