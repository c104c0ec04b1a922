"""Reproduction of "Convex Basins in Single-Index Model Loss Landscapes: Applications to Robust Recovery under
Strong Adversarial Corruption" (S. Das, S. Chatterjee, J. Batra; ICML 2026; arXiv 2605.29497).

Modules: :mod:`links` (link functions and their Gaussian constants), :mod:`data` (the contaminated single-index
model), :mod:`method` (robust spectral initialisation, filtered mean, robust gradient descent), :mod:`baselines`
(Huber / soft-L1 M-estimation, ITLM, first-order Stein and random initialisations), :mod:`experiments` and
:mod:`plots`.
"""
