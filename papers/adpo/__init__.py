"""Reproduction of "Autoregressive Direct Preference Optimization" (Oi, Ukai, Kaneko, Okazaki, Inoue; ICML 2026,
arXiv 2602.09533): DPO versus token-level and segment-level ADPO on synthetic preference tasks with a tiny LM."""
