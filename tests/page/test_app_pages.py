"""AppTest runs of the home page and the Catalog page, on the default and on a URL scenario."""

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]

DEFAULT_URL = {
    "model": "deepseek-v3",
    "gpu": "h200",
    "nodes": "1",
    "gpn": "8",
    "w": "fp8",
    "kv": "bf16",
    "a2a": "fp8",
    "batch": "64",
    "isl": "2048",
    "osl": "512",
}


def run(path, **query):
    at = AppTest.from_file(str(ROOT / path), default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at):
    return {m.label: m.value for m in at.metric}


def test_home_default_scenario():
    at = run("app.py")
    assert at.title[0].value == "MoE Deployment Planner"
    m = metrics(at)
    # DeepSeek-V3: 671.0B total; 576-element MLA latent x 2 bytes x 61 layers = 70,272 bytes per token
    assert m["Total parameters"] == "671B"
    assert m["KV cache per token (bf16)"] == "70.27 KB"
    # the device memory every budget divides, as the Fit page and the sidebar show it (audit M8: Home said
    # 1,128 GB, the marketed 141 GB x 8, beside Fit's figure): what CUDA reports of an H200, 139.80 GiB =
    # 150,109,945,856 B (catalogs/gpus/h200.yaml, errata #11), x 8 = 1,200,879,566,848 B = 1,201 GB
    assert m["Cluster memory (HBM)"] == "1,201 GB"
    fit = run("pages/1_Fit.py")
    assert "1,201 GB on the cluster" in " ".join(md.value for md in fit.markdown)
    assert "1,201 GB HBM in total" in " ".join(c.value for c in at.sidebar.caption)
    assert {
        k: at.query_params[k][0] if isinstance(at.query_params[k], list) else at.query_params[k]
        for k in at.query_params
    } == DEFAULT_URL
    assert not at.sidebar.warning


def _qp(at):
    return {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}


def test_home_url_scenario_is_applied_exactly():
    q = {
        "model": "mixtral-8x7b",
        "gpu": "h100-sxm",
        "nodes": "2",
        "gpn": "4",
        "w": "bf16",
        "ex": "int4",
        "kv": "fp8",
        "a2a": "bf16",
        "batch": "16",
        "isl": "1000",
        "osl": "24",
    }
    at = run("app.py", **q)
    assert _qp(at) == q
    assert at.sidebar.selectbox(key="_w_model").value == "mixtral-8x7b"
    assert at.sidebar.selectbox(key="_w_experts").value == "int4"
    assert at.sidebar.number_input(key="_w_nodes").value == 2
    m = metrics(at)
    # Mixtral 8x7B: 46,702,792,704 parameters; GQA 2 x 8 x 128 x 1 byte (fp8) x 32 layers = 65,536 B/token
    assert m["Total parameters"] == "46.7B"
    assert m["KV cache per token (fp8)"] == "65.54 KB"
    # 2 nodes x 4 GPUs x 85,045,477,376 B (what CUDA reports of an H100 SXM, 79.20 GiB) = 680.4 GB
    assert m["Cluster memory (HBM)"] == "680 GB"


def test_bad_url_values_warn_and_fall_back():
    at = run("app.py", model="gpt-5", gpu="h100", nodes="-3", w="fp6", batch="1e9", isl="lots")
    warnings = " | ".join(w.value for w in at.sidebar.warning)
    assert "model='gpt-5' is not a known model id; using 'deepseek-v3'" in warnings
    assert "gpu='h100' is not a known GPU id; using 'h200'" in warnings and "h100-sxm" in warnings
    assert "nodes=-3 is outside 1-4,096" in warnings
    assert "w='fp6' is not a known weight dtype" in warnings and "Allowed: fp32, bf16" in warnings
    assert "batch='1e9' is not a whole number" in warnings
    assert "isl='lots' is not a whole number" in warnings
    assert _qp(at) == DEFAULT_URL  # the URL is rewritten to the scenario actually shown


def test_hostile_url_values_do_not_crash():
    at = run("app.py", model="x" * 100_000, gpu="<script>alert(1)</script>", gpn="99999999999999999999")
    assert len(at.sidebar.warning) == 3
    assert all(len(w.value) < 600 for w in at.sidebar.warning)
    assert _qp(at)["gpn"] == "8"


