"""Shared package of the reproduction monorepo: what two or more papers use.

Modules: ``seeding`` (random streams from one root seed), ``results`` (tidy CSV and metrics JSON, written
atomically), ``experiment`` (the command line every experiment runs through), ``plotting`` (one house
style), ``provenance``, ``data`` (checksummed fetch with offline mirrors), ``solvers`` (LP/QP/SOCP/SDP over
cvxpy), ``oracles`` (stochastic and zeroth-order oracles), ``fed`` (federated partitions, client sampling,
byte ledger), ``lm`` (tiny causal LM, offline pretrained models, LLM backends), ``sandbox`` (limited child
processes for model-generated code) and ``claims`` (the audit engine).
"""

__all__ = ["seeding", "results", "experiment", "plotting", "provenance", "data", "solvers", "oracles", "fed", "lm", "sandbox", "claims"]
