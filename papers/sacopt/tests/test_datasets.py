import hashlib
import json

import pytest

from papers.sacopt import datasets as D


def _write(tmp_path, monkeypatch, lines, name="nl4opt"):
    fname = D.FILES[name][0]
    path = tmp_path / fname
    path.write_text("".join(lines))
    monkeypatch.setitem(D.FILES, name, (fname, D.FILES[name][1], hashlib.sha256(path.read_bytes()).hexdigest()))
    return path


def test_parse_and_ids(tmp_path, monkeypatch):
    _write(tmp_path, monkeypatch, [json.dumps({"en_question": "q1", "en_answer": "12.5"}) + "\n",
                                   json.dumps({"en_question": "q2", "en_answer": "No Best Solution"}) + "\n"])
    items = D.load_dataset("nl4opt", root=str(tmp_path))
    assert [(p.id, p.answer) for p in items] == [("1", 12.5), ("2", None)]


@pytest.mark.parametrize("line, match", [("{not json\n", "not JSON"), ('{"en_question": "q"}\n', "en_answer"),
                                         ('{"en_question": "q", "en_answer": "about 5"}\n', "neither a number")])
def test_bad_lines(tmp_path, monkeypatch, line, match):
    _write(tmp_path, monkeypatch, [line])
    with pytest.raises(D.DataError, match=match):
        D.load_dataset("nl4opt", root=str(tmp_path))


def test_missing_checksum_and_unknown(tmp_path):
    with pytest.raises(D.DataError, match="optmodel/NL4OPT.json.*raw.githubusercontent"):
        D.load_dataset("nl4opt", root=str(tmp_path))
    (tmp_path / "NL4OPT.json").write_text('{"en_question": "q", "en_answer": "1"}\n')   # truncated / altered
    with pytest.raises(D.DataError, match="checksum"):
        D.load_dataset("nl4opt", root=str(tmp_path))
    with pytest.raises(ValueError, match="name"):
        D.load_dataset("nlp4lp")
    with pytest.raises(D.DataError, match="missing"):
        D.load_dataset("complexor", root=str(tmp_path))


def test_manifest_digest():
    m = D.complexor_manifest()
    assert len(m) == 53 and "ComplexOR/prod/gt_model.txt" not in m
    text = "".join(f"{h}  {p}\n" for p, h in sorted(m.items()))
    assert hashlib.sha256(text.encode()).hexdigest() == D.COMPLEXOR_DIGEST


@pytest.mark.skipif(not (D.default_root() / "NL4OPT.json").is_file(), reason="data/sacopt not fetched")
def test_real_files():
    counts = {n: len(D.load_dataset(n)) for n in D.DATASETS}
    assert counts == {"industryor": 100, "complexlp": 203, "nl4opt": 245, "easylp": 652, "complexor": 18}
    assert sum(p.answer is None for p in D.load_dataset("nl4opt")) == 17
    assert D.load_dataset("industryor")[0].id == "1"
