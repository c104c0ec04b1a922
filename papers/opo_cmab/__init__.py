"""Optimistic policy optimisation for stochastic contextual multi-armed bandits (OPO-CMAB).

Reproduction of O. Levy, Y. Mansour, "Optimal Regret for Policy Optimization in Contextual Bandits",
ICML 2026, arXiv 2602.13700.

Modules: ``opo`` (the policy-optimisation core and the OPO-CMAB agent), ``oracles`` (least-squares
regression oracles with snapshots), ``baselines`` (SquareCB, FALCON, epsilon-greedy, greedy, uniform,
supervised), ``envs`` (the synthetic finite class and the classification streams), ``stats`` (the
progressive-validation significance test), ``experiments`` and ``plots``.
"""
