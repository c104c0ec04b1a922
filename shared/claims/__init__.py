"""The audit engine (v2): claims.yaml -> verdicts -> reports/<scale>/<slug>.md -> reports/README.md.

A verdict must mean what a reader thinks it means: a wrong method, a missing mechanism or bad luck has to
show "not reproduced" or "inconclusive". The rules below are implemented in :mod:`shared.claims.check` and
tested in ``shared/tests/test_claims.py``.

claims.yaml (schema ``workflow/schemas/claims.schema.json``)::

    version: 2
    reduced: {quick: "4 games instead of 50"}   # scales smaller than the paper's, and how
    official_not_addressed: {3: "needs a 70B model"}   # official claims nothing here addresses, with why
    not_run: {full: {grid: "5760 fits, projected 30 CPU-hours"}}   # experiments left out of a partial run
    claims:
      - id: stoch-rate
        kind: paper                 # paper | check | finding
        statement: ...              # our own words
        source: Theorem 4           # where the paper says it
        official: [2]               # indices into ../shared/official_claims/claims.json[slug]
        samples: {file: stochastic/metrics.json, key: slope_per_seed.s_goma}   # list: one value per seed
        interval: t                 # t (default) or bootstrap: the 95% interval that decides
        check: {op: "<=", value: -0.4}
        origin: theory              # paper | theory | calibrated (our hypothesis or our own runs)
        paper_value: null           # only a number the paper (or its official claims) prints
        theory_value: -0.5          # a number from theory
        control: {name: noise-off, samples: {file: stochastic/metrics.json, key: control.noise_off.slope_per_seed}}
        requires: [{name: model-solves-task, metric: {...}, check: {op: ">=", value: 0.95}}]
        equivalent_at: [quick]      # scales that are equivalent to the paper's despite `reduced`
        expected: reproduced        # what the maintainers last saw (per scale allowed)

Kinds. ``paper``: a statement of the paper (empirical or theoretical). ``check``: a harness, library or
identity check of our own code (never counted as reproduced). ``finding``: an audit finding about the paper.

Deciding a claim at one scale, in this order:

1. ``skip_at`` lists the scale -> ``skipped``; the metric file or key is missing -> ``missing_metric``
   (always a gate failure), unless the claim reads an experiment that ``not_run`` lists at this scale ->
   ``not_evaluated`` with the reason given there (the gate accepts it whatever ``expected`` says).
2. ``requires``: every precondition must pass its check; otherwise ``not_evaluated`` naming the first failing
   precondition. A metric recorded as ``null`` is also ``not_evaluated``.
3. The outcome of the check. ``metric`` (one number): pass or fail. ``samples`` (a list over seeds,
   instances or runs): the 95% interval of the mean (Student t, or percentile bootstrap with 10,000 fixed
   resamples) decides: all of it on the passing side -> pass, all on the failing side -> fail, straddling ->
   inconclusive. Fewer than 5 samples at a judged scale: a pass can only be "reproduced-reduced" and a fail
   only "inconclusive" (``few_samples`` says why the budget forbids more).
4. Kind ``check`` / ``finding``: ``passes`` / ``fails`` / ``inconclusive``.
   Kind ``paper``: pass -> ``reproduced``, or ``reproduced_reduced`` when the scale is in ``reduced`` and
   not in ``equivalent_at``; fail -> ``not_reproduced``.
5. Controls. A ``control`` is a registered variant (anchor removed, noise off, ...) whose metrics the
   workflow computes at the same scale; the claim's check is evaluated on them. It flips when that outcome is
   ``fail``. A paper claim that passes while its control does not flip is ``cannot_fail`` and is counted with
   the checks. A paper claim without a control says why in ``no_control``.

An official claim's combined verdict over the paper claims that address it: any ``not_reproduced`` ->
not reproduced; else any ``inconclusive`` or ``cannot_fail`` -> inconclusive; else any
``reproduced_reduced`` -> reproduced-reduced; else any ``reproduced`` -> reproduced; else not evaluated.

Modules: :mod:`shared.claims.check` (loading and deciding), :mod:`shared.claims.stats` (intervals),
:mod:`shared.claims.official` (the official claims and their combined verdicts), :mod:`shared.claims.report`
(one paper's report), :mod:`shared.claims.index` (``reports/README.md``), :mod:`shared.claims.freshness`
(is a committed report rendered from the code it describes) and :mod:`shared.claims.gate`.
"""
from shared.claims.check import (CANNOT_FAIL, FAILS, INCONCLUSIVE, MISSING, NOT_EVALUATED, NOT_REPRODUCED, PASSES,
                                 REPRODUCED, REPRODUCED_REDUCED, SKIPPED, Verdict, check_for_scale,
                                 evaluate_check, evaluate_claim, expected_for_scale, format_check, load_claims,
                                 load_claims_file, verdict_label)

__all__ = ["REPRODUCED", "REPRODUCED_REDUCED", "NOT_REPRODUCED", "INCONCLUSIVE", "NOT_EVALUATED", "CANNOT_FAIL",
           "PASSES", "FAILS", "MISSING", "SKIPPED", "Verdict", "load_claims", "load_claims_file", "check_for_scale",
           "expected_for_scale", "evaluate_check", "evaluate_claim", "format_check", "verdict_label"]
