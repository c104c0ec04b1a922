# mipcrim data rule: a G-set graph, fetched from its canonical URL or the offline mirror (REPRO_DATA_MIRROR) and
# verified by the SHA-256 of its canonical text (committed in papers/mipcrim/gset_checksums.csv). Quick and full
# read these files; the smoke scale uses ER graphs generated in code (papers/mipcrim/experiments.py `_graph`).
rule mipcrim_fetch_gset:
    output:
        "data/mipcrim/gset/{name}.txt",
    wildcard_constraints:
        name="G[0-9]+",
    log:
        "logs/mipcrim/fetch_gset_{name}.log",
    run:
        from papers.mipcrim.gset import fetch_gset

        fetch_gset(wildcards.name, output[0])
