"""Imbalance metrics, capacity overflow, EPLB (against DeepSeek's published example and recorded
reference outputs), bias balancing and the load parsers."""

import json
from pathlib import Path

import numpy as np
import pytest

from core import balance as b

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eplb_reference.json"


def test_imbalance_ratio_example():
    # max 0.45 / mean (1.00 / 8 = 0.125) = 3.6
    assert b.imbalance_ratio([0.10, 0.09, 0.11, 0.08, 0.45, 0.07, 0.05, 0.05]) == pytest.approx(3.6)
    assert b.throughput_factor([0.10, 0.09, 0.11, 0.08, 0.45, 0.07, 0.05, 0.05]) == pytest.approx(1 / 3.6)
    np.testing.assert_allclose(b.imbalance_ratio([[1, 1], [3, 1]]), [1.0, 1.5])


def test_capacity_overflow_example():
    # capacity = 512 x 2 / 8 x 1.25 = 160; the hot expert gets 0.38 x 1,024 = 389.12 and overflows 229.12
    f = np.full(8, 0.62 / 7)
    f[4] = 0.38
    assert b.capacity_per_expert(512, 2, 8, 1.25) == 160
    over = b.capacity_overflow(f, 512, 2, 1.25)
    assert over[4] == pytest.approx(389.12 - 160)
    # the others get 0.62 / 7 x 1,024 = 90.7 < 160: nothing dropped
    assert np.all(np.delete(over, 4) == 0)


def test_cv_aux_loss_and_distributions():
    assert b.coefficient_of_variation([1, 1, 1, 1]) == 0
    assert b.coefficient_of_variation([2, 0]) == pytest.approx(1.0)  # std 1 / mean 1
    assert b.aux_balance_loss(np.full(4, 0.25), np.full(4, 0.25)) == pytest.approx(1.0)
    assert b.aux_balance_loss([1, 0, 0, 0], [1, 0, 0, 0]) == pytest.approx(4.0)
    assert b.zipf_loads(4, 0).tolist() == [0.25] * 4
    z = b.zipf_loads(3, 1)  # 1, 1/2, 1/3 normalised by 11/6
    np.testing.assert_allclose(z, [6 / 11, 3 / 11, 2 / 11])
    h = b.hot_expert_loads(8, 1, 0.38)
    assert h[0] == 0.38 and h.sum() == pytest.approx(1.0)
    d = b.dirichlet_loads(16, 0.5, seed=3)
    assert d.shape == (16,) and d.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(d, b.dirichlet_loads(16, 0.5, seed=3))  # seeded, reproducible


def test_gpu_loads():
    loads = np.array([4.0, 0, 2, 2])
    np.testing.assert_allclose(b.contiguous_gpu_loads(loads, 2), [4, 4])
    # expert 0 with 2 replicas in slots 0 and 3: GPU 0 = slots 0,1 = 2 + 0; GPU 1 = slots 2,3... see phy2log
    p2l = np.array([[0, 1, 2, 3, 0, 2]])
    cnt = np.array([[2, 1, 2, 1]])
    np.testing.assert_allclose(b.gpu_loads(loads[None, :], p2l, cnt, 3), [[2 + 0, 1 + 2, 2 + 1]])


