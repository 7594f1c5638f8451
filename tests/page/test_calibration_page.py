"""AppTest of the Validation page's "Calibrate to your cluster" section (issue 36): a published benchmark result
pasted on the scenario it was measured on shows predicted against measured per metric, the fitted scales and the
residual, and the button keeps the calibration for the session; a bad file gets a message naming the field."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.page._util import run_page

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench_results"
B300 = FIXTURES / "vllm_qwen3.5-397b-a17b-fp8_4xb300_conc32.json"
# the fixture's deployment: Qwen3.5-397B-A17B FP8 (KV FP8) on 4 x B300
QUERY = dict(model="qwen3.5-397b-a17b", gpu="b300", nodes="1", gpn="4", w="fp8", kv="fp8")


def _metrics(at) -> dict[str, tuple[str, str]]:
    return {m.label: (m.value, m.delta) for m in at.metric}


def _scale(value: str) -> float:
    return float(re.fullmatch(r"×([0-9.]+)", value).group(1))


@pytest.fixture
def pasted():
    at = run_page("pages/6_Validation.py", timeout=180, **QUERY)
    assert any(s.value == "Calibrate to your cluster" for s in at.subheader)
    assert not any("calibrated gap (%)" in d.value.columns for d in at.dataframe)  # nothing until a file comes
    at.text_area(key="calib_paste").set_value(B300.read_text(encoding="utf-8")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_pasted_vllm_result_shows_the_gap_and_the_fit(pasted):
    at = pasted
    assert not at.error
    table = next(d.value for d in at.dataframe if "calibrated gap (%)" in d.value.columns)
    assert list(table["metric"]) == ["TTFT", "TPOT", "output tokens/s"]
    assert list(table["unit"]) == ["ms", "ms", "tokens/s"]
    # the file's mean TTFT, mean TPOT and output throughput
    assert list(table["measured"]) == pytest.approx([360.7508340813638, 19.356447679888333, 1558.21585715768])
    tpot = table[table["metric"] == "TPOT"].iloc[0]
    # the gap column is predicted / measured - 1, from the table's own numbers
    assert tpot["gap (%)"] == pytest.approx(100 * (tpot["predicted"] / tpot["measured"] - 1))
    assert abs(tpot["calibrated gap (%)"]) < 5  # calibrated on it, the TPOT is within 5% of the file's
    m = _metrics(at)
    decode, why = m["Decode step scale"]
    assert why == "from TPOT"
    # the fitted decode scale is near measured / predicted TPOT (the prefill share of the steps moves it a little)
    assert _scale(decode) == pytest.approx(tpot["measured"] / tpot["predicted"], rel=0.1)
    # one run: its TTFT (360.75 ms measured against ~23 ms predicted) is fitted as a per-request offset, the
    # prefill scale held at 1, and the calibrated TTFT meets the file's
    assert m["Prefill step scale"] == ("×1.000", "held at 1: the runs' TTFTs too alike for a slope")
    assert m["TTFT offset"][1] == "per request, outside the steps"
    assert 300 < float(re.fullmatch(r"\+([0-9]+) ms", m["TTFT offset"][0]).group(1)) < 360
    ttft = table[table["metric"] == "TTFT"].iloc[0]
    assert abs(ttft["calibrated gap (%)"]) < 10
    assert m["Residual after the fit"][0].endswith("%")
    assert "1 run" in m["Residual after the fit"][1]


def test_apply_puts_the_calibration_in_the_scenario(pasted):
    at = pasted
    shown = _scale(_metrics(at)["Decode step scale"][0])
    at.button(key="calib_apply").click().run()
    assert not at.exception
    cal = at.session_state["scenario"].calibration
    assert cal.decode_step_scale == pytest.approx(shown, abs=5e-4)
    assert cal.runs == 1 and "vLLM bench serve" in cal.source
    assert any(
        i.value.startswith("Applied to the scenario") and "calibrated on pasted text" in i.value for i in at.info
    )
    # the scenario's URL carries it (a copied link plans with it)
    assert float(at.query_params["cdec"]) == cal.decode_step_scale  # written to read back exactly
    at.button(key="calib_remove").click().run()
    assert at.session_state["scenario"].calibration is None


def test_a_bad_file_is_named_not_a_traceback():
    at = run_page("pages/6_Validation.py", timeout=180, **QUERY)
    doc = json.loads(B300.read_text(encoding="utf-8"))
    doc["mean_tpot_ms"] = "abc"
    at.text_area(key="calib_paste").set_value(json.dumps(doc)).run()
    assert not at.exception
    shown = [e.value.replace("\\", "") for e in at.error]  # as rendered: the Markdown escapes dropped
    assert any("line 1: mean_tpot_ms must be a number >= 0, got 'abc'" in v for v in shown), shown
    at.text_area(key="calib_paste").set_value('{"hello": 1}').run()
    assert any("profile_export_aiperf.json" in e.value for e in at.error)


def test_a_file_of_another_model_is_flagged():
    at = run_page("pages/6_Validation.py", timeout=180)  # the default scenario: DeepSeek-V3 on 8 x H200
    at.text_area(key="calib_paste").set_value(B300.read_text(encoding="utf-8")).run()
    assert not at.exception
    assert any("does not look like the scenario's" in w.value for w in at.warning)
