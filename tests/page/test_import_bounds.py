"""Issue 21: an imported config is bounded before any work is done. Contexts are sized arithmetically (a
10**12-position model costs what any other costs), the importer refuses what the pages cannot draw, and
every config it accepts renders the Fit and Single box pages."""

import json
import os
import time
import tracemalloc

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from core import memory
from core.catalog import CATALOG_DIR, load_catalog
from core.deployment.bundle import Deployment
from core.deployment.parallel import default_layout
from core.deployment.specs import Workload
from core.hf import CHART_MAX_ROWS, MAX_FIELD_INT, MAX_LAYERS, MAX_ROUTED_EXPERTS, encode_config, model_from_config_text
from tests.page._util import metrics, run_page
from ui.format import md_escape

cat = load_catalog()
TRILLION = 10**12


def imported(model_id: str, **changes):
    """A catalog config.json with ``changes``, imported as a user would: (ModelSpec, URL query)."""
    cfg = json.loads((CATALOG_DIR / "models" / model_id / "config.json").read_text())
    cfg.update(changes)
    return query_for(cfg)


def query_for(cfg: dict):
    spec, norm = model_from_config_text(json.dumps(cfg))
    return spec, {"model": spec.id, "cfg": encode_config(norm)}


def chart_data(at, index: int) -> pd.DataFrame:
    """The rows of the ``index``-th chart on the page, all its datasets (Streamlit ships them as Arrow)."""
    frames = [pa.ipc.open_stream(d.data.data).read_pandas() for d in at.get("vega_lite_chart")[index].proto.datasets]
    return pd.concat(frames, ignore_index=True)


# ---- item 1: contexts are arithmetic, never enumerated


