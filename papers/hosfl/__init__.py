"""HO-SFL: hybrid-order split federated learning with backprop-free clients and dimension-free aggregation.

Reproduction of Q. Chen, X. Wu, Y. Wang, X. Chen, "HO-SFL: Hybrid-Order Split Federated Learning with
Backprop-Free Clients and Dimension-Free Aggregation", ICML 2026, arXiv 2603.14773.

Modules: ``model`` (the split MLP and its client parameter vector), ``data`` (Digits and its client
partitions), ``hybrid`` (the Lagrangian multiplier, the client's directional scalars, the seed-shared
estimate and the straggler replay), ``training`` (HO-SFL and the baselines SFL-FO, SFL-ZO, MU-SplitFed and
the frozen client), ``experiments`` and ``plots``.
"""
