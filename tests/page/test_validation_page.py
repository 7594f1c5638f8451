"""AppTest run of the Validation page."""

from pathlib import Path

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
    assert len(at.get("vega_lite_chart")) == 2  # predicted vs measured, the all-reduce curves
    assert any("median" in m.label and m.value.endswith("%") for m in at.metric)


def test_validation_page_shows_the_aiconfigurator_side_by_side():
    at = AppTest.from_file(str(ROOT / "pages/6_Validation.py"), default_timeout=180)
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "AIC / planner" in d.value.columns)
    decode_all = table[(table["phase"] == "decode") & (table["group"] == "all rows")].iloc[0]
    assert decode_all["rows"] >= 30 and decode_all["met"] in ("yes", "no")
    assert {"attention TP", "one GPU"} <= set(table["group"])
