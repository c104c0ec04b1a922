"""Every paper folder is registered in the workflow config and complete."""
import re

import pytest

from tests.helpers import REPO, paper_slugs
from shared.claims.check import load_claims, load_claims_file
from shared.claims.official import coverage_problems
from shared.config import SCALES, load_paper_config, load_yaml, validate

SLUGS = paper_slugs()
WORKFLOW_CONFIG = load_yaml(REPO / "config" / "config.yaml")


def test_workflow_config_is_valid_and_lists_every_paper():
    validate(WORKFLOW_CONFIG, "config.schema.json", where="config/config.yaml")
    assert sorted(WORKFLOW_CONFIG["papers"]) == SLUGS


def test_disabled_papers_are_named_in_the_audit_index():
    """A paper left out of `rule all` (papers.<slug>: false) is never dropped silently: the index says so."""
    disabled = [slug for slug, on in WORKFLOW_CONFIG["papers"].items() if not on]
    index = (REPO / "reports" / "README.md").read_text(encoding="utf-8") if disabled else ""
    for slug in disabled:
        assert f"`{slug}`" in index, f"{slug} is disabled but reports/README.md does not list it"


@pytest.mark.parametrize("slug", SLUGS)
def test_paper_folder_is_complete(slug):
    folder = REPO / "papers" / slug
    for name in ("README.md", "rules.smk", "config.yaml", "claims.yaml", "__init__.py", "experiments.py",
                 "plots.py"):
        assert (folder / name).is_file(), f"papers/{slug}/{name} is missing"
    assert list((folder / "tests").glob("test_*.py")), f"papers/{slug}/tests has no test_*.py"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for heading in ("Fidelity", "Deviations"):
        assert re.search(rf"^## {heading}\s*$", readme, flags=re.M), f"papers/{slug}/README.md lacks ## {heading}"


def _refs(claim):
    """Every metrics reference of a claim: its value, spread, control and preconditions."""
    holders = [claim, claim.get("control", {}), *claim.get("requires", [])]
    yield from (h[k] for h in holders for k in ("metric", "samples") if k in h)
    if "spread" in claim:
        yield claim["spread"]


@pytest.mark.parametrize("slug", SLUGS)
def test_claims_point_at_configured_experiments(slug):
    config = load_paper_config(REPO / "papers" / slug / "config.yaml")
    claims = load_claims(REPO / "papers" / slug / "claims.yaml")
    for scale in ("quick", "full"):
        experiments = set(config[scale]["experiments"])
        for claim in claims:
            for ref in _refs(claim):
                assert ref["file"].split("/")[0] in experiments, (
                    f"{slug}: claim {claim['id']} reads {ref['file']}, not an experiment at scale {scale}")
    performance = set(config.get("performance", []))
    for scale in SCALES:
        assert performance <= set(config[scale]["figures"]) | performance  # names are figure files
    assert performance, f"{slug}: config.yaml declares no performance table"


@pytest.mark.parametrize("slug", [s for s, on in WORKFLOW_CONFIG["papers"].items() if on])
def test_quick_report_and_figures_are_committed(slug):
    assert (REPO / "reports" / "quick" / f"{slug}.md").is_file(), f"reports/quick/{slug}.md is missing"
    config = load_paper_config(REPO / "papers" / slug / "config.yaml")
    for fig in config["quick"]["figures"]:
        assert (REPO / "figures" / "quick" / slug / fig).is_file(), f"figures/quick/{slug}/{fig} is missing"


@pytest.mark.parametrize("slug", SLUGS)
def test_every_official_claim_is_addressed_or_given_a_reason(slug):
    doc = load_claims_file(REPO / "papers" / slug / "claims.yaml")
    assert coverage_problems(slug, doc) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_experiment_parameters_are_typed(slug):
    """Every experiment has a parameter schema and the config satisfies it at every scale."""
    from shared.paramschema import load_and_validate

    load_and_validate(REPO / "papers" / slug)
