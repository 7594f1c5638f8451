"""AppTest runs of the Disaggregation & cost page."""

import re

import pytest

from tests.page._util import metrics, run_page


def run(**query):
    return run_page("pages/7_Disaggregation_and_cost.py", timeout=120, **query)


def test_default_page():
    at = run()
    m = metrics(at)
    assert m["Prefill pool"].endswith("GPUs") and m["Decode pool"].endswith("GPUs")
    assert len(at.get("vega_lite_chart")) == 2
    assert any("KV stream uses" in s.value for s in [*at.success, *at.warning, *at.error])


def test_llama_review_scenario_with_speculative_saving():
    at = run(
        model="llama-3-70b",
        gpu="h100-sxm",
        isl="1500",
        osl="800",
        w="fp8",
        sd="draft_model",
        draft="llama-3-8b",
        gamma="5",
        alpha="0.832",
        c="0.1143",
    )
    text = " ".join(md.value for md in at.markdown)
    # 1,500 prompt tokens x 327,680 B = 0.49 GB per request; x 50 requests/s = 24.58 GB/s
    assert "**0.492 GB per request**" in text and "**24.58 GB/s**" in text
    # the yearly value comes from the rounded pool sizes the page prints: (before - after) x $/h x 8,760 h
    m = re.search(
        r"shrinks the decode pool from ([\d,]+) to ([\d,]+) GPUs .*?\*\*\$([\d,]+) a year\*\* \(([\d,]+) GPUs × \$([\d.]+)/GPU-hour",
        text,
    )
    assert m, text
    before, after, dollars, saved, price = (float(g.replace(",", "")) for g in m.groups())
    assert saved == before - after
    assert dollars == pytest.approx(saved * price * 8760, abs=1.0)
    # every pool's busy share is shown beside its $ per million tokens
    table = next(d.value for d in at.dataframe if "busy_output" in d.value.columns)
    assert ((table["busy_output"] > 0) & (table["busy_output"] <= 100)).all()


def test_impossible_block_is_explained():
    at = run(model="kimi-k2", gpu="rtx-4090", nodes="1")
    assert at.error and "no prefill layout of Kimi-K2 works" in at.error[0].value
