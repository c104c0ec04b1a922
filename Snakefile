# Regenerates every figure, table and audit report from raw or generated data.
#   snakemake                                     every enabled paper at the configured scale, then the index
#   snakemake goma                                one paper (its target rule is its slug)
#   snakemake goma --config scale=smoke           another scale (smoke | quick | full): the target first
#   snakemake --profile workflow/profiles/slurm   the same on a SLURM cluster
# The profile workflow/profiles/default (found through profiles/) is loaded for every command.
from snakemake.exceptions import WorkflowError


include: "workflow/rules/common.smk"


report: "workflow/report/workflow.rst"


onstart:
    remove_stale_partial_files()


rule all:
    default_target: True
    input:
        [report_path(slug) for slug in PAPERS],
        "reports/README.md",


include: "workflow/rules/papers.smk"
include: "workflow/rules/audit.smk"


for _rules in sorted(glob.glob("papers/*/rules.smk")):

    include: _rules
