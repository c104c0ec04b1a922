"""Reproduction of "Projection-Free Algorithms for Minimax Problems" (K.-H. Giang-Tran, S. Shafiee,
N. Ho-Nguyen; ICML 2026, PMLR 306; arXiv 2603.29870).

Modules: :mod:`~papers.pf_minimax.sets` (LMOs and projections), :mod:`~papers.pf_minimax.problems`
(matrix games, the nuclear-ball game, chi-square DRO), :mod:`~papers.pf_minimax.methods` (dual dynamic
smoothing with LMOs and the baselines), :mod:`~papers.pf_minimax.experiments`, :mod:`~papers.pf_minimax.plots`.
"""
