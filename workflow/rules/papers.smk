# The rules every paper gets, built from its config.yaml at the chosen scale:
#   <slug>_<experiment>  config, code and data     -> results/<scale>/<slug>/<experiment>/{metrics.json,results.csv,provenance.json}
#   <slug>_figures       every experiment's results -> figures/<scale>/<slug>/<figures listed in config>
#   <slug>_report        claims + metrics + figures -> reports/<scale>/<slug>.md   (workflow/rules/audit.smk)
#   <slug>               the paper's target
for _slug in PAPERS:
    for _name, _entry in run_experiments(_slug).items():
        _res = _entry.get("resources", {})
        _gpu = {"gpu": _res["gpu"]} if SCALE == "full" and _res.get("gpu") else {}  # full-scale torch rules only

        rule:
            name: f"{_slug}_{_name}"
            input:
                config=f"papers/{_slug}/config.yaml",
                code=paper_code(_slug),
                data=_entry.get("inputs", []),
            output:
                metrics=f"{results_dir(_slug)}/{_name}/metrics.json",
                tidy=f"{results_dir(_slug)}/{_name}/results.csv",
                provenance=f"{results_dir(_slug)}/{_name}/provenance.json",
                extra=[f"{results_dir(_slug)}/{_name}/{f}" for f in _entry.get("outputs", [])],
            log:
                f"logs/{SCALE}/{_slug}/{_name}.log",
            params:
                python=PYTHON,
                module=f"papers.{_slug}.experiments",
                experiment=_name,
                scale=SCALE,
                out=lambda wildcards, output: os.path.dirname(output.metrics),
            conda:
                CONDA_ENV
            threads: _res.get("threads", 1)
            resources:
                mem_mb=_res.get("mem_mb", 2000),
                runtime=_res.get("runtime", 20),
                **_gpu,
            shell:
                ": > {log}; {params.python} -m {params.module} {params.experiment} --config {input.config} "
                "--scale {params.scale} --out {params.out} 2>> {log} | tee -a {log}"

    rule:
        name: f"{_slug}_figures"
        input:
            experiment_outputs(_slug),
            code=paper_code(_slug, plots=True),
        output:
            [report(f"{figures_dir(_slug)}/{f}", category=_slug, subcategory=figure_group(_slug, f),
                    caption=caption_file(_slug, f)) for f in drawn_figures(_slug)],
            [f"{figures_dir(_slug)}/{f[:-4]}.pdf" for f in drawn_figures(_slug) if f.endswith(".png")],
        log:
            f"logs/{SCALE}/{_slug}/figures.log",
        params:
            python=PYTHON,
            module=f"papers.{_slug}.plots",
            results=lambda wildcards, input: os.path.dirname(os.path.dirname(input[0])),
            out=lambda wildcards, output: os.path.dirname(output[0]),
            scale=SCALE,
        conda:
            CONDA_ENV
        resources:
            mem_mb=2000,
            runtime=10,
        shell:
            "{params.python} -m {params.module} --results {params.results} --out {params.out} "
            "--scale {params.scale} > {log} 2>&1"

    rule:
        name: _slug
        input:
            report_path(_slug),
