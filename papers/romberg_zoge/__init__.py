"""Romberg-extrapolated zeroth-order gradient estimator (Romberg-ZOGE).

Reproduction of H. Dong, W. Pu, L. Zhao, R. Zhou, F. Yin, "Romberg-Extrapolated Zeroth-Order Gradient
Estimator: Higher-Order Bias Reduction with Preserved Leading Directional Variance", ICML 2026 (poster).

Modules: ``estimator`` (Romberg weights, the estimator, the kernel comparator), ``optim`` (ZO-SGD at a fixed
evaluation budget), ``problems`` (synthetic functions, the RIS wireless model, the digits prompt-tuning
substitute), ``experiments`` and ``plots``. The shared primitives come from ``shared.oracles.zeroth_order``.
"""
