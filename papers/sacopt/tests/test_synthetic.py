"""The synthetic smoke stand-ins: read by the public loaders, answers exact, tampering detected."""
import json

import pytest

from papers.sacopt import datasets as D
from papers.sacopt.complexor import audit
from papers.sacopt.synthetic import knapsack_brute_force, synthetic_files, write_synthetic


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    marker = tmp_path_factory.mktemp("synthetic") / ".complete"
    write_synthetic(marker)
    return marker.parent


def test_knapsack_brute_force_small_known_answer():
    # values 60, 100, 120, weights 10, 20, 30, capacity 50: take the last two (220)
    assert knapsack_brute_force([60, 100, 120], [10, 20, 30], 50) == 220.0
    assert knapsack_brute_force([5], [10], 9) == 0.0


def test_files_are_deterministic():
    synthetic_files.cache_clear()
    first = dict(synthetic_files())
    synthetic_files.cache_clear()
    assert synthetic_files() == first


@pytest.mark.parametrize("name", D.DATASETS)
def test_loaders_read_synthetic(root, name):
    items = D.load_dataset(name, root=str(root), source="synthetic")
    assert items and all(p.text for p in items)
    if name != "complexor":
        assert sum(p.answer is None for p in items) == 1          # one "No Best Solution" item per file


def test_complexor_reference_reproduces_brute_force(root):
    res = audit(D.load_dataset("complexor", root=str(root), source="synthetic"))
    assert res["n_with_gt_model"] == 1 and res["n_reproduced"] == 1


def test_tampered_file_is_rejected(root, tmp_path):
    for rel, data in synthetic_files().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    rec = json.loads((tmp_path / "NL4OPT.json").read_text().splitlines()[0])
    rec["en_answer"] = "1.0"
    (tmp_path / "NL4OPT.json").write_text(json.dumps(rec) + "\n")
    with pytest.raises(D.DataError, match="checksum"):
        D.load_dataset("nl4opt", root=str(tmp_path), source="synthetic")
    with pytest.raises(ValueError, match="source"):
        D.load_dataset("nl4opt", source="mirror")
