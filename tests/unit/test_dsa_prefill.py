"""A DSA layer in prefill (issue 35): the sparse MLA kernel on whole blocks of 64 heads, and the indexer's measured
cost per token (catalogs/dsa_prefill.yaml, fitted on NVIDIA aiconfigurator's SGLang 0.5.14 B200 tables). Hand values
in the comments; the module check stands on aiconfigurator's measured module times, read off its tables."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from core import perf
from core.catalog import load_catalog
from core.deployment import bundle
from core.deployment.specs import ParallelLayout, Precision
from core.hardware.dsa_prefill import DSA_PREFILL_PATH, indexer_prefill_cost
from core.model.mixers.mla import SPARSE_PREFILL_HEAD_BLOCK

CAT = load_catalog()
DOC = yaml.safe_load(DSA_PREFILL_PATH.read_text(encoding="utf-8"))


def _deployment(model_id: str, tp: int, gpu: str = "b200"):
    return bundle.Deployment(
        CAT.model(model_id),
        CAT.gpu(gpu),
        ParallelLayout(attention_tp=tp, expert_tp=tp),
        Precision(weights="fp8", kv_cache="fp8"),
        CAT.efficiency_for(gpu, "sglang"),
        redundant_experts=0,
    )


def test_the_fit_recomputed_from_its_stored_points():
    # B200, indexer minus skip-indexer module, ms per layer: 4,096 -> 1.1498, 8,192 -> 2.2253, 16,384 -> 4.9137.
    # floor + slope x t on the relative error gives a negative floor, so the floor is 0 and the slope minimises
    # sum (s t / y - 1)^2: s = sum(t / y) / sum((t / y)^2) = 0.2831 us per token
    b200 = DOC["gpus"]["b200"]
    t = np.array([p["tokens"] for p in b200["points"]], float)
    y = np.array([p["indexer_ms"] for p in b200["points"]], float) / 1e3
    assert list(t) == [4096, 8192, 16384]
    slope = float((t / y).sum() / ((t / y) ** 2).sum())
    assert slope == pytest.approx(0.2831e-6, rel=1e-3)
    assert b200["floor_s"] == 0.0 and b200["per_token_s"] == pytest.approx(slope, rel=1e-3)
    # worst point: 16,384 x 0.2831 us = 4.638 ms against 4.914 measured, -5.6%
    assert b200["max_rel_error"] == pytest.approx(abs(16384 * slope / 4.9137e-3 - 1), abs=1e-3)
    assert DOC["source"]["repository"] == "ai-dynamo/aiconfigurator" and len(DOC["source"]["commit"]) == 40


def test_a_gpu_without_a_measured_pair_scales_b200s_by_bandwidth():
    b200 = indexer_prefill_cost(CAT.gpu("b200"))
    assert (b200.floor_s, b200.per_token_s) == (0.0, pytest.approx(0.2831e-6))
    # H200: 0.2831 us x 7.7 / 4.8 TB/s = 0.4541 us per token (the H100 table's two lengths give 0.44)
    h200 = indexer_prefill_cost(CAT.gpu("h200"))
    assert h200.per_token_s == pytest.approx(0.2831e-6 * 7.7 / 4.8, rel=1e-6)
    assert "bandwidth" in h200.source and "measured on b200" in b200.source
    assert b200.layer_s(8192) == pytest.approx(8192 * 0.2831e-6)  # 2.319 ms


def test_bad_files_and_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="gpu must be a GPUSpec"):
        indexer_prefill_cost("b200")
    bad = tmp_path / "dsa.yaml"
    bad.write_text("gpus: {}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="lacks or mistypes"):
        indexer_prefill_cost(CAT.gpu("b200"), bad)
    bad.write_text(
        "source: {repository: r, commit: c, framework: f}\nreference: {gpu: b200, hbm_bytes_per_s: 7.7e12}\n"
        "gpus: {b200: {floor_s: 0.0, per_token_s: -1.0}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"b200 per_token_s must be a finite number in \[0, 0.001\], got -1.0"):
        indexer_prefill_cost(CAT.gpu("b200"), bad)
    with pytest.raises(ValueError, match="DSA prefill file"):
        indexer_prefill_cost(CAT.gpu("b200"), tmp_path / "missing.yaml")


def test_sparse_prefill_scores_by_hand():
    mla = CAT.model("glm-5").mixers[0].mixer
    assert SPARSE_PREFILL_HEAD_BLOCK == 64 and mla.indexer.topk_tokens == 2048
    # 8,192-token prompt, top-k 2,048: a token attends to 2,048 - 2,048^2 / (2 x 8,192) = 1,792 keys on average;
    # absorbed, 2 x (576 + 512) = 2,176 FLOPs per key and head; TP8 leaves 8 of GLM-5's 64 heads, run as a block of
    # 64: 64 x 2,176 x 1,792 = 249,561,088 FLOPs per token; TP1 runs its own 64 heads, the same
    assert mla.score_flops_per_token(8192, 8, "prefill") == pytest.approx(249_561_088)
    assert mla.score_flops_per_token(8192, 1, "prefill") == pytest.approx(249_561_088)
    # a prompt no longer than the top-k runs dense (expanded) attention: 8 heads x 2 x (192 + 64 + 256) x 1,024
    assert mla.score_flops_per_token(2048, 8, "prefill") == pytest.approx(8 * 2 * 512 * 1024)
    # DeepSeek-V3.2 at TP4: 32 of 128 heads -> one block of 64; TP1: 128 heads, two blocks
    v32 = CAT.model("deepseek-v3.2-exp").mixers[0].mixer
    assert v32.score_flops_per_token(8192, 4, "prefill") == pytest.approx(64 * 2176 * 1792)
    assert v32.score_flops_per_token(8192, 1, "prefill") == pytest.approx(128 * 2176 * 1792)
    # arrays of prompt lengths, as the charts pass them: each length its own regime
    got = mla.score_flops_per_token(np.array([2048.0, 8192.0]), 8, "prefill")
    assert got == pytest.approx([8 * 2 * 512 * 1024, 249_561_088])
    # decode is unchanged: 8 heads x 2,176 x 2,048 top-k + the indexer's scan 2 x 32 x 128 x 8,192
    assert mla.score_flops_per_token(8192, 8, "decode") == pytest.approx(8 * 2176 * 2048 + 2 * 32 * 128 * 8192)


def test_a_prefill_step_pays_the_indexer_on_every_layer_that_runs_one():
    # GLM-5 TP8 on B200, one 8,192-token prompt over 8 GPUs (1,024 per GPU; the TP group processes all 8,192):
    # 78 indexer layers x 0.2831 us x 8,192 = 0.1809 s
    d = _deployment("glm-5", 8)
    st = perf.step_time(d, perf.StepConfig("prefill", 1024, 8192))
    assert st.components["indexer_prefill"] == pytest.approx(78 * 0.2831e-6 * 8192, rel=1e-3)
    # a 2,048-token prompt runs dense attention, no top-k: nothing
    assert "indexer_prefill" not in perf.step_time(d, perf.StepConfig("prefill", 256, 2048)).components
    # decode pays the indexer through its scan and the served step, not here
    assert "indexer_prefill" not in perf.step_time(d, perf.StepConfig("decode", 1, 8192)).components
    # GLM-5.2's IndexShare: 21 layers run their own indexer, 57 reuse the last top-k
    d52 = _deployment("glm-5.2", 8)
    st52 = perf.step_time(d52, perf.StepConfig("prefill", 1024, 8192))
    assert st52.components["indexer_prefill"] == pytest.approx(21 * 0.2831e-6 * 8192, rel=1e-3)
    # DeepSeek-V3 has no indexer
    v3 = _deployment("deepseek-v3", 8)
    assert "indexer_prefill" not in perf.step_time(v3, perf.StepConfig("prefill", 1024, 8192)).components


@pytest.mark.parametrize(
    ("model_id", "tp", "measured_ms"),
    [
        # aiconfigurator-core (ai-dynamo/aiconfigurator @ 095f58a5), b200_sxm/sparse_attention/sglang/0.5.14/
        # dsa_context_module_perf.parquet, kernel sglang_dsa_indexer_trtllm, fp8_block GEMMs, FP8 KV, batch 1, 8,192
        # tokens, mean latency per layer. GLM-5 is the fit's own model (its indexer difference); DeepSeek-V3.2's
        # module was not fitted on at all
        ("glm-5", 8, 3.855),
        ("glm-5", 1, 5.057),
        ("deepseek-v3.2-exp", 8, 4.295),
        ("deepseek-v3.2-exp", 2, 5.144),
    ],
)
def test_the_attention_module_stands_next_to_aiconfigurators_measured_one(model_id, tp, measured_ms):
    d = _deployment(model_id, tp)
    c = perf.step_time(d, perf.StepConfig("prefill", 8192 / tp, 8192)).components
    ours_ms = (c["attention_projections"] + c["attention_scores"] + c["indexer_prefill"]) / d.model.num_layers * 1e3
    # before: projections + dense expanded scores alone, 0.53 ms for GLM-5 TP8 (-86%)
    assert ours_ms == pytest.approx(measured_ms, rel=0.15)


def test_verifying_drafts_on_a_sparse_layer_gathers_a_top_k_set_per_token():
    from core.perf.kernels import layer_costs

    mla = CAT.model("glm-5").mixers[0].mixer
    # GLM-5, FP8 latent (576 B a token), 8,704-token context: each query token gathers its own 2,048 top-k rows,
    # 576 x 2,048 = 1,179,648 B a layer; the index keys (132 B a token) are scanned once per sequence:
    # 8,704 x 132 = 1,148,928 B. A context within the top-k is dense: nothing per query
    assert mla.decode_query_read_bytes_per_rank(8704, "fp8", 8) == 1_179_648
    assert mla.decode_read_bytes_per_rank(8704, "fp8", 8) == 1_179_648 + 1_148_928
    assert mla.decode_query_read_bytes_per_rank(2048, "fp8", 8) == 0.0
    assert CAT.model("deepseek-v3").mixers[0].mixer.decode_query_read_bytes_per_rank(8704, "fp8", 8) == 0.0
    # one sequence verifying 3 drafts (4 query tokens) on TP8 reads 4 top-k sets and the index keys once:
    # 4 x 1,179,648 + 1,148,928 = 5,867,520 B a layer, against 2,328,576 B for a plain step
    d = _deployment("glm-5", 8)
    verify = layer_costs(d, perf.StepConfig("decode", 4 / 8, 8704, tokens_per_sequence=4.0))
    plain = layer_costs(d, perf.StepConfig("decode", 1 / 8, 8704))
    assert verify.mixer[0]["attention_scores"].cache_bytes == pytest.approx(5_867_520)
    assert plain.mixer[0]["attention_scores"].cache_bytes == pytest.approx(2_328_576)
