# sacopt data rules: the public benchmark files, from the offline mirror (REPRO_DATA_MIRROR, tried first) or their
# canonical URLs, verified by SHA-256 (digests in papers/sacopt/datasets.py and data_manifest.json).
rule sacopt_fetch_jsonl:
    output:
        "data/sacopt/{fname}"
    wildcard_constraints:
        fname="IndustryOR_fixedV2.json|MAMO_ComplexLP_fixed.jsonl|NL4OPT.json|MAMO_EasyLP.json"
    run:
        from shared.data import fetch
        from papers.sacopt.datasets import FILES
        (fname, url, sha), = [v for v in FILES.values() if v[0] == wildcards.fname]
        fetch(url, output[0], sha256=sha, mirror_relpath=f"optmodel/{fname}")

rule sacopt_fetch_complexor:
    output:
        "data/sacopt/ComplexOR/.complete"
    run:
        from pathlib import Path
        from shared.data import fetch
        from papers.sacopt.datasets import COMPLEXOR_BASE, complexor_manifest
        for rel, sha in complexor_manifest().items():
            fetch(COMPLEXOR_BASE + rel.split("/", 1)[1], f"data/sacopt/{rel}", sha256=sha,
                  mirror_relpath=f"optmodel/{rel}")
        Path(output[0]).write_text("ok\n")
