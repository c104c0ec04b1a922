"""LU-KV: "Predicting Future Utility: Global Combinatorial Optimization for Task-Agnostic KV Cache Eviction"
(Tang, Jiao, Chen, Liu, Li, Chen; ICML 2026; arXiv 2602.08585): long-horizon-utility head budget allocation."""