def test_eplb_readme_example():
    w = np.array(
        [[90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86], [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27]]
    )
    phy2log, log2phy, logcnt = b.rebalance_experts(w, 16, 4, 2, 8)
    # published in deepseek-ai/EPLB README.md
    assert phy2log.tolist() == [
        [5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
        [7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1],
    ]
    # consistency of the three outputs
    assert logcnt.sum(axis=1).tolist() == [16, 16]
    for layer in range(2):
        for e in range(12):
            slots = [s for s in log2phy[layer, e] if s >= 0]
            assert len(slots) == logcnt[layer, e]
            assert all(phy2log[layer, s] == e for s in slots)


def test_eplb_balances_gpus():
    w = b.zipf_loads(64, 1.2, seed=1)[None, :] * 1000
    before = b.imbalance_ratio(b.contiguous_gpu_loads(w, 8))
    phy2log, _, logcnt = b.rebalance_experts(w, 80, 8, 2, 8)
    after = b.imbalance_ratio(b.gpu_loads(w, phy2log, logcnt, 8))
    assert after < before and after < 1.2


def test_eplb_matches_reference_outputs():
    """Outputs recorded from deepseek-ai/EPLB's eplb.py (PyTorch 2.13 CPU) by bench/eplb_reference_fixtures.py:
    both policies, redundant and not, continuous loads, integer loads with ties and all-equal loads.
    Identical, log2phy included (the order of equal loads follows the reference's introsort)."""
    data = json.loads(FIXTURES.read_text())
    policies = set()
    ties = 0
    for case in data["cases"]:
        phy2log, log2phy, logcnt = b.rebalance_experts(
            np.array(case["weight"], dtype=np.float32),
            case["num_replicas"],
            case["num_groups"],
            case["num_nodes"],
            case["num_gpus"],
        )
        assert phy2log.tolist() == case["phy2log"], case["name"]
        assert logcnt.tolist() == case["logcnt"], case["name"]
        assert log2phy.tolist() == case["log2phy"], case["name"]
        policies.add(case["policy"])
        ties += case["name"].startswith("ties")
    assert policies == {"hierarchical", "global"} and ties >= 4 and len(data["cases"]) >= 25


def test_introsort_order_is_a_descending_sort():
    from core.balance._introsort import introsort_order_desc

    rng = np.random.default_rng(0)
    for n in (1, 2, 16, 17, 100, 1000):
        keys = rng.integers(0, 5, n).astype(np.float32)
        order = introsort_order_desc(keys)
        assert sorted(order.tolist()) == list(range(n))
        assert np.all(np.diff(keys[order]) <= 0)
    # distinct keys: the same order as any sort
    keys = rng.random(300)
    np.testing.assert_array_equal(introsort_order_desc(keys), np.argsort(-keys))


def test_eplb_errors():
    w = np.ones((2, 12))
    with pytest.raises(ValueError, match="multiple of num_gpus"):
        b.rebalance_experts(w, 15, 4, 2, 8)
    with pytest.raises(ValueError, match="must be >= the 12 logical experts"):
        b.rebalance_experts(w, 8, 4, 2, 8)
    with pytest.raises(ValueError, match="finite"):
        b.rebalance_experts(np.full((1, 4), np.nan), 4, 1, 1, 1)


def test_bias_balancing_converges_and_large_steps_oscillate():
    slow = b.bias_balancing(64, 4, steps=150, tokens_per_step=1024, update_speed=0.0005, seed=1)
    good = b.bias_balancing(64, 4, steps=150, tokens_per_step=1024, update_speed=0.01, seed=1)
    big = b.bias_balancing(64, 4, steps=150, tokens_per_step=1024, update_speed=0.5, seed=1)
    start = good.imbalance[0]
    assert good.imbalance[-20:].mean() < 0.4 * start  # converges
    assert slow.imbalance[-20:].mean() > good.imbalance[-20:].mean()  # too slow
    assert big.imbalance[-20:].mean() > good.imbalance[-20:].mean()  # too large: oscillates
    assert np.std(np.diff(big.imbalance[-40:])) > np.std(np.diff(good.imbalance[-40:]))


def test_parse_csv():
    a = b.parse_loads_csv("e0,e1,e2\n1,2,3\n4,5,6\n")
    assert a.shape == (2, 3) and a[1, 2] == 6
    with pytest.raises(ValueError, match="line 3, column 1: 'x' is not a number"):
        b.parse_loads_csv("1,2\n3,4\nx,5\n")
    with pytest.raises(ValueError, match="line 2: 3 columns, but the first row has 2"):
        b.parse_loads_csv("1,2\n3,4,5\n")
    with pytest.raises(ValueError, match="line 1, column 2: loads must be finite numbers >= 0"):
        b.parse_loads_csv("1,-2\n")
    with pytest.raises(ValueError, match="no rows"):
        b.parse_loads_csv("a,b\n")
    with pytest.raises(ValueError, match="all zero"):
        b.parse_loads_csv("0,0\n")


def test_parse_prometheus():
    text = """# HELP expert_load tokens routed to each expert
# TYPE expert_load counter
expert_load{layer="0",expert="0"} 10
expert_load{layer="0",expert="1"} 30
expert_load{layer="1",expert="0"} 5
expert_load{layer="1",expert="1"} 5
other_metric 3
"""
    loads, name = b.parse_prometheus_loads(text)
    assert name == "expert_load" and loads.tolist() == [[10, 30], [5, 5]]
    with pytest.raises(ValueError, match="line 2: not a Prometheus sample"):
        b.parse_prometheus_loads('x{expert="1"} 2\n}}}} garbage\n')
    with pytest.raises(ValueError, match="no per-expert samples"):
        b.parse_prometheus_loads("up 1\n")
    with pytest.raises(ValueError, match="line 1: load must be a finite number"):
        b.parse_prometheus_loads('x{expert="1"} NaN\n')


def test_parse_csv_keeps_a_row_after_excel_byte_order_mark():
    """Excel's "CSV UTF-8" starts the file with U+FEFF: the first row used to be read as a header and lost
    (shape (1, 2)); with or without a header row, every row of numbers is kept."""
    assert b.parse_loads_csv("\ufeff1,2\n3,4\n").tolist() == [[1, 2], [3, 4]]
    assert b.parse_loads_csv("\ufeffe0,e1\r\n1,2\r\n").tolist() == [[1, 2]]


def test_parse_csv_typo_names_the_line_and_column():
    """A mistyped number (letter O for zero) used to make its row a 'header' and vanish silently."""
    with pytest.raises(ValueError, match=r"line 1, column 1: '12O' is not a number"):
        b.parse_loads_csv("12O,3\n4,5\n")
    with pytest.raises(ValueError, match=r"line 3, column 2: '4O' is not a number"):
        b.parse_loads_csv("e0,e1\n1,2\n3,4O\n")
    with pytest.raises(ValueError, match=r"line 2, column 1: '12O' is not a number"):
        b.parse_loads_csv("e0,e1\n12O,3\n")
    # a header is one first row of names, nothing that looks like a number
    assert b.parse_loads_csv("expert_0,expert_1\n5,7\n").tolist() == [[5, 7]]


def test_parse_csv_refuses_loads_beyond_the_limit():
    """1e308 is finite but two of them sum to inf, and every fraction became 0 or NaN downstream: a load
    above balance.MAX_LOAD (1e30) is refused naming the cell and the limit; 1e30 itself is read."""
    with pytest.raises(ValueError, match=r"line 2, column 1: 1e\+308 is above the largest load accepted, 1e\+30"):
        b.parse_loads_csv("1,1\n1e308,1e308\n")
    a = b.parse_loads_csv("1e30,1e30\n")
    assert a.tolist() == [[1e30, 1e30]] and np.isfinite(a.sum())


def test_parse_prometheus_duplicate_samples_past_the_limit():
    """Duplicate samples of one (layer, expert) add up (one per rank); 1e308 + 1e308 used to give inf."""
    one = 'm{layer="0",expert="1"} 1e308\nm{layer="0",expert="0"} 1\n'
    with pytest.raises(ValueError, match=r"line 1: load 1e\+308 is above the largest load accepted, 1e\+30"):
        b.parse_prometheus_loads(one)
    twice = 'm{layer="0",expert="1"} 6e29\nm{layer="0",expert="0"} 1\nm{layer="0",expert="1"} 6e29\n'
    # 6e29 + 6e29 = 1.2e30 > 1e30
    with pytest.raises(ValueError, match=r"line 3: the samples of layer 0, expert 1 add up to 1\.2e\+30, above"):
        b.parse_prometheus_loads(twice)
    loads, _ = b.parse_prometheus_loads(
        '\ufeffm{layer="0",expert="1"} 5e29\nm{layer="0",expert="1"} 5e29\nm{expert="0"} 1\n'
    )
    assert loads.tolist() == [[1, 1e30]]  # a BOM is accepted; 5e29 + 5e29 = 1e30 is at the limit


def test_the_router_simulation_is_bounded():
    # 256 experts x 512 tokens x 3 speeds = 393,216 scores a step: 2e8 allows 508 steps, so 400 run in full
    assert b.bias_steps_within_budget(256, 512, 3, 400) == 400
    # 5,000 x 512 x 3 = 7,680,000 a step: 2e8 / 7.68e6 = 26.04 -> 26
    assert b.bias_steps_within_budget(5000, 512, 3, 100) == 26
    assert b.bias_steps_within_budget(5000, 1_000_000, 16, 100) == 1  # never below one step
    with pytest.raises(ValueError, match="within 200,000,000 router scores"):
        b.bias_balancing(5000, 8, steps=27, tokens_per_step=512, update_speed=[0.001, 0.01, 0.1])
