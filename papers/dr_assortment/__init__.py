"""Distributionally robust assortment optimisation under (contextual) MNL.

Reproduction (reconstructed from the abstract) of Y. Zhang, Y. Han, Z. Zhou, "Efficient Distributionally
Robust Assortment Optimization in MNL Bandits", ICML 2026.

Modules: :mod:`.mnl` (nominal MNL revenue and assortment optimisation), :mod:`.robust` (robust revenue by
duality for TV / KL / chi-square balls, worst-case distributions, the robust assortment solver),
:mod:`.learning` (contextual MNL maximum likelihood and the plug-in robust decision).
"""
