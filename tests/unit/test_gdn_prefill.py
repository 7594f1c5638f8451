"""A Gated DeltaNet layer in prefill and decode against NVIDIA aiconfigurator's measured kernels (issue #35).

The measured cells are aiconfigurator @ 095f58a51 ``systems/data/<gpu>/linear_attention/<stack>/<version>/
gdn_perf.parquet``, phase ``context`` (``causal_conv1d_fn`` + ``chunk_gated_delta_rule*``, batch 1) and phase
``generation`` (``causal_conv1d_update`` + ``fused_recurrent_gated_delta_rule*``), Qwen3.5-397B-A17B's layer (16 key /
64 value heads of 128); catalogs/gdn_prefill.yaml holds the fit (bench/fit_gdn_prefill.py)."""

from __future__ import annotations

import pytest

from core import perf
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Precision
from core.hardware.gdn_prefill import gdn_prefill_cost
from core.perf.kernels import layer_costs

cat = load_catalog()
Q35 = cat.model("qwen3.5-397b-a17b")
B200, GB200, MI355X = cat.gpu("b200"), cat.gpu("gb200"), cat.gpu("mi355x")


def _qwen35(gpu, layout: ParallelLayout, weights: str, stack: str) -> Deployment:
    return Deployment(Q35, gpu, layout, Precision(weights=weights, kv_cache="fp8"), cat.efficiency_for(gpu.id, stack))


@pytest.mark.parametrize(
    "stack, heads, measured_ms",
    [
        # B200, 8,192 tokens: vLLM 0.24.0 0.1416 + 0.3398 ms (64 heads), 0.3399 ms both kernels at 4 heads;
        # SGLang 0.5.14 0.1418 + 0.9245 = 1.0663 ms (64 heads)
        ("vllm", 64, 0.4814),
        ("vllm", 4, 0.3399),
        ("sglang", 64, 1.0663),
    ],
)
def test_the_fit_gives_the_measured_layer(stack, heads, measured_ms):
    got = gdn_prefill_cost(B200, stack).layer_s(8192, heads)
    assert got == pytest.approx(measured_ms * 1e-3, rel=0.03)


def test_tensor_parallelism_barely_divides_it():
    # vLLM on B200, 8,192 tokens: 64 heads (TP1) 0.4814 ms, 4 heads (TP16) 0.3399 ms: a sixteenth of the heads
    # leaves 71% of the time (the conv and the chunk scan's per-token work)
    c = gdn_prefill_cost(B200, "vllm")
    assert c.layer_s(8192, 4) / c.layer_s(8192, 64) == pytest.approx(0.3399 / 0.4814, rel=0.03)


def test_a_gpu_or_stack_without_a_table():
    # MI355X: B200's vLLM cost x 7.7 / 8.0 TB/s (its HBM bandwidth); TensorRT-LLM measured one head count: vLLM's
    ref = gdn_prefill_cost(B200, "vllm")
    got = gdn_prefill_cost(MI355X, "vllm")
    k = B200.hbm_bytes_per_s / MI355X.hbm_bytes_per_s
    assert got.per_token_s == pytest.approx(ref.per_token_s * k) and "HBM bandwidth" in got.source
    assert gdn_prefill_cost(B200, "trtllm").layer_s(8192, 64) == ref.layer_s(8192, 64)
    with pytest.raises(ValueError, match="stack must be a text"):
        gdn_prefill_cost(B200, 3)


def test_the_prefill_step_adds_every_gdn_layer():
    # Qwen3.5 NVFP4 on GB200, DEP2 (attention DP2 x EP2), vLLM: 8,192 prompt tokens on each GPU, each rank a whole
    # attention group (64 value heads): 45 GDN layers x (19.45 us + 8,192 x (34.97 ns + 0.280 ns x 64)) = 45 x
    # 452.7 us = 20.4 ms; a decode step adds none
    d = _qwen35(GB200, ParallelLayout(attention_dp=2, ep=2), "nvfp4", "vllm")
    st = perf.step_time(d, perf.StepConfig("prefill", 8192, 8192))
    c = gdn_prefill_cost(GB200, "vllm")
    assert st.components["linear_prefill"] == pytest.approx(45 * c.layer_s(8192, 64))
    assert st.components["linear_prefill"] == pytest.approx(20.4e-3, rel=0.02)
    assert "linear_prefill" not in perf.step_time(d, perf.StepConfig("decode", 64, 8192)).components


def test_tensor_parallel_ranks_each_run_the_groups_tokens_on_their_heads():
    # TP8: the attention group's 8 x 1,024 = 8,192 tokens on every rank, 64 / 8 = 8 heads each
    d = _qwen35(B200, ParallelLayout(attention_tp=8, expert_tp=8), "fp8", "sglang")
    st = perf.step_time(d, perf.StepConfig("prefill", 1024, 8192))
    assert st.components["linear_prefill"] == pytest.approx(45 * gdn_prefill_cost(B200, "sglang").layer_s(8192, 8))


def test_the_decode_state_traffic_matches_the_measured_recurrent_kernel():
    # GB200 vLLM 0.24.0, generation at 256 sequences, 64 value heads: fused_recurrent 0.3165 ms + conv update
    # 0.0135 ms = 0.330 ms a layer. The planner reads and writes each sequence's fp32 state (4,268,032 B) once:
    # 256 x 2 x 4.268 MB = 2.19 GB at the attention-decode factors; within 10%
    d = _qwen35(GB200, ParallelLayout(attention_dp=8, ep=8), "nvfp4", "vllm")
    costs = layer_costs(d, perf.StepConfig("decode", 256, 8192))
    i = next(k for k, g in enumerate(Q35.mixers) if not g.mixer.caches_context)
    w = costs.mixer[i]["attention_scores"]
    assert w.bytes == pytest.approx(256 * 2 * 4_268_032)
    got = perf.kernel_s(w, GB200.hbm_bytes_per_s, d.efficiency.kernel(w.family, w.path))
    assert got == pytest.approx(0.330e-3, rel=0.10)


def test_the_layouts_time_categories_count_the_measured_prefill_modules():
    # the Layouts page's "where the time goes" bars sum time_categories(step components): every second of the step
    # must land in some category. A Qwen3.5 prefill step on a GB200 DEP2 rank carries linear_prefill (20.4 ms,
    # above); a GLM-5 prefill of 8,192-token prompts carries indexer_prefill. Both belong to attention.
    from core.serving.operating_point import time_categories

    q = _qwen35(GB200, ParallelLayout(attention_dp=2, ep=2), "nvfp4", "vllm")
    glm = Deployment(
        cat.model("glm-5"),
        B200,
        ParallelLayout(attention_tp=8, expert_tp=8),
        Precision(weights="fp8", kv_cache="fp8"),
        cat.efficiency_for("b200", "sglang"),
    )
    for d, name in ((q, "linear_prefill"), (glm, "indexer_prefill")):
        parts = perf.step_time(d, perf.StepConfig("prefill", 8192, 8192)).components
        assert parts[name] > 0
        cats = time_categories(parts)
        assert sum(cats.values()) == pytest.approx(sum(parts.values()))
        attention = parts["attention_projections"] + parts["attention_scores"] + parts[name]
        assert cats["attention"] == pytest.approx(attention)
