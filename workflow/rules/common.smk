# Paper registry, scale and paths. Validates the workflow config and every enabled paper's config before
# any job runs: an unknown scale, an unknown paper or a wrong type stops here with the key named.
import glob
import os
import sys
from pathlib import Path

sys.path.insert(0, workflow.basedir)

from shared.config import ConfigError, enabled_papers, load_paper_config, validate  # noqa: E402
from shared.claims.check import load_claims_file  # noqa: E402
from shared.claims.freshness import engine_inputs  # noqa: E402
from shared.figure_sources import (experiments_to_run, figure_sources, figures_to_draw,  # noqa: E402
                                   report_subcategory, validate_figure_sources, validate_not_run)
from shared.paramschema import load_and_validate  # noqa: E402


def _validated_workflow_config(cfg):
    try:
        validate(cfg, "config.schema.json", where="workflow config (config/config.yaml + --config)")
        for slug in cfg["papers"]:
            if not Path(workflow.basedir, "papers", slug, "config.yaml").is_file():
                raise ConfigError(f"workflow config: key 'papers.{slug}': no paper folder papers/{slug}/ "
                                  f"with a config.yaml")
    except ConfigError as exc:
        raise WorkflowError(str(exc)) from None
    return cfg


def _validated_paper(slug):
    """The paper's config and the ``not_run`` mapping of its claims (experiments left out of a partial run)."""
    try:
        cfg = load_paper_config(f"papers/{slug}/config.yaml")
        validate_figure_sources(cfg, where=f"papers/{slug}/config.yaml")
        load_and_validate(f"papers/{slug}")  # every experiment's params, typed (papers/<slug>/params.schema.json)
        not_run = load_claims_file(f"papers/{slug}/claims.yaml").get("not_run", {})
        validate_not_run(cfg, not_run, where=f"papers/{slug}/claims.yaml")
    except ConfigError as exc:
        raise WorkflowError(str(exc)) from None
    return cfg, not_run


configfile: "config/config.yaml"


_validated_workflow_config(config)
SCALE = config["scale"]
PAPERS = enabled_papers(config)
PAPER_CONFIG, NOT_RUN = {}, {}
for _slug in PAPERS:
    PAPER_CONFIG[_slug], NOT_RUN[_slug] = _validated_paper(_slug)
def _uses_conda():
    methods = getattr(getattr(workflow, "deployment_settings", None), "deployment_method", ()) or ()
    return any(str(getattr(m, "name", m)).lower() == "conda" for m in methods)


# The interpreter of every job: this environment's, or the job's conda environment's under
# --software-deployment-method conda.
PYTHON = "python" if _uses_conda() else sys.executable
CONDA_ENV = os.path.join(workflow.basedir, "envs", "environment.yaml")  # for --software-deployment-method conda
if config.get("data_mirror"):  # optional: a mirror given as --config data_mirror=... is passed to every job
    os.environ.update({"REPRO_DATA_MIRROR": config["data_mirror"]})
# BLAS oversubscribes when two jobs share two cores: one thread per job unless a rule asks for more.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# Code an experiment's results depend on: the paper's own modules and the shared modules they import,
# followed transitively (shared.codedeps), so that editing one shared module reruns only the experiments whose
# code imports it. The audit engine is an input of the report rules only.
AUDIT_CODE = engine_inputs()   # the report renderer, what it imports, the official claims and the claims schema


def paper_code(slug, *, plots=False):
    """The paper's source files (without tests; ``plots.py`` only when ``plots``) and the shared modules they
    import: a change to any of them reruns the paper's experiments (or only its figures)."""
    from shared.codedeps import paper_dependencies

    return paper_dependencies(slug, plots=plots)


def figure_group(slug, name):
    """The report subcategory of a figure: the experiment it is drawn from (``figure_sources`` in the paper's
    config, else the experiment named in its file name), else tables apart from figures."""
    return report_subcategory(name, figure_sources(PAPER_CONFIG[slug], SCALE)[name])


def _rst_escape(text):
    """Plain text for an RST caption: ``|x|``, ``*``, backquotes and trailing ``_`` are markup in RST."""
    for char in ("\\", "|", "*", "`", "_"):
        text = text.replace(char, "\\" + char)
    return text


def caption_file(slug, name):
    """An RST caption for ``snakemake --report``: the paper's title, the figure's caption from the paper's
    ``captions:`` (or its file name) and the scale; written under .snakemake/ when the DAG is built."""
    meta = PAPER_CONFIG[slug]["paper"]
    text = PAPER_CONFIG[slug].get("captions", {}).get(name, f"{name} (no caption given in papers/{slug}/config.yaml)")
    path = Path(".snakemake", "report_captions", slug, f"{name}.rst")
    body = f"**{_rst_escape(meta['title'])}** ({slug}, scale ``{SCALE}``)\n\n{_rst_escape(text)}\n"
    if not path.is_file() or path.read_text(encoding="utf-8") != body:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return str(path.resolve())


def results_dir(slug):
    return f"results/{SCALE}/{slug}"


def figures_dir(slug):
    return f"figures/{SCALE}/{slug}"


def report_path(slug):
    return f"reports/{SCALE}/{slug}.md"


def run_experiments(slug):
    """``{name: entry}`` of the experiments that run at this scale (all but the claims' ``not_run``)."""
    return experiments_to_run(PAPER_CONFIG[slug], SCALE, NOT_RUN[slug])


def drawn_figures(slug):
    """The figures drawn at this scale (all but those drawn from a not-run experiment)."""
    return figures_to_draw(PAPER_CONFIG[slug], SCALE, NOT_RUN[slug])


def experiment_outputs(slug):
    """Every file the paper's experiments write at this scale: the three of each, and its declared extras."""
    return [f"{results_dir(slug)}/{name}/{f}" for name, entry in run_experiments(slug).items()
            for f in ("metrics.json", "results.csv", "provenance.json", *entry.get("outputs", []))]


def remove_stale_partial_files(age_s=300):
    """Delete the temporary ``.part`` files of writes that a killed run left behind (older than ``age_s``)."""
    import time

    now = time.time()
    for pattern in ("results/**/.*.part", "data/**/.*.part", "figures/**/.*.part", "reports/**/.*.part"):
        for path in glob.glob(pattern, recursive=True):
            try:
                if now - os.path.getmtime(path) > age_s:
                    os.remove(path)
            except OSError:
                pass
