# sacopt data rules: the public benchmark files, from the offline mirror (REPRO_DATA_MIRROR, tried first) or their
# canonical URLs, verified by SHA-256 (digests in papers/sacopt/datasets.py and data_manifest.json); and, for the
# smoke scale, synthetic stand-ins in the same formats written by papers/sacopt/synthetic.py (no network).
rule sacopt_fetch_jsonl:
    output:
        "data/sacopt/{fname}",
    wildcard_constraints:
        fname="IndustryOR_fixedV2.json|MAMO_ComplexLP_fixed.jsonl|NL4OPT.json|MAMO_EasyLP.json",
    log:
        "logs/sacopt/fetch_{fname}.log",
    run:
        from papers.sacopt.datasets import fetch_jsonl

        fetch_jsonl(wildcards.fname, output[0])


rule sacopt_fetch_complexor:
    output:
        "data/sacopt/ComplexOR/.complete",
    log:
        "logs/sacopt/fetch_complexor.log",
    run:
        from papers.sacopt.datasets import fetch_complexor

        fetch_complexor(output[0])


rule sacopt_data_synthetic:
    output:
        "data/sacopt/synthetic/.complete",
    log:
        "logs/sacopt/data_synthetic.log",
    params:
        python=PYTHON,
    conda:
        CONDA_ENV
    shell:
        "{params.python} -m papers.sacopt.synthetic {output} > {log} 2>&1"
