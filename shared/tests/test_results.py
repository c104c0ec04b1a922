import math

import numpy as np
import pandas as pd
import pytest

from shared import results


def test_metrics_roundtrip_sorted_and_plain(tmp_path):
    path = results.write_metrics({"b": np.float64(1.5), "a": {"n": np.int64(3), "ok": np.bool_(True)}},
                                 tmp_path / "m.json")
    assert results.read_metrics(path) == {"a": {"n": 3, "ok": True}, "b": 1.5}
    assert path.read_text().index('"a"') < path.read_text().index('"b"')


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), np.float64("-inf")])
def test_non_finite_metric_names_the_key_and_writes_nothing(tmp_path, bad):
    with pytest.raises(results.NonFiniteError, match="p1.slope"):
        results.write_metrics({"p1": {"slope": bad}}, tmp_path / "m.json")
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    with pytest.raises(RuntimeError):
        with results.atomic_path(tmp_path / "out.csv") as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_tidy_requires_columns_and_roundtrips(tmp_path):
    with pytest.raises(ValueError, match="metric"):
        results.write_tidy([{"method": "a", "seed": 0, "step": 1, "value": 2.0}], tmp_path / "r.csv")
    rows = [{"method": "a", "seed": 0, "step": k, "metric": "h", "value": 0.1 * k, "extra": "x"} for k in range(3)]
    results.write_tidy(rows, tmp_path / "r.csv")
    frame = results.read_tidy(tmp_path / "r.csv")
    assert list(frame.columns[:5]) == list(results.TIDY_COLUMNS)
    assert frame["value"].tolist() == [0.0, 0.1, 0.2]


def test_get_key_names_missing_part():
    assert results.get_key({"a": {"b": 2}}, "a.b") == 2
    with pytest.raises(KeyError, match="'a.c'"):
        results.get_key({"a": {"b": 2}}, "a.c.d")


def test_mean_and_se_known_values():
    mean, se = results.mean_and_se([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5
    assert se == pytest.approx(math.sqrt(5 / 3) / 2)
    assert results.mean_and_se([5.0]) == (5.0, 0.0)


def test_check_finite_names_step_and_method():
    with pytest.raises(results.NonFiniteError, match=r"iterate \(method=eg, step=4\)"):
        results.check_finite([1.0, np.nan], what="iterate", method="eg", step=4)


def test_markdown_table_and_arrays(tmp_path):
    results.write_markdown_table(pd.DataFrame({"m": ["a"], "v": [1 / 3]}), tmp_path / "t.md")
    assert "| a | 0.3333 |" in (tmp_path / "t.md").read_text()
    results.write_arrays(tmp_path / "a.npz", x=np.arange(3))
    np.testing.assert_array_equal(results.read_arrays(tmp_path / "a.npz")["x"], np.arange(3))


def test_markdown_table_known_text_and_written_file(tmp_path):
    from shared.results import markdown_table, write_markdown_table

    frame = pd.DataFrame({"method": ["a", "b"], "value": [0.123456, float("nan")]})
    text = markdown_table(frame, floatfmt=".3g", title="T")
    assert text == "**T**\n\n| method | value |\n|---|---|\n| a | 0.123 |\n| b | nan |\n"
    path = write_markdown_table(frame, tmp_path / "t.md", floatfmt=".3g", title="T")
    assert path.read_text(encoding="utf-8") == text
