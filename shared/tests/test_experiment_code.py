"""Which code one experiment can run, and when its committed metrics are older than that code."""
import json
import subprocess

import pytest

from shared.experiment_code import Snapshot, experiment_changes, experiment_code

FILES = {
    "shared/__init__.py": "",
    "shared/experiment.py": "from shared import results\n",
    "shared/results.py": "R = 1\n",
    "shared/helper.py": "X = 1\n",
    "shared/unused.py": "Y = 1\n",
    "papers/__init__.py": "",
    "papers/q/__init__.py": "",
    "papers/q/methods.py": '"""Methods."""\nfrom shared.helper import X\nRATE = 0.5\n\n\n'
                           'def solve(a):\n    """Solve."""\n    return a * RATE\n\n\n'
                           'def other(a):\n    return X + a\n',
    "papers/q/worker.py": "def go():\n    return 1\n",
    "papers/q/experiments.py": (
        "from shared.experiment import main\n"
        "from . import methods as M\n"
        "from papers.q.methods import other\n\n\n"
        "def run_a(params, ctx):\n    return M.solve(params['x'])\n\n\n"
        "def run_b(params, ctx):\n    return other(params['x'])\n\n\n"
        "def run_c(params, ctx):\n    return _call('papers.q.worker:go')\n\n\n"
        "def _call(s):\n    return s\n\n\n"
        "EXPERIMENTS = {'a': run_a, 'b': run_b, 'c': run_c}\n\n"
        "if __name__ == '__main__':\n    main(EXPERIMENTS)\n"),
    "papers/q/config.yaml": ("seed: 0\nfull:\n  experiments:\n    a: {params: {x: 1}}\n    b: {params: {x: 2}}\n"
                             "    c: {params: {x: 3}, resources: {runtime: 5}}\n  figures: []\n"),
    "papers/q/README.md": "words\n",
    "papers/q/tests/test_q.py": "from shared import unused\n",
}


def _git(root, *args):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True, env=env).stdout


def _commit(root, files: dict, message: str) -> str:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", message)
    return _git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path):
    _git(tmp_path, "init", "-q")
    return tmp_path, _commit(tmp_path, FILES, "one")


def _edit(root, rel, old, new):
    text = (root / rel).read_text()
    assert old in text
    return {rel: text.replace(old, new)}


def test_an_experiment_reaches_the_definitions_it_names_and_no_others(repo):
    root, commit = repo
    code, files = experiment_code("q", "a", Snapshot(root, commit))
    assert {"papers/q/experiments.py::run_a", "papers/q/methods.py::solve", "papers/q/methods.py::RATE"} <= set(code)
    assert not {"papers/q/experiments.py::run_b", "papers/q/methods.py::other", "papers/q/worker.py::go",
                "shared/helper.py::X"} & set(code)
    # imported: the runner, what it imports, what the paper's modules import at top level, the packages on the
    # way; never what only the tests import
    assert files == {"shared/__init__.py", "shared/experiment.py", "shared/results.py", "shared/helper.py",
                     "papers/__init__.py", "papers/q/__init__.py", "papers/q/experiments.py", "papers/q/methods.py"}
    code_b, _ = experiment_code("q", "b", Snapshot(root, commit))
    assert "papers/q/methods.py::other" in code_b and "papers/q/methods.py::solve" not in code_b
    assert "shared/helper.py::X" in code_b          # shared definitions are followed like the paper's own


def test_a_module_named_in_a_string_is_reached(repo):
    root, commit = repo
    code, _ = experiment_code("q", "c", Snapshot(root, commit))
    assert "papers/q/worker.py::go" in code


def test_changes_are_attributed_to_the_experiments_that_can_run_them(repo):
    root, commit = repo
    assert all(experiment_changes("q", e, commit, root) == [] for e in "abc")
    _commit(root, _edit(root, "papers/q/methods.py", "return X + a", "return X - a"), "other")
    assert experiment_changes("q", "a", commit, root) == []
    assert experiment_changes("q", "b", commit, root) == ["papers/q/methods.py::other"]
    _commit(root, _edit(root, "papers/q/worker.py", "return 1", "return 2"), "worker")
    assert experiment_changes("q", "c", commit, root) == ["papers/q/worker.py::go"]
    _commit(root, {"shared/helper.py": "X = 2\n"}, "shared")
    assert experiment_changes("q", "a", commit, root) == []
    assert experiment_changes("q", "b", commit, root) == ["papers/q/methods.py::other", "shared/helper.py::X"]
    _commit(root, {"shared/results.py": "R = 2\n"}, "runner's import")   # R is used by no one
    assert experiment_changes("q", "a", commit, root) == []
    _commit(root, {"shared/results.py": "R = 2\nprint(R)\n"}, "runner's import runs code")
    assert experiment_changes("q", "a", commit, root) == ["shared/results.py::<module>", "shared/results.py::R"]