def test_widget_change_updates_scenario_and_url_and_survives_page_switch():
    at = run("app.py")
    at.sidebar.selectbox(key="_w_model").set_value("qwen3-235b-a22b").run()
    at.sidebar.selectbox(key="_w_gpu").set_value("h100-sxm").run()
    at.sidebar.number_input(key="_w_nodes").set_value(3).run()
    assert not at.exception
    assert _qp(at)["model"] == "qwen3-235b-a22b" and _qp(at)["gpu"] == "h100-sxm" and _qp(at)["nodes"] == "3"
    # Qwen3-235B-A22B: 235.09B parameters
    assert metrics(at)["Total parameters"] == "235B"
    at.switch_page("pages/8_Catalog.py").run()
    assert not at.exception
    assert at.session_state.scenario.model_id == "qwen3-235b-a22b"
    assert at.sidebar.selectbox(key="_w_model").value == "qwen3-235b-a22b"
    assert at.sidebar.number_input(key="_w_nodes").value == 3
    assert _qp(at)["model"] == "qwen3-235b-a22b"


def test_precision_change_same_as_weights():
    at = run("app.py")
    at.sidebar.selectbox(key="_w_experts").set_value("int4").run()
    assert _qp(at)["ex"] == "int4"
    at.sidebar.selectbox(key="_w_experts").set_value("same as weights").run()
    assert "ex" not in _qp(at)
    at.sidebar.selectbox(key="_w_kv").set_value("fp8").run()
    # DeepSeek-V3, fp8 cache: 576 x 1 byte x 61 = 35,136 bytes
    assert metrics(at)["KV cache per token (fp8)"] == "35.14 KB"


def test_the_linear_attention_state_dtype_is_a_precision_choice_for_hybrid_models():
    # Qwen3.5-397B: 45 Gated DeltaNet layers x (64 x 128 x 128 x 4 B fp32 state + 12,288 x 3 x 2 B conv window) =
    # 45 x 4,268,032 = 192,061,440 B a sequence; the state in bf16: 45 x (64 x 128 x 128 x 2 + 73,728) = 97,689,600 B
    fit = run("pages/1_Fit.py", model="qwen3.5-397b-a17b")
    state = fit.sidebar.selectbox(key="_w_state")
    assert (state.label, state.value) == ("Linear-attention state", "checkpoint")
    assert "hold 192.1 MB per sequence" in " ".join(c.value for c in fit.caption)
    state.set_value("bf16").run()
    assert _qp(fit)["lstate"] == "bf16"
    assert "hold 97.7 MB per sequence" in " ".join(c.value for c in fit.caption)
    # the URL reopens it; a model without such a state shows no control and writes no key
    again = run("pages/1_Fit.py", model="qwen3.5-397b-a17b", lstate="bf16")
    assert again.sidebar.selectbox(key="_w_state").value == "bf16"
    plain = run("app.py")
    assert "_w_state" not in [s.key for s in plain.sidebar.selectbox] and "lstate" not in _qp(plain)
    bad = run("app.py", model="qwen3.5-397b-a17b", lstate="fp8")
    assert "lstate='fp8' is not a known linear-attention state dtype" in " ".join(w.value for w in bad.sidebar.warning)


