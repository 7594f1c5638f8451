"""AppTest run of the Validation page."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def test_validation_page_lists_every_case_with_errors():
    at = AppTest.from_file(str(ROOT / "pages/6_Validation.py"), default_timeout=180)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    from core.catalog import load_catalog

    n = len(load_catalog().validation_cases)
    frames = [d.value for d in at.dataframe if "case" in d.value.columns]
    assert sum(len(f) for f in frames) == n  # every case, grouped by metric
    for f in frames:
        assert {"measured", "predicted", "leave-one-out error (%)", "source"} <= set(f.columns)
    accuracy = next(d.value for d in at.dataframe if "met" in d.value.columns)
    assert {"yes", "no"} >= set(accuracy["met"]) - {""}
    assert accuracy["cases"].iloc[-1] == n  # the last row: all cases
    factors = next(d.value for d in at.dataframe if "kernel path" in d.value.columns)
    assert "grouped_gemm_decode" in set(factors["family"])
    assert {"deepep", "fused", "trtllm"} <= set(factors["kernel path"])  # H200 (the default scenario's GPU)
    inherit = next(d.value for d in at.dataframe if "own factors" in d.value.columns)
    assert len(inherit) == len(load_catalog().gpus)
    h200 = inherit[inherit["GPU"].str.contains("H200")].iloc[0]
    assert h200["collectives"] == "measured" and h200["measured cases"] > 50
    assert h200["grouped GEMM from (deepep · fused · trtllm)"] == "h200 · h200@fused · h200@trtllm"
    mi300 = inherit[inherit["GPU"].str.contains("MI300X")].iloc[0]
    # no AMD case: every MI300X factor is a Hopper relative's, and the page says so
    assert mi300["own factors"].startswith("none") and mi300["grouped GEMM from (deepep · fused · trtllm)"].startswith(
        "h200"
    )
    assert len(at.get("vega_lite_chart")) == 3  # predicted vs measured, the published frontier, the all-reduce curves
    assert any("median" in m.label and m.value.endswith("%") for m in at.metric)


def test_validation_page_shows_the_aiconfigurator_side_by_side():
    at = AppTest.from_file(str(ROOT / "pages/6_Validation.py"), default_timeout=180)
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "AIC / planner" in d.value.columns)
    decode_all = table[(table["phase"] == "decode") & (table["group"] == "all rows")].iloc[0]
    assert decode_all["rows"] >= 30 and decode_all["met"] in ("yes", "no")
    assert {"attention TP", "one GPU"} <= set(table["group"])


def test_validation_page_checks_amds_moe_kernels_against_amds_measured_times():
    # catalogs/validation/aiter_moe_check.csv, counted here with the csv module: 37 rows of 304-CU parts (MI300X),
    # 20 of them at <= 512 tokens, and 450 of 256-CU parts (MI355X), 286 at <= 512 tokens
    import csv

    lines = (ROOT / "catalogs/validation/aiter_moe_check.csv").read_text(encoding="utf-8").splitlines()
    raw = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    counts = {
        (cu, phase): sum(1 for r in raw if r["cu_num"] == cu and (int(r["tokens"]) <= 512) == (phase == "decode"))
        for cu in ("304", "256")
        for phase in ("decode", "prefill")
    }
    assert counts == {("304", "decode"): 20, ("304", "prefill"): 17, ("256", "decode"): 286, ("256", "prefill"): 164}
    at = AppTest.from_file(str(ROOT / "pages/6_Validation.py"), default_timeout=180)
    at.run()
    assert not at.exception
    assert any(h.value.startswith("AMD's MoE kernels") for h in at.subheader)
    table = next(d.value for d in at.dataframe if "median |error| (%)" in d.value.columns and "GPU" in d.value.columns)
    mi355 = table[table["GPU"].str.contains("MI355X")].set_index("phase")
    mi300 = table[table["GPU"].str.contains("MI300X")].set_index("phase")
    assert (
        mi355.loc["decode", "rows"] == 286 and mi355.loc["prefill", "rows"] == 164 and mi355.loc["all", "rows"] == 450
    )
    assert mi300.loc["decode", "rows"] == 20 and mi300.loc["prefill", "rows"] == 17
    assert (table["P90 |error| (%)"] >= table["median |error| (%)"]).all()
    assert any("ROCm/aiter" in c.value and "not fitted" in c.value for c in at.caption)


def test_validation_page_sets_published_frontiers_beside_the_model():
    at = AppTest.from_file(str(ROOT / "pages/6_Validation.py"), default_timeout=180)
    at.run()
    assert not at.exception
    at.selectbox(key="frontier_case").set_value("kimi-k2.6-b200-agentic-dcp").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "throughput gap" in d.value.columns)
    assert len(table) == 9  # 3 TP and 6 DCP points of the vLLM post
    tp64 = table[table["point"] == "vllm-kimik26-b200x8-tp8ep8-c64"].iloc[0]
    assert tp64["published tok/s/GPU"] == 1863.0  # the post's figure-3 table
    assert abs(tp64["throughput gap"] - 1) < 0.25 and tp64["what limits it"] == "KV cache full"
    assert any("Gap, modelled / published" in m.value for m in at.markdown)
    # DCP at 512 clients: 6,091 x 8 - 512 x 5.0 = 46,168 computed prompt tok/s at least, beyond the model's ceiling
    dcp512 = table[table["point"] == "vllm-kimik26-b200x8-dcp8-c512"].iloc[0]
    assert dcp512["prompt tok/s the point implies"] == 46_168.0
    assert dcp512["modelled prefill ceiling"] < 46_168.0
    assert any("need more computed prompt tokens per second" in m.value for m in at.markdown)
    spec = next(c.spec for c in at.get("vega_lite_chart") if "TP vs DCP" in str(c.spec))
    assert "computed prompt + output tokens/s per GPU" in str(spec)


def _refit_forbidden(*args, **kwargs):
    raise AssertionError("leave_one_out was called: the page must read the shipped leave-one-out table")


def test_validation_page_reads_the_shipped_leave_one_out_table(monkeypatch):
    """A newcomer's first load does not refit (~22 s): the page reads the table `bench.calibrate --write` ships,
    and shows its numbers."""
    from core import validation
    from core.validation import calibration

    monkeypatch.setattr(validation, "leave_one_out", _refit_forbidden)
    monkeypatch.setattr(calibration, "leave_one_out", _refit_forbidden)
    at = AppTest.from_file(str(ROOT / "pages/6_Validation.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [i.value for i in at.info if "leave-one-out table" in i.value]  # no "computed here": it is current

    from core.catalog import load_catalog
    from core.validation.loo_table import read_loo_table

    shipped, why = read_loo_table(load_catalog())
    assert why == "" and shipped is not None
    every = validation.error_summary(shipped)["all"]
    shown = {m.label: m.value for m in at.metric}
    assert shown["All cases, median |error| (leave-one-out)"] == f"{100 * every['median']:.1f}%"
    # one case, by hand from the table's row: its leave-one-out prediction is the one on the page
    row = next(r for r in shipped if r.id == "lmsys-h100-decode-ep72")
    frame = next(d.value for d in at.dataframe if "case" in d.value.columns and row.id in set(d.value["case"]))
    page_row = frame[frame["case"] == row.id].iloc[0]
    assert page_row["leave-one-out"] == row.loo_predicted and page_row["measured"] == row.measured
    assert page_row["leave-one-out error (%)"] == 100 * (row.loo_predicted / row.measured - 1)


def test_validation_page_refits_with_a_note_when_the_table_is_stale(monkeypatch):
    """A stale (or missing) table: the page computes the leave-one-out itself, once, and says why. The refit is
    stubbed with the shipped rows to stay fast; what is checked is that the page called it and said so."""
    from core import validation
    from core.catalog import load_catalog
    from core.validation import loo_table

    shipped, _ = loo_table.read_loo_table(load_catalog())
    calls = []

    def refit(cases, *args, **kwargs):
        calls.append(len(cases))
        return shipped

    monkeypatch.setattr(
        loo_table, "read_loo_table", lambda cat: (None, "stale: its inputs changed since it was written")
    )
    monkeypatch.setattr(validation, "leave_one_out", refit)
    at = AppTest.from_file(str(ROOT / "pages/6_Validation.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert calls == [len(load_catalog().validation_cases)]  # every case, once
    note = " ".join(i.value for i in at.info)
    assert "stale: its inputs changed since it was written" in note and "python -m bench.calibrate --write" in note


def test_validation_page_states_the_gap_per_concurrency_band():
    # counted from the two YAML files alone: the points the cases name, by their published concurrency
    import yaml

    pts = {p["id"]: p for p in yaml.safe_load((ROOT / "catalogs/frontier_points.yaml").read_text())["points"]}
    cases = yaml.safe_load((ROOT / "catalogs/frontier_cases.yaml").read_text())["cases"]
    named = [pts[i] for c in cases for d in c["deployments"] for i in d["points"]]
    low = sum(1 for p in named if p.get("concurrency") and p["concurrency"] <= 4)
    high = sum(1 for p in named if p.get("concurrency") and p["concurrency"] >= 64)
    at = AppTest.from_file(str(ROOT / "pages/6_Validation.py"), default_timeout=180)
    at.run()
    assert not at.exception
    bands = next(d.value for d in at.dataframe if "concurrency band" in d.value.columns)
    by_band = dict(zip(bands["concurrency band"], bands["points"], strict=True))
    assert by_band["low (1-4 clients)"] == low and by_band["high (64+ clients)"] == high
    assert by_band["all"] == len(named)
    assert (bands["tok/s/GPU P90 |error| (%)"] >= bands["tok/s/GPU median |error| (%)"]).all()
    every = next(d.value for d in at.dataframe if "tok/s/GPU error (%)" in d.value.columns)
    assert len(every) == len(named)
    # a point by hand: InferenceX GLM-5 B200 non-MTP at 4 clients published 231.3 total tok/s/GPU, 54.25 tok/s/user
    row = every[every["point"] == "ix-glm5-fp8-b200-tp8-8k1k-c4"].iloc[0]
    assert row["published tok/s/GPU"] == 231.3 and row["band"] == "low"
    assert row["tok/s/GPU error (%)"] == pytest.approx(100 * (row["modelled tok/s/GPU"] / 231.3 - 1))
    assert any("InferenceX blog" in c.value for c in at.caption)
