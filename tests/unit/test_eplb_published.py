"""EPLB's modelled gain next to published EPLB measurements (issue #20): ATOM on 8 x MI355X (DeepSeek-V4-Pro) and
LMSYS on 32 x H100 (DeepSeek-V3). The published ratios are computed here from the published throughputs."""

import dataclasses

import pytest

from core.balance.published import EplbRow, compare_case, load_eplb_cases
from core.catalog import load_catalog

cat = load_catalog()


def case(prefix):
    return next(c for c in load_eplb_cases() if c.id.startswith(prefix))


def test_published_ratios_are_the_published_throughputs_over_the_baseline():
    atom = compare_case(case("atom-"), cat)
    # hand: 7.56 / 6.48 = 1.1667, 8.06 / 6.48 = 1.2438, 8.68 / 6.48 = 1.3395 (ATOM PR #1210: +16.7 / +24.4 / +34.0%)
    assert [round(r.published_ratio, 4) for r in atom] == [1.1667, 1.2438, 1.3395]
    lmsys = compare_case(case("lmsys-"), cat)
    # hand: 50,302 / 59,337 = 0.8477: real EPLB 15.2% below the simulated perfect balance
    assert lmsys[0].published_ratio == pytest.approx(0.8477, abs=1e-4)


def test_model_stands_within_ten_percent_of_each_published_eplb_gain():
    # one assumption for both cases (Zipf s = 1.0, picked on ATOM's rearrange row); the 64-redundant rows and the
    # LMSYS gap are predictions. Measured: +1.2%, +5.7% (naive), -1.8% (biased), +5.2% (LMSYS)
    for c in load_eplb_cases():
        for r in compare_case(c, cat):
            assert abs(r.gap) < 0.10, (c.id, r.row.label, r.model_ratio, r.published_ratio)


def test_rearranging_without_replicas_gains_less_than_with_them():
    rows = compare_case(case("atom-"), cat)
    assert 1.0 < rows[0].model_ratio < rows[2].model_ratio


def test_balanced_router_leaves_nothing_to_gain():
    # s = 0: every expert carries 1/384 of the assignments, 48 per GPU on EP8, so every placement is balanced and
    # a rearrangement gains nothing (hand: ratio 1)
    uniform = dataclasses.replace(case("atom-"), zipf_s=0.0)
    assert compare_case(uniform, cat)[0].model_ratio == pytest.approx(1.0, abs=1e-9)


def test_bad_rows_and_cases_are_refused():
    with pytest.raises(ValueError, match="placement"):
        EplbRow("x", "perfect", 0, 1.0)
    with pytest.raises(ValueError, match="value"):
        EplbRow("x", "eplb", 0, -1.0)
    with pytest.raises(ValueError, match="Zipf"):
        dataclasses.replace(case("atom-"), zipf_s=float("nan"))
    with pytest.raises(ValueError, match="EplbCase"):
        compare_case({"id": "x"}, cat)


def test_a_broken_file_names_the_case(tmp_path):
    p = tmp_path / "e.yaml"
    p.write_text("assumption: {s: 1.0}\ncases:\n  - {id: bad, source: s}\n")
    with pytest.raises(ValueError, match=r"e\.yaml: case bad: missing 'rows'"):
        load_eplb_cases(p)
