"""Anchored generalized optimistic method (GOMA) for monotone variational inequalities.

Reproduction of M. Sohrabi, J. You, S. Lacoste-Julien, E. Gorbunov, G. Gidel, "Accelerated and Stable
Convergence with Anchored Generalized Optimistic Method", ICML 2026 (PMLR 306), arXiv 2606.21528.

Modules: ``problems`` (monotone test operators), ``methods`` (GOMA and the baselines, deterministic and
stochastic), ``metrics`` (rates and envelopes), ``pep`` (worst cases by performance estimation with PEPit),
``experiments`` (the command line of every experiment) and ``plots`` (figures and tables from results).
"""
