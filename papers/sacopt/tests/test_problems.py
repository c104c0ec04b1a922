import pytest

from papers.sacopt import problems as G
from papers.sacopt.formulation import solve_formulation


def test_deterministic_and_solved_by_two_backends():
    a = G.generate_problems(12, seed=5)
    b = G.generate_problems(12, seed=5)
    assert [p.text for p in a] == [p.text for p in b]
    assert [p.family for p in a[:6]] == list(G.FAMILIES)
    for p in a:
        assert solve_formulation(p.formulation, backend="highs").objective == pytest.approx(p.answer, rel=1e-6)
        assert len(p.fragments) == len(p.specs) == len(p.anchors["constraints"])


def test_templates_and_canonical_forms():
    spec = {"id": "c0", "label": "machine hours used", "op": "<=", "rhs": ["cap", 0],
            "rhs_label": "available machine hours",
            "terms": [{"var": "a", "coef": ["use", 0, 0]}, {"var": "b", "coef": ["use", 0, 1], "mult": 1.5}]}
    data = {"use": [[2, 3]], "cap": [100]}
    labels = {"a": "Product 1", "b": "Product 2"}
    assert G.describe(spec, data, labels) == ("The total machine hours used, 2 per unit of Product 1 plus 4.5 per "
                                              "unit of Product 2, must not exceed the available machine hours of 100.")
    assert G.canonical(spec, data) == ((("a", 2.0), ("b", 4.5)), "<=", 100.0)
    code = G.fragment_code(spec)
    assert code == ('prob += pulp.lpSum([data["use"][0][0] * x["a"], 1.5 * data["use"][0][1] * x["b"]]) '
                    '<= data["cap"][0], "c0"')
    assert "dat[" in G.fragment_code(spec, crash=True)
    c = G.spec_to_constraint(spec, data)
    assert c.coeffs == {"a": 2.0, "b": 4.5} and c.rhs == 100.0
    with pytest.raises(ValueError, match="style"):
        G.describe(spec, data, labels, style="poem")


@pytest.mark.parametrize("kwargs, match", [(dict(n=-1), "n"), (dict(n=2, families=["sudoku"]), "families"),
                                           (dict(n=2, families=[]), "families")])
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        G.generate_problems(seed=0, **kwargs)
