# Claims -> reports. One report per paper at the chosen scale, and the index over all reports.
for _slug in PAPERS:

    rule:
        name: f"{_slug}_report"
        input:
            claims=f"papers/{_slug}/claims.yaml",
            readme=f"papers/{_slug}/README.md",
            config=f"papers/{_slug}/config.yaml",
            results=experiment_outputs(_slug),
            figures=[f"{figures_dir(_slug)}/{f}" for f in drawn_figures(_slug)],
            code=AUDIT_CODE,
        output:
            report(report_path(_slug), category=_slug, subcategory="audit",
                   caption="../report/audit_caption.rst"),
        log:
            f"logs/{SCALE}/{_slug}/report.log",
        conda:
            CONDA_ENV
        params:
            python=PYTHON,
            slug=_slug,
            scale=SCALE,
        resources:
            mem_mb=1000,
            runtime=5,
        shell:
            "{params.python} -m shared.claims.report --slug {params.slug} --scale {params.scale} --out {output} "
            "2> {log}"


rule audit_index:
    input:
        [report_path(slug) for slug in PAPERS],
    output:
        "reports/README.md",
    log:
        f"logs/{SCALE}/audit_index.log",
    conda:
        CONDA_ENV
    params:
        python=PYTHON,
        scale=SCALE,
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "{params.python} -m shared.claims.index --scale {params.scale} --out {output} 2> {log}"
