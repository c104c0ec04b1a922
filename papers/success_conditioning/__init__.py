"""Success conditioning as an exact chi-square trust-region step.

Reproduction of D. Russo, "Success Conditioning as Policy Improvement: The Optimization Problem Solved by
Imitating Success", ICML 2026 (arXiv:2601.18175).

Modules: :mod:`.core` (bandit-level operators: success conditioning, influence terms, chi-square trust
region, return thresholding), :mod:`.mdp` (finite-horizon tabular MDPs: exact evaluation and Monte-Carlo
plug-in), :mod:`.gridworld` (stationary absorbing goal MDP and the softmax-linear policy class),
:mod:`.baselines` (policy gradient and normalised-occupancy trust region, matched in budget),
:mod:`.experiments` and :mod:`.plots`.
"""
