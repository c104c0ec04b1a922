"""DREAM: drift-corrected federated multi-objective learning (reconstruction).

Reproduction of Y. Zhou, Y. Ou, X. Shi, "DREAM: A Unified Framework for Drift-Corrected Federated
Multi-Objective Learning", ICML 2026. Only the abstract is available: the algorithm here (DREAM-R), its
metrics and experiments are reconstructed from it and from SCAFFOLD, FMGDA, MoCo/MoDo and SDMGrad.

Modules: ``aggregation`` (the server weight QP with a task correction matrix), ``problems`` (heterogeneous
quadratic federation), ``algorithms`` (DREAM-R and the baselines on quadratics), ``data`` and ``training``
(MultiDigits, a two-digit substitute for MultiMNIST, in torch), ``experiments`` and ``plots``.
"""
