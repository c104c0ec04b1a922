"""sacopt: SAC-Opt, semantic-anchor backward correction for LLM optimisation modelling.

Reproduction of Zhang, Kang, Chen, Wang, Han, Zhong, Yuan, Ma, "Optimization Modeling via Semantic Anchored
Alignment" (ICML 2026, arXiv 2510.05115). Offline numbers come from scripted stand-ins (not an LLM).
"""