def test_catalog_page_default():
    at = run("pages/8_Catalog.py")
    models, gpus, links, hosts, workloads = (d.value for d in at.dataframe)
    assert len(models) >= 24 and len(gpus) >= 15 and len(links) >= 10 and len(hosts) >= 11
    # the five workload profiles; agentic: a warm cache computes 4.3% of a 121,906-token mean prompt = 5,242
    agentic = workloads.set_index("name").loc["Agentic coding"]
    assert len(workloads) == 5 and agentic["computed_input"] == 121_906 - 116_664  # round(0.957 x 121,906)
    # B200: a Gen6 part behind Gen5 host root ports, 64 GB/s per direction
    assert gpus.set_index("id").loc["b200", "host_link_gbps"] == 64
    # 8 channels x 8 B x 4800 MT/s = 307.2 GB/s; Apple's 1024-bit LPDDR5-6400 = 819.2 GB/s
    bw = hosts.set_index("name")["bandwidth_gbps"]
    assert bw.filter(like="Xeon Gold 6454S class").iloc[0] == pytest.approx(307.2)
    assert bw.filter(like="M3 Ultra").iloc[0] == pytest.approx(819.2)
    ds = models.set_index("id").loc["deepseek-v3"]
    # published 671B / 37B; derived 671.03B / 36.63B (DeepSeek counts the LM head, not the input embedding)
    assert ds["total_b"] == pytest.approx(671.03, abs=0.01)
    assert ds["active_b"] == pytest.approx(36.63, abs=0.01)
    assert ds["kv_elems_per_token_per_layer"] == 576
    assert (models["total_error_pct"].abs() < 3).all()
    h100 = gpus.set_index("id").loc["h100-sxm"]
    # 989 TFLOPS / 3.35 TB/s = 295 FLOP/byte
    assert h100["ridge_bf16_flop_per_byte"] == pytest.approx(295.2, abs=0.1)
    assert h100["fp4_tflops"] is None or h100["fp4_tflops"] != h100["fp4_tflops"]  # blank: not native
    # the tables' columns come from one compact spec each (ui.render.number_columns): the order as listed, the name
    # pinned, a number column with its format and help, a text column with its help
    proto = at.dataframe[0].proto
    config = json.loads(proto.columns)
    assert list(proto.column_order)[:5] == ["name", "kind", "release_date", "attention", "layers"]
    assert config["name"] == {"label": "Model", "pinned": True, "type_config": {"type": "text"}}
    assert config["kind"] == {"label": "Kind"}
    assert config["total_b"]["type_config"] == {"type": "number", "format": "%.2f"}
    assert config["total_b"]["help"] == "All weights; MTP apart, vision tower included."
    gpu_config = json.loads(at.dataframe[1].proto.columns)
    assert gpu_config["host_link"]["type_config"] == {"type": "text"} and "host DRAM" in gpu_config["host_link"]["help"]
    assert gpu_config["price_usd_per_hour"]["type_config"]["format"] == "$%.2f"


def test_catalog_page_deep_link_scenario():
    at = run("pages/8_Catalog.py", model="llama-4-maverick", gpu="gb200", nodes="18", gpn="4")
    assert at.session_state.scenario.model_id == "llama-4-maverick"
    assert at.session_state.scenario.total_gpus == 72
    assert _qp(at)["gpu"] == "gb200"


def _plain(md):
    """Escaped Markdown as a reader sees it (ui.format.md_escape's backslashes and word joiners removed)."""
    return re.sub(r"\\(.)", r"\1", md).replace("\u2060", "")


def test_unknown_and_repeated_url_keys_are_named_in_the_sidebar():
    # st.query_params.get_all sees both values of a repeated key; the last one is used, as st.query_params[key]
    at = run("app.py", model=["mixtral-8x7b", "grok-1"], gpus="64", precision="fp8")
    warnings = [_plain(w.value) for w in at.sidebar.warning]
    assert at.session_state.scenario.model_id == "grok-1"
    assert "URL key 'model' is given 2 times; using the last value, 'grok-1'" in warnings
    assert any(
        w.startswith("unknown URL keys 'gpus' (did you mean 'gpu'?), 'precision' ignored; known keys: model, gpu, ")
        for w in warnings
    )
    # gpus=64 did not set the cluster (1 x 8 stays), and the URL is rewritten to the scenario shown
    assert at.session_state.scenario.total_gpus == 8
    assert at.query_params["model"] in ("grok-1", ["grok-1"]) and "gpus" not in at.query_params


def _sidebar_shows(at):
    """The sidebar's pickers show the scenario the pages compute with."""
    s, sb = at.session_state.scenario, at.sidebar
    assert sb.selectbox(key="_w_weights").value == s.precision.weights
    assert sb.selectbox(key="_w_experts").value == (s.precision.routed_experts or "same as weights")
    assert sb.selectbox(key="_w_kv").value == s.precision.kv_cache
    assert sb.selectbox(key="_w_sd").value == s.spec.method
    if s.spec.method == "draft_model":
        assert sb.selectbox(key="_w_draft").value == s.spec.draft_model_id
        assert sb.selectbox(key="_w_dw").value == (s.spec.draft_weights or "same as target")