def test_docstrings_comments_and_formatting_do_not_count(repo):
    root, commit = repo
    edit = _edit(root, "papers/q/methods.py", '"""Solve."""\n    return a * RATE', '"""Solve it."""\n    return (a  *  RATE)  # x')
    _commit(root, edit, "cosmetic")
    _commit(root, _edit(root, "papers/q/methods.py", '"""Methods."""', '"""The methods."""'), "module doc")
    assert experiment_changes("q", "a", commit, root) == []


def test_the_config_counts_entry_by_entry(repo):
    root, commit = repo
    _commit(root, _edit(root, "papers/q/config.yaml", "runtime: 5", "runtime: 50"), "runtime")
    assert experiment_changes("q", "c", commit, root) == []            # scheduling, not a metric input
    _commit(root, _edit(root, "papers/q/config.yaml", "b: {params: {x: 2}}", "b: {params: {x: 7}}"), "b")
    assert experiment_changes("q", "a", commit, root) == []
    assert experiment_changes("q", "b", commit, root) == ["papers/q/config.yaml: full.experiments.b.params"]
    _commit(root, _edit(root, "papers/q/config.yaml", "seed: 0", "seed: 1"), "seed")
    assert "papers/q/config.yaml: seed" in experiment_changes("q", "a", commit, root)


def test_documentation_and_tests_do_not_count_but_data_files_do(repo):
    root, commit = repo
    _commit(root, {"papers/q/README.md": "other words\n", "papers/q/claims.yaml": "version: 2\n",
                   "papers/q/tests/test_q.py": "\n", "shared/unused.py": "Y = 2\n"}, "docs")
    assert all(experiment_changes("q", e, commit, root) == [] for e in "abc")
    _commit(root, {"papers/q/table.csv": "a,b\n"}, "data")
    assert all(experiment_changes("q", e, commit, root) == ["papers/q/table.csv"] for e in "abc")


def test_an_experiment_not_named_statically_reaches_the_whole_module(repo):
    root, commit = repo
    code, _ = experiment_code("q", "unlisted", Snapshot(root, commit))
    assert "papers/q/experiments.py::*" in code


def test_an_unknown_commit_is_none(repo):
    root, _ = repo
    assert experiment_changes("q", "a", "0" * 40, root) is None


def test_metrics_age_warnings_group_experiments_by_what_changed(repo):
    from shared.claims.gate import metrics_age_warnings

    root, commit = repo
    for e in "abc":
        (root / "results" / "full" / "q" / e).mkdir(parents=True)
        (root / "results" / "full" / "q" / e / "provenance.json").write_text(
            json.dumps({"commit": commit, "dirty": False}))
    assert metrics_age_warnings("q", root) == []
    _commit(root, _edit(root, "papers/q/methods.py", "return X + a", "return X - a"), "other")
    (warning,) = metrics_age_warnings("q", root)
    assert "experiment(s) b ran at" in warning and "papers/q/methods.py::other" in warning and commit[:10] in warning
    (root / "results" / "full" / "q" / "a" / "provenance.json").write_text(json.dumps({"commit": commit,
                                                                                      "dirty": True}))
    assert any("experiment(s) a ran with uncommitted" in w for w in metrics_age_warnings("q", root))


def test_a_dotted_import_without_alias_reaches_the_module(repo):
    root, _ = repo
    text = (root / "papers/q/experiments.py").read_text()
    commit = _commit(root, {"papers/q/experiments.py": text.replace(
        "def run_a(params, ctx):\n    return M.solve(params['x'])",
        "def run_a(params, ctx):\n    import shared.unused\n    return shared.unused.Y")}, "dotted")
    code, files = experiment_code("q", "a", Snapshot(root, commit))
    assert "shared/unused.py" in files and "shared/unused.py::*" in code


def test_an_import_line_counts_name_by_name(repo):
    root, commit = repo
    _commit(root, _edit(root, "papers/q/experiments.py", "from papers.q.methods import other",
                        "from papers.q.methods import RATE, other"), "import one more name")
    _commit(root, {"shared/extra.py": "Z = 1\n"}, "a new shared module")
    _commit(root, _edit(root, "papers/q/experiments.py", "from shared.experiment import main",
                        "from shared.experiment import main\nfrom shared.extra import Z"), "import it")
    assert all(experiment_changes("q", e, commit, root) == [] for e in "abc")


def test_a_comprehension_over_the_table_does_not_join_the_experiments(repo):
    root, _ = repo
    text = (root / "papers/q/experiments.py").read_text()
    commit = _commit(root, {"papers/q/experiments.py": text.replace(
        "EXPERIMENTS = {'a': run_a, 'b': run_b, 'c': run_c}",
        "EXPERIMENTS = {name: _call(fn) for name, fn in {'a': run_a, 'b': run_b, 'c': run_c}.items()}")},
        "wrapped")
    code, _ = experiment_code("q", "a", Snapshot(root, commit))
    assert "papers/q/experiments.py::run_a" in code and "papers/q/experiments.py::_call" in code
    assert "papers/q/experiments.py::run_b" not in code