def test_a_trillion_position_model_is_sized_quickly_in_bounded_memory():
    """The Fit page used to build set(range(1, cap + 1)): 23.7 GB for 10**12 positions (the server died),
    1.1 GB and 1.8 s for Llama 4 Scout's 10,485,760. What the page computes from the cap, timed and traced."""
    gpu = cat.gpu("h200")
    mixtral, _ = imported("mixtral-8x7b", max_position_embeddings=TRILLION)
    mistral, _ = imported("mistral-7b", max_position_embeddings=TRILLION)
    results = {}
    for m in (mixtral, mistral):
        layout = default_layout(m, 8, 8, "fp8")  # TP 8 on one node of 8
        tracemalloc.start()
        t0 = time.perf_counter()
        grid = np.unique(np.round(np.geomspace(128, m.max_position_embeddings, 60)).astype(int))  # the page's
        seqs = memory.max_concurrent_sequences(Deployment(m, gpu, layout, "fp8"), grid)
        ctx = memory.max_context_len(Deployment(m, gpu, layout, "fp8"), 64)
        cache = memory.cache_by_layer_type(m, TRILLION, "bf16")
        elapsed, peak = time.perf_counter() - t0, tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert elapsed < 2.0 and peak < 50e6, (m.name, elapsed, peak)
        stages = memory.stage_memories(Deployment(m, gpu, layout, "fp8"), Workload())  # 64 x (2,048 + 512) tokens
        budget = min(stages, key=lambda r: r.headroom_bytes)
        results[m.id] = ctx, seqs, cache, budget.kv_budget_bytes, grid
    ctx, _, cache, budget, _ = results[mixtral.id]
    # Mixtral: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B per token for the whole model; TP 8
    # keeps one KV head per GPU: 16,384 B per token per GPU, x 64 sequences = 1,048,576 B per context token.
    # The longest context is the KV budget over that, exactly (no grid): 125,650,709,862.4 B (0.9 x 1,287,651,328 B
    # less than on a 141-GiB H200: CUDA reports 150,109,945,856 B) / 1,048,576 B -> 119,829 tokens
    assert budget == pytest.approx(125_650_709_862.4, rel=1e-12)
    assert ctx == int(budget // (64 * 16_384)) == 119_829
    assert cache == {"full-attention K/V": TRILLION * 131_072}
    ctx, seqs, cache, _, grid = results[mistral.id]
    # Mistral 7B slides over 4,096 tokens on every layer: a sequence keeps 4,096 x 131,072 B = 536,870,912 B
    # however long it runs, so 64 sequences that fit at 4,096 tokens fit at every length up to the cap
    assert cache == {"sliding-window K/V (last 4,096 tokens)": 536_870_912}
    assert ctx == TRILLION and len(set(seqs[grid >= 4_096])) == 1


def test_the_fit_page_sizes_a_trillion_position_import():
    """Through the URL, as the 433-character link that took the server down did."""
    _, query = imported("mixtral-8x7b", max_position_embeddings=TRILLION)
    at = run_page("pages/1_Fit.py", **query, tp="8", etp="1")  # TP 8 x EP 8, as default_layout above
    # the hand value of the test above: 119,829 tokens for 64 sequences on 8 x H200 at TP 8
    assert metrics(at)["Max context at 64 sequences"] == "119,829 tokens"
    assert any(m.proto.delta == "model limit 1,000,000,000,000" for m in at.metric)
    line = chart_data(at, 1).dropna(subset=["series"])  # sequences vs context, without the marker
    # the page's 60-point grid from 128 tokens to the cap, drawn while a sequence fits: one sequence of n tokens
    # needs n x 16,384 B of the 126,809,596,057.6 B budget, so n <= 7,739,843 (the grid's last point below: 6,340,060)
    last = line.loc[line["context_tokens"].idxmax()]
    assert len(line) <= 60 and last["sequences"] == 1 and 6_340_060 == last["context_tokens"] <= 7_739_843
    _, query = imported("mistral-7b", max_position_embeddings=TRILLION)
    assert metrics(run_page("pages/1_Fit.py", **query))["Max context at 64 sequences"] == "1,000,000,000,000 tokens"


# ---- item 3: the importer's limits are the charts' limits


def test_the_expert_limit_is_the_balance_charts_row_limit():
    from ui.charts import TooManyRowsError, expert_load_chart

    def spec(n):
        loads = pd.DataFrame({"item": np.arange(n), "value": np.full(n, 100 / n), "hot": "normal"})
        return expert_load_chart(loads, mean=100 / n, threshold=200 / n, title="t").to_dict()

    assert spec(MAX_ROUTED_EXPERTS)
    with pytest.raises(TooManyRowsError, match="a chart of 5,001 rows: at most 5,000 are drawn"):
        spec(MAX_ROUTED_EXPERTS + 1)
    assert MAX_ROUTED_EXPERTS == CHART_MAX_ROWS == 5_000


def test_the_balance_page_on_the_most_experts_bounds_its_router_simulation():
    """5,000 experts took the Balance page 29 s (the bias-balancing simulation: 100 steps x 512 tokens x 5,000
    experts x 3 speeds = 768M router scores); it now runs the steps that fit 2e8 scores and says so:
    2e8 / (512 x 5,000 x 3) = 26.04 -> 26 of the 100 steps."""
    _, query = imported("deepseek-v3", n_routed_experts=MAX_ROUTED_EXPERTS)
    at = run_page("pages/3_Balance.py", timeout=300, nodes="8", **query)
    at.toggle(key="bias_sim").set_value(True).run()
    assert not at.exception
    assert any("the simulation runs 26 of the 100 steps" in i.value for i in at.info)


def test_the_single_box_page_draws_the_most_layers_the_importer_accepts():
    """1,667 layers made the Single box page raise MaxRowsError (three rows per layer: 5,001 rows)."""
    _, query = imported("qwen3-30b-a3b", num_hidden_layers=MAX_LAYERS)
    at = run_page("pages/11_Single_box.py", **query)
    placement = chart_data(at, 0)
    assert len(placement) == 3 * 1_666 == 4_998 <= CHART_MAX_ROWS
    assert set(placement["layer"]) == set(range(1_666))
    with pytest.raises(ValueError, match=r"'num_hidden_layers' must be <= 1,666 \(the Single box page"):
        imported("qwen3-30b-a3b", num_hidden_layers=MAX_LAYERS + 1)


# ---- item 5: every config the importer accepts renders the Fit and Single box pages


@st.composite
def bounded_configs(draw):
    """A DeepSeek-V3-style config.json (MLA or GQA attention, dense first layers, routed experts, MTP) with
    each count drawn at, just inside or just outside the importer's bounds."""
    layers = draw(st.sampled_from([1, 2, 5, MAX_LAYERS, MAX_LAYERS + 1]))
    experts = draw(st.sampled_from([0, 1, 8, MAX_ROUTED_EXPERTS, MAX_ROUTED_EXPERTS + 1]))  # 0: dense
    heads = draw(st.sampled_from([1, 4, 16, 128]))
    cfg = {
        "model_type": "deepseek_v3",
        "_name_or_path": "bounds/prop",
        "hidden_size": 2048,
        "num_hidden_layers": layers,
        "vocab_size": 1_000,
        "intermediate_size": 512,
        "num_attention_heads": heads,
        "max_position_embeddings": draw(st.sampled_from([1, 4_096, MAX_FIELD_INT, MAX_FIELD_INT + 1])),
        "first_k_dense_replace": draw(st.sampled_from(sorted({0, layers - 1, layers, layers + 1}))),
        "num_nextn_predict_layers": draw(st.sampled_from([0, 1])),
    }
    if draw(st.booleans()):  # MLA
        cfg.update(kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
    else:
        cfg["num_key_value_heads"] = draw(st.sampled_from([k for k in (1, 2, 4, 16, 128) if heads % k == 0]))
        cfg["head_dim"] = 128
    if experts:
        cfg.update(n_routed_experts=experts, num_experts_per_tok=min(2, experts), moe_intermediate_size=128)
        cfg["n_shared_experts"] = draw(st.sampled_from([0, 1]))
    return cfg


def _violations(cfg: dict) -> set[str]:
    """The fields of ``cfg`` outside the importer's stated bounds."""
    bad = set()
    if cfg["num_hidden_layers"] > MAX_LAYERS:
        bad.add("num_hidden_layers")
    if cfg.get("n_routed_experts", 0) > MAX_ROUTED_EXPERTS:
        bad.add("n_routed_experts")
    if cfg["max_position_embeddings"] > MAX_FIELD_INT:
        bad.add("max_position_embeddings")
    if cfg.get("n_routed_experts") and cfg["first_k_dense_replace"] >= cfg["num_hidden_layers"]:
        bad.add("first_k_dense_replace")
    return bad


@settings(
    max_examples=int(os.environ.get("IMPORT_BOUNDS_EXAMPLES", "10")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(bounded_configs())
@example(  # every bound at its limit at once: 1,666 layers, 5,000 experts, one MoE layer, 10**12 positions
    {
        "model_type": "deepseek_v3",
        "_name_or_path": "bounds/prop",
        "hidden_size": 2048,
        "num_hidden_layers": MAX_LAYERS,
        "vocab_size": 1_000,
        "intermediate_size": 512,
        "num_attention_heads": 16,
        "max_position_embeddings": MAX_FIELD_INT,
        "first_k_dense_replace": MAX_LAYERS - 1,
        "num_nextn_predict_layers": 1,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "n_routed_experts": MAX_ROUTED_EXPERTS,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "n_shared_experts": 1,
    }
)
def test_every_accepted_import_renders_fit_and_single_box(cfg):
    bad = _violations(cfg)
    event("refused" if bad else "rendered")
    if bad:
        with pytest.raises(ValueError) as e:
            query_for(cfg)
        assert any(f"field '{k}' must be" in str(e.value) for k in bad), str(e.value)
        return
    spec, query = query_for(cfg)
    fit = run_page("pages/1_Fit.py", timeout=120, **query)
    assert any("Does **prop (imported)** fit" in md.value for md in fit.markdown)
    verdicts = [a.value for a in (*fit.success, *fit.warning, *fit.error)]
    assert any(v.startswith(("**Fits.**", "**The weights fit", "**Does not fit.**")) for v in verdicts), verdicts
    assert any(m.proto.delta == f"model limit {cfg['max_position_embeddings']:,}" for m in fit.metric)
    box = run_page("pages/11_Single_box.py", timeout=120, **query)
    if spec.is_moe:
        assert len(chart_data(box, 0)) == 3 * cfg["num_hidden_layers"]
    else:
        assert "is a dense model" in box.info[0].value


def test_a_toy_import_whose_sequences_need_160_bytes_a_token_renders_fit():
    # 1 MLA layer with a 64 + 16 latent: 80 x 2 B = 160 B per token, 409,600 B per 2,560-token sequence; the
    # decode plan fits 2,611,112 of them on 8 x H200 and asked Workload for that batch (limit 1,000,000); the
    # headroom is now sized on one replica and extrapolated past the limit
    _, query = query_for(
        {
            "model_type": "deepseek_v3",
            "hidden_size": 256,
            "num_hidden_layers": 1,
            "vocab_size": 1_000,
            "intermediate_size": 512,
            "num_attention_heads": 1,
            "kv_lora_rank": 64,
            "qk_nope_head_dim": 32,
            "qk_rope_head_dim": 16,
            "v_head_dim": 32,
        }
    )
    at = run_page("pages/1_Fit.py", **query)  # today: AssertionError, Workload's "batch ... <= 1000000"
    assert any(a.value.startswith("**Fits.**") for a in at.success)  # 160 B a token fits anywhere


# ---- issue 37 (probe 3): configs inside the old bounds that broke pages, and the pages' own guard


def _catalog_config(model_id: str, path: tuple, value) -> dict:
    cfg = json.loads((CATALOG_DIR / "models" / model_id / "config.json").read_text())
    (cfg[path[0]] if len(path) == 2 else cfg)[path[-1]] = value
    return cfg


def _link(cfg: dict) -> dict:
    """The URL query a session that imported ``cfg`` wrote (model id and cfg token), built without the importer."""
    from core.hf import imported_model_id

    text = json.dumps(cfg, sort_keys=True, separators=(",", ":"))
    return {"model": imported_model_id(text), "cfg": encode_config(text)}


K3_MERGE = _catalog_config("kimi-k3", ("vision_config", "merge_kernel_size"), [10**300, 10**300])
K3_FIELD = (
    "config.json (kimi_k25 vision_config): field 'merge_kernel_size[0]' must be 1 to 64 (a vision tower's patch "
    "merge), got a 301-digit integer"
)


@pytest.mark.parametrize("page", ["app.py", "pages/1_Fit.py", "pages/5_Layouts.py"])
def test_the_probes_2_7_kb_link_is_refused_with_the_field_named(page):
    """CR-3: the 2,706-character link broke every page (OverflowError in the sidebar's model picker): the import
    is refused with the field, and the page runs on the catalog's default model."""
    query = _link(K3_MERGE)
    assert query["model"] == "custom-539cd6ecb8"  # the probe's link: the same config, normalised as the app does
    at = run_page(page, timeout=120, **query)
    warnings = [w.value for w in at.sidebar.warning]
    shown = md_escape(f"URL parameter cfg: {K3_FIELD}; using the catalog models only")  # the sidebar shows text
    assert shown in warnings, warnings
    assert any("model='custom-539cd6ecb8' is not a known model id" in w for w in warnings), warnings
    assert at.session_state.scenario.model_id == "deepseek-v3"


def test_the_probes_kimi_k3_config_pasted_on_the_catalog_is_refused_with_the_field_named():
    at = run_page("pages/8_Catalog.py")
    at.text_area(key="cfg_paste").input(json.dumps(K3_MERGE)).run()
    assert not at.exception
    assert [e.value for e in at.error] == ["Could not import this config.json: " + md_escape(K3_FIELD)]


CR4 = {
    "deepseek-v4-flash n_shared_experts": (("n_shared_experts",), "the shared experts (1,000,000,000,000 of them"),
    "kimi-k3 text_config.moe_intermediate_size": (
        ("text_config", "moe_intermediate_size"),
        "896 of them, each of intermediate size 1,000,000,000,000",
    ),
    "qwen3.8-2.4t-a95b shared_expert_intermediate_size": (
        ("shared_expert_intermediate_size",),
        "the shared experts (1 of them, e.g. n_shared_experts, each of intermediate size 1,000,000,000,000",
    ),
}


@pytest.mark.parametrize("case", list(CR4))
@pytest.mark.parametrize("page", ["pages/2_Intensity.py", "pages/3_Balance.py", "pages/4_Speculative.py"])
def test_the_probes_configs_that_broke_three_pages_are_refused_with_the_component_named(case, page):
    """CR-4: each field within its old bound (10**12) multiplied into GEMMs core.perf.kernels refuses (weights above
    1e15): Intensity, Balance and Speculative raised ValueError. The import now refuses the model's size."""
    path, named = CR4[case]
    at = run_page(page, timeout=120, **_link(_catalog_config(case.split()[0], path, 10**12)))
    warnings = " ".join(w.value for w in at.sidebar.warning)
    assert "URL parameter cfg: config.json (" in warnings and named in warnings, warnings
    assert "allowed: at most 1,000,000,000,000,000 (10^15) parameters in all" in warnings


GUARDED = {  # the page, the function it calls, which of its calls refuse, what the error says was not computed
    "intensity": ("pages/2_Intensity.py", "core.moe", "decode_step", None, "The decode step"),
    "balance": ("pages/3_Balance.py", "core.balance.cost", "imbalance_cost", None, "The throughput lost to imbalance"),
    "speculative measured": (
        "pages/4_Speculative.py",
        "core.speculative.closed_form",
        "batch_speedup",
        True,  # the calls with a published accepted length (core.speculative.measured)
        "The speedups on the published acceptance curves",
    ),
    "speculative vs batch": (
        "pages/4_Speculative.py",
        "core.speculative",
        "batch_speedup",
        False,  # the page's own step-model calls: the first is the headline speedup at batch 1
        "The speedup at batch 1",
    ),
}


@pytest.mark.parametrize("case", list(GUARDED))
def test_a_value_error_from_the_model_is_an_error_message_not_a_crash(case, monkeypatch):
    """CR-4's other half: whatever the importer lets through, a ValueError from the step-time model is explained."""
    import importlib

    page, module, name, measured, what = GUARDED[case]
    mod = importlib.import_module(module)
    real = getattr(mod, name)

    def refuse(*args, **kwargs):
        if measured is not None and ("accepted_tokens" in kwargs) is not measured:
            return real(*args, **kwargs)
        raise ValueError("weights must be a finite number in [0, 1e+15], got 3.145728e+18")

    monkeypatch.setattr(mod, name, refuse)
    at = run_page(page, timeout=120)
    assert [e.value for e in at.error][-1] == (
        f"**{what} could not be computed for this scenario:** weights must be a finite number in \\[0, 1e+15\\], "
        "got 3.145728e+18"
    )


def test_the_model_pickers_label_never_raises():
    """CR-3: the sidebar's format_func divided a 1,207-digit count by 1e9 (OverflowError) on every page."""
    from ui.format import billions
    from ui.scenario import _model_label

    class Counted:
        name = "huge"
        total_params, active_params = 10**1206, 37 * 10**9

    class Broken:
        name = "broken"

        @property
        def total_params(self):
            raise OverflowError("int too large to convert to float")

        active_params = total_params

    assert _model_label(cat.model("deepseek-v3")) == "DeepSeek-V3 (671B / 37B)"
    assert _model_label(Counted()) == "huge (?B / 37B)"
    assert _model_label(Broken()) == "broken (?B / ?B)"
    assert [billions(x) for x in (10**1206, float("nan"), float("inf"), None, "x", 1.5e9)] == [*["?B"] * 5, "2B"]
    assert billions(46_702_792_704, 1) == "46.7B"
