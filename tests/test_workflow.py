"""The DAG builds at every scale; bad configs stop before any job with the key named."""
import pytest

from tests.helpers import REPO, snakemake


def _repo_copy(tmp_path):
    import shutil

    dest = tmp_path / "repo"
    shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(".git", ".venv", "results", "figures", "reports",
                                                             "data", "logs", ".snakemake", "__pycache__"))
    return dest


@pytest.mark.parametrize("scale", ["smoke", "quick", "full"])
def test_dag_dry_run(scale):
    out = snakemake("-n", "--cores", "2", "--config", f"scale={scale}")
    assert out.returncode == 0, out.stdout[-3000:]
    assert "reports/README.md" in out.stdout or "Nothing to be done" in out.stdout


@pytest.mark.parametrize("override,message", [
    ("scale=huge", "key 'scale'"),
    ("papers={'no_such_paper': True}", "key 'papers.no_such_paper'"),
    ("data_mirror=[1]", "key 'data_mirror'"),
])
def test_bad_workflow_config_names_the_key(override, message):
    out = snakemake("-n", "--cores", "1", "--config", override)
    assert out.returncode != 0
    assert message in out.stdout, out.stdout[-2000:]


def test_bad_paper_config_names_the_key(tmp_path):
    import yaml

    dest = _repo_copy(tmp_path)
    slug = sorted(p.parent.name for p in (dest / "papers").glob("*/config.yaml"))[0]
    path = dest / "papers" / slug / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["seed"] = "not-an-integer"
    path.write_text(yaml.safe_dump(config))
    out = snakemake("-n", "--cores", "1", cwd=dest)
    assert out.returncode != 0
    assert f"papers/{slug}/config.yaml: key 'seed'" in out.stdout, out.stdout[-2000:]


def test_not_run_experiments_leave_the_dag(tmp_path):
    """A partial run (claims.yaml not_run) builds no rule for the experiment and draws none of its figures."""
    import yaml

    dest = _repo_copy(tmp_path)
    path = dest / "papers" / "goma" / "claims.yaml"
    claims = yaml.safe_load(path.read_text())
    claims["not_run"] = {"full": {"stability": "left out of this partial run"}}
    path.write_text(yaml.safe_dump(claims, sort_keys=False))
    out = snakemake("goma", "-n", "--cores", "1", "--config", "scale=full", cwd=dest)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "goma_deterministic" in out.stdout and "goma_stability" not in out.stdout
    assert "stability_map.png" not in out.stdout and "pep_worst_case.png" in out.stdout

    claims["not_run"] = {"full": {"no_such_experiment": "x"}}
    path.write_text(yaml.safe_dump(claims, sort_keys=False))
    out = snakemake("goma", "-n", "--cores", "1", "--config", "scale=full", cwd=dest)
    assert out.returncode != 0
    assert "papers/goma/claims.yaml: key 'not_run.full'" in out.stdout, out.stdout[-2000:]
