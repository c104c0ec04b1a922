"""irefg_sos: "Solving Imperfect-Recall Games via Sum-of-Squares Optimization" (Zheng, Sim, Varvitsiotis,
ICML 2026, arXiv 2602.21722) - moment / SOS hierarchies over behavioural strategies of imperfect-recall
extensive-form games: ex-ante optimal strategies, SOS-concavity certificates and Nash equilibria."""
