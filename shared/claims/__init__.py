"""The audit engine: claims.yaml -> verdicts -> reports/<scale>/<slug>.md -> reports/README.md.

- :mod:`shared.claims.check`: load claims (schema-validated) and evaluate one claim against metrics.
- :mod:`shared.claims.report`: render a paper's audit report (claims table, figures, deviations,
  performance, provenance) with a machine-readable verdict block.
- :mod:`shared.claims.index`: render ``reports/README.md`` from the reports that exist.
- :mod:`shared.claims.gate`: fail when a verdict differs from ``expected`` or from the committed report.
"""
from shared.claims.check import (REPRODUCED, NOT_REPRODUCED, MISSING, NOT_EVALUATED, SKIPPED, Verdict, load_claims, check_for_scale,
                                 expected_for_scale, evaluate_check, evaluate_claim, format_check)

__all__ = ["REPRODUCED", "NOT_REPRODUCED", "MISSING", "NOT_EVALUATED", "SKIPPED", "Verdict", "load_claims", "check_for_scale",
           "expected_for_scale", "evaluate_check", "evaluate_claim", "format_check"]
