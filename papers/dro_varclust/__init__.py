"""Variable clustering via distributionally robust nodewise regression.

Reproduction of K. Wang, X. Xu, X. Y. Zhou, "Variable Clustering via Distributionally Robust Nodewise
Regression", ICML 2026, arXiv 2212.07944.

Modules: ``data`` (preprocessing, the block-factor generator, the digits exploratory set), ``radius`` (the
data-driven Wasserstein radius), ``solver`` (the convex DRO nodewise problem: two ADMM splittings and a cvxpy
reference), ``cluster`` (spectral clustering of the DRO coefficients and the scores), ``baselines``,
``experiments`` and ``plots``.
"""
