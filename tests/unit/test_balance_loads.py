"""The synthetic expert-load profiles (core.balance.loads) the Balance page draws."""

import numpy as np
import pytest

from core.balance.loads import PROFILES, synthetic_loads, zipf_loads


def test_zipf_table_is_a_shuffled_harmonic_profile_per_layer():
    # s = 1 over 3 experts: 1, 1/2, 1/3 over their sum 11/6 = 6/11, 3/11, 2/11 in some order per layer;
    # max / mean = (6/11) / (1/3) = 18/11 = 1.636 in every layer
    t = synthetic_loads("zipf", 3, 4, s=1.0, seed=7)
    assert t.shape == (4, 3)
    for row in t:
        np.testing.assert_allclose(sorted(row), [2 / 11, 3 / 11, 6 / 11])
        assert row.max() / row.mean() == pytest.approx(18 / 11)
    # layer i is seeded seed + i: the Balance page's profile at seed 7 is reproducible layer by layer
    np.testing.assert_array_equal(t[2], zipf_loads(3, 1.0, seed=9))
    np.testing.assert_array_equal(t, synthetic_loads("zipf", 3, 4, s=1.0, seed=7))


def test_hot_experts_same_in_every_layer():
    # 2 hot experts share 50% of 8 experts' assignments: 0.25 each; the other 6 share 0.5: 1/12 each;
    # max / mean = 0.25 / (1/8) = 2.0
    t = synthetic_loads("hot", 8, 3, n_hot=2, hot_share=0.5)
    assert t.shape == (3, 8)
    np.testing.assert_allclose(t, np.tile([0.25, 0.25] + [1 / 12] * 6, (3, 1)))
    assert t.max() / t.mean() == pytest.approx(2.0)


def test_uniform_and_dirichlet_rows_sum_to_one():
    np.testing.assert_array_equal(synthetic_loads("uniform", 4, 2), np.full((2, 4), 0.25))
    d = synthetic_loads("dirichlet", 16, 1, concentration=0.5, seed=3)
    assert d.shape == (1, 16)  # one layer stays a table
    np.testing.assert_allclose(d.sum(axis=1), [1.0])
    many = synthetic_loads("dirichlet", 16, 5, concentration=0.5, seed=3)
    assert many.shape == (5, 16) and np.all(many >= 0)
    np.testing.assert_allclose(many.sum(axis=1), np.ones(5))
    assert set(PROFILES) == {"dirichlet", "zipf", "hot", "uniform"}


@pytest.mark.parametrize(
    ("profile", "n", "layers", "match"),
    [
        ("pareto", 8, 2, "unknown load profile 'pareto'"),
        ("zipf", 0, 2, "n_experts must be a whole number"),
        ("uniform", 8, 0, "layers must be a whole number"),
        ("uniform", 100_000, 10_000, "exceeds 10,000,000"),  # 10^9 cells: 8 GB of float64 refused
    ],
)
def test_refuses_what_it_cannot_draw(profile, n, layers, match):
    with pytest.raises(ValueError, match=match):
        synthetic_loads(profile, n, layers)
