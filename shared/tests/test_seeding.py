import numpy as np
import pytest

from shared import seeding


def test_named_streams_are_reproducible_and_distinct():
    a1 = seeding.generator(7, "x").standard_normal(5)
    a2 = seeding.generator(7, "x").standard_normal(5)
    b = seeding.generator(7, "y").standard_normal(5)
    np.testing.assert_array_equal(a1, a2)
    assert not np.allclose(a1, b)


def test_adding_a_stream_does_not_change_the_others():
    first = seeding.generators(3, ["a", "b"])["b"].random(3)
    again = seeding.generators(3, ["z", "a", "b"])["b"].random(3)
    np.testing.assert_array_equal(first, again)


def test_spawn_matches_seedsequence_spawn():
    gens = seeding.spawn(11, 3)
    ref = [np.random.default_rng(s) for s in np.random.SeedSequence(11).spawn(3)]
    for g, r in zip(gens, ref):
        assert g.integers(1 << 30) == r.integers(1 << 30)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, None])
def test_bad_seed_is_named(bad):
    with pytest.raises(ValueError, match="seed"):
        seeding.generator(bad)
