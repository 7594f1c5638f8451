"""The recurrent state's dtype of linear-attention / SSM layers as the engine stores it (issue #35).

A Gated DeltaNet layer's checkpoint says ``mamba_ssm_dtype: float32``, and that is the engines' default; serving
recipes override it (vLLM ``--mamba-ssm-cache-dtype bfloat16``, SGLang ``--mamba-ssm-dtype bfloat16``): the vLLM blog
'vLLM Reaches 25K Total TPS/GPU on Qwen3.5' (2026-08-06) ran it so, "significantly increases the effective KV cache
capacity on the decode endpoint". A deployment names it in its precision (``Precision.linear_state``); its model is
then resolved with that state, once."""

from __future__ import annotations

import pytest

from core import memory
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Precision
from core.serving.frontier import load_frontier_cases, model_case

cat = load_catalog()
Q35 = cat.model("qwen3.5-397b-a17b")
GB200 = cat.gpu("gb200")


def test_the_checkpoint_state_is_fp32_and_bf16_halves_the_matrix():
    # Qwen3.5-397B, one GDN layer: 64 value heads x 128 x 128 state + a conv window of (2 x 16 x 128 + 64 x 128 =
    # 12,288 channels) x 3 steps in bf16: fp32 64 x 128 x 128 x 4 + 12,288 x 3 x 2 = 4,194,304 + 73,728 = 4,268,032 B;
    # bf16 2,097,152 + 73,728 = 2,170,880 B; 45 GDN layers a sequence: 192,061,440 B against 97,689,600 B
    assert memory.fixed_state_bytes_per_sequence(Q35) == pytest.approx(45 * 4_268_032)
    d = Deployment(Q35, GB200, ParallelLayout(attention_dp=8, ep=8), Precision(weights="nvfp4", linear_state="bf16"))
    assert memory.fixed_state_bytes_per_sequence(d.model) == pytest.approx(45 * 2_170_880)
    # the catalog's model is left as it is; a deployment without the override keeps the checkpoint's
    assert memory.fixed_state_bytes_per_sequence(Q35) == pytest.approx(45 * 4_268_032)
    plain = Deployment(Q35, GB200, ParallelLayout(attention_dp=8, ep=8), Precision(weights="nvfp4"))
    assert plain.model is Q35


def test_a_model_without_linear_layers_is_unchanged():
    v3 = cat.model("deepseek-v3")
    d = Deployment(v3, GB200, ParallelLayout(attention_dp=8, ep=8), Precision(weights="fp8", linear_state="bf16"))
    assert memory.fixed_state_bytes_per_sequence(d.model) == 0.0
    assert d.model == v3


def test_the_state_dtype_is_checked():
    with pytest.raises(ValueError):
        Precision(linear_state="fp8")
    assert Precision(linear_state="bf16").label.endswith("linear state bf16")


def test_the_vllm_qwen35_decode_pool_keeps_its_published_per_user_speed():
    # vLLM blog 2026-08-06, Figure 2: 4 x DEP2 prefill + 1 x DEP8 decode at 4,096 clients, 38.7 tok/s per user (read
    # from the chart). With the checkpoint's fp32 state the planner had 23.6 (-39%): the decode pool admitted more
    # than its cache holds and read twice the state every step; with the recipe's bf16 state within 25%
    case = next(c for c in load_frontier_cases() if c.id == "qwen3.5-397b-gb200-8k1k")
    assert case.linear_state == "bf16"
    gap = next(g for g in model_case(case, cat).gaps if g.point.id == "vllm-qwen35-nvfp4-gb200-4xdep2-cc4096")
    assert gap.point.tokens_per_s_per_user == 38.7
    assert gap.modelled.tokens_per_s_per_user == pytest.approx(38.7, rel=0.25)
