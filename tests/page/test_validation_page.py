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
    factors = next(d.value for d in at.dataframe if "family" in d.value.columns)
    assert "grouped_gemm_decode" in set(factors["family"])
    assert len(at.get("vega_lite_chart")) == 1
    assert any("median" in m.label and m.value.endswith("%") for m in at.metric)