def test_sidebar_shows_the_weight_dtype_the_pages_compute_with():
    # fp32 is a valid weight dtype (core.deployment.specs.DTYPES) that the picker does not list by default: it was shown as
    # bf16 while the pages computed fp32, and the next precision change switched the weights to bf16
    at = run("app.py", w="fp32")
    _sidebar_shows(at)
    assert at.session_state.scenario.precision.weights == "fp32"
    assert "weights fp32, KV bf16" in " ".join(m.value for m in at.markdown)  # Home's header, from the scenario
    at.sidebar.selectbox(key="_w_kv").set_value("fp8").run()
    _sidebar_shows(at)
    assert at.session_state.scenario.precision.weights == "fp32" and _qp(at)["w"] == "fp32" and _qp(at)["kv"] == "fp8"
    assert "weights fp32, KV fp8" in " ".join(m.value for m in at.markdown)


@pytest.mark.parametrize(
    "query, kept, warning",
    [
        # valid values the pickers did not list: added to their options
        ({"ex": "fp32"}, True, None),
        # fp32 draft weights were an uncaught ValueError ('fp32' is not in list)
        ({"model": "qwen3-235b-a22b", "sd": "draft_model", "draft": "qwen3-0.6b", "dw": "fp32"}, True, None),
        # values the pickers cannot offer: refused with a warning, and the pages compute what the sidebar shows
        (
            {"model": "mixtral-8x7b", "sd": "mtp"},
            False,
            "URL sd=mtp: Mixtral-8x7B has no MTP module (num_nextn_predict_layers = 0); speculative decoding left off "
            "(choose eagle3, ngram or draft_model)",
        ),
        (
            {"model": "qwen3-30b-a3b", "sd": "draft_model", "draft": "qwen3-30b-a3b"},
            False,
            "the draft model cannot be the target itself (Qwen3-30B-A3B); using Qwen3-0.6B",
        ),
    ],
)
def test_sidebar_shows_every_url_value_it_computes_with(query, kept, warning):
    at = run("app.py", **query)
    _sidebar_shows(at)
    s = at.session_state.scenario
    url = {k: v for k, v in _qp(at).items() if k in query}
    assert (url == query) is kept, url
    warnings = [_plain(w.value) for w in at.sidebar.warning]
    assert warnings == ([] if warning is None else [warning])
    if query.get("dw"):
        assert s.spec.draft_weights == "fp32"


# issue 37 (probe 3, CR-5): two sidebar widgets changed in one rerun (AppTest sends both, as a coalesced rerun
# message does, and runs both on_change callbacks before the script); the first callback's update_scenario
# deleted every widget key and the second read its own: AttributeError 'st.session_state has no attribute "_w_isl"'
TWO_WIDGETS = [
    (("number_input", "_w_batch", 32), ("number_input", "_w_isl", 4096), {"batch": "32", "isl": "4096"}),
    (("number_input", "_w_gpn", 4), ("number_input", "_w_batch", 16), {"gpn": "4", "batch": "16"}),
    (("selectbox", "_w_kv", "fp8"), ("selectbox", "_w_weights", "bf16"), {"kv": "fp8", "w": "bf16"}),
    (("selectbox", "_w_gpu", "h100-sxm"), ("number_input", "_w_osl", 1024), {"gpu": "h100-sxm", "osl": "1024"}),
]


@pytest.mark.parametrize("first, second, url", TWO_WIDGETS, ids=lambda x: x[1] if isinstance(x, tuple) else "")
def test_two_sidebar_widgets_changed_in_one_rerun_both_apply(first, second, url):
    at = run("app.py")
    for kind, key, value in (first, second):
        getattr(at.sidebar, kind)(key=key).set_value(value)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert {k: _qp(at)[k] for k in url} == url  # both changes reached the scenario and the URL
    for kind, key, value in (first, second):  # and the widgets show them
        assert getattr(at.sidebar, kind)(key=key).value == value


def test_a_sidebar_widget_and_a_page_widget_changed_in_one_rerun_both_apply():
    at = AppTest.from_file(str(ROOT / "pages/11_Single_box.py"), default_timeout=120)
    at.query_params["model"] = "mixtral-8x7b"
    at.run()
    at.sidebar.number_input(key="_w_batch").set_value(8)
    at.selectbox(key="_w_box_q").set_value("q8_0")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert _qp(at)["batch"] == "8" and _qp(at)["q"] == "q8_0"
