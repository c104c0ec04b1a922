"""Gradient clipping under heavy-tailed data in finite-sum ERM.

Reproduction of A. Shestakov, M. Takac, E. Gorbunov, "From Optimization to Generalization under Heavy-Tailed
Data: The Role of Gradient Clipping", ICML 2026 (PMLR 306, id shestakov26a, OpenReview FGHVEJ2Jz9).

Modules: ``problems`` (finite-sum least squares and mean estimation with Student-t data), ``methods`` (SGD and
Clip-SGD with step-size and clipping schedules, single and vectorised over datasets), ``baselines``
(``torch.optim.SGD`` with ``clip_grad_norm_``, scikit-learn's ``SGDRegressor`` and ``HuberRegressor``),
``analysis`` (noise moments, stationary SGD error, clipped fixed point, log-log slopes), ``experiments`` and
``plots``.
"""
