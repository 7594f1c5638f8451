"""On Blackwell, SGLang and vLLM run FlashInfer's TRT-LLM-gen MoE kernels. The planner times that ``fused`` path with
TensorRT-LLM's measured kernels (``path_alias: fused: trtllm`` in catalogs/efficiency.yaml). SGLang's own
measurements of the FlashInfer kernels put the one-token MoE at about half the planner's time (issue #35,
bench/RESULTS.md, "Blackwell MoE kernels from SGLang's own measured table").

The measured values below are NVIDIA aiconfigurator 0.12.0's b200_sxm/moe/sglang/0.5.14/moe_perf.parquet
(``sglang_flashinfer_trtllm_moe``, balanced routing, one token entering the layer, expert TP 8, EP 1). That is the
layout of the SGLang batch-1 points in catalogs/served_step.yaml. The values are latencies of one MoE layer's routed
experts on one GPU, read with pandas (median of duplicated keys); no calibration case holds them:

    Qwen3-235B-A22B (4096 / 1536, 128 experts, top-8) bfloat16            0.01970 ms
    DeepSeek-R1 (7168 / 2048, 256 experts, top-8) nvfp4                    0.02060 ms
    Kimi-K2 (7168 / 2048, 384 experts, top-8) fp8_block                    0.03450 ms
    gpt-oss-120b (2880 / 2880, 128 experts, top-4) w4a8_mxfp4_mxfp8        0.01650 ms

The planner gives 46.2 / 43.8 / 47.4 / 40.3 us: +135% / +113% / +37% / +144%. The three beyond 40% are strict
expected failures. They are the known gap, kept visible: when a change times the fused path with these kernels,
they pass and must lose their mark. Taking the table as the fused path's calibration was tried and not adopted. It
brought them to +38% / +20% / -18% / +28%, but moved MiniMax-M3's SGLang decode step away from its published value:
test_served_step_applied, +9% -> +16.5%. That cookbook runs DeepGEMM, not FlashInfer."""

from __future__ import annotations

import pytest

from core.validation import predict

KNOWN_GAP = pytest.mark.xfail(
    strict=True, reason="the fused path on Blackwell is timed with TensorRT-LLM's kernels (bench/RESULTS.md)"
)
MEASURED_MS = {  # (model, experts' dtype) -> the table row above
    ("qwen3-235b-a22b", "bf16"): 0.0197,
    ("deepseek-v3", "nvfp4"): 0.0206,
    ("kimi-k2", "fp8"): 0.0345,
    ("gpt-oss-120b", "mxfp4"): 0.0165,
}


def _one_token_tp8(model: str, dtype: str) -> float:
    return predict(
        {
            "id": f"held-out-{model}-{dtype}",
            "model": model,
            "gpu": "b200",
            "num_gpus": 8,
            "phase": "moe_layer_decode",
            "layout": {"attention_tp": 1, "attention_dp": 8, "ep": 1, "expert_tp": 8, "pp": 1},
            "precision": {"weights": dtype, "experts": dtype, "kv": "bf16", "dispatch": "fp8", "combine": "bf16"},
            "workload": {"tokens_per_gpu": 0.125},  # one token entering the layer, seen by the 8 expert-TP ranks
            "options": {"overlap": "none", "redundant_experts": 0, "kernel_path": "fused"},
            "measured": {"metric": "moe_layer_latency_ms"},
        }
    )


@pytest.mark.parametrize(
    ("model", "dtype"),
    [
        pytest.param("qwen3-235b-a22b", "bf16", marks=KNOWN_GAP),
        pytest.param("deepseek-v3", "nvfp4", marks=KNOWN_GAP),
        ("kimi-k2", "fp8"),
        pytest.param("gpt-oss-120b", "mxfp4", marks=KNOWN_GAP),
    ],
)
def test_the_sglang_measured_one_token_moe_is_within_40_percent(model, dtype):
    assert _one_token_tp8(model, dtype) == pytest.approx(MEASURED_MS[(model, dtype)], rel=0.40)
