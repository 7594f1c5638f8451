"""DeepSeek-V4.1's causal encoder-decoder prefill (tech report 2.2, 3.2.2), priced by the step-time model.

Layers 0-19 are a causal encoder every prompt token runs; layers 20-39 (the decoder) take their global KV from the
encoder's output and replay only each prompt's last 128 tokens (the decoder's sliding window). Decode runs all 40.
The published split: 8B parameters active per prompt token, 16B per generated token ("prefill compute is about
halved")."""

import json
from pathlib import Path

import pytest

from core import perf
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout

cat = load_catalog()
V41 = cat.model("deepseek-v4.1-flash")
# every layer, every token: V4.1 without its causal-encoder extra
PLAIN = V41.model_copy(update={"extras": tuple(e for e in V41.extras if e.kind != "causal_encoder")})
B200 = cat.gpu("b200")
LAY = ParallelLayout(attention_tp=1, attention_dp=8, ep=8)
EFF = cat.efficiency_for("b200", "sglang")
CONFIG = Path(__file__).resolve().parents[2] / "catalogs/models/deepseek-v4.1-flash/config.json"


def test_the_reader_finds_the_encoder_and_the_replay_window():
    text = json.loads(CONFIG.read_text())["text_config"]
    # the encoder ends at the first compress-ratio-1 layer; the decoder replays sliding_window tokens
    assert text["compress_ratios"][:21] == [0, 0] + [2] * 18 + [1] and text["sliding_window"] == 128
    (enc,) = [e for e in V41.extras if e.kind == "causal_encoder"]
    assert (enc.encoder_layers, enc.replay_tokens) == (20, 128) and V41.split_layer == 20
    assert not cat.model("deepseek-v4-flash").extras  # V4 has no causal encoder (nor tables)


def test_replayed_fraction():
    assert perf.replayed_fraction(V41, perf.StepConfig("prefill", 8192, 8192)) == 128 / 8192
    assert perf.replayed_fraction(V41, perf.StepConfig("prefill", 100, 100)) == 1.0  # a prompt shorter than 128
    assert perf.replayed_fraction(V41, perf.StepConfig("decode", 64, 8192)) == 1.0
    assert perf.replayed_fraction(PLAIN, perf.StepConfig("prefill", 8192, 8192)) == 1.0


def _step(model, tokens_per_gpu, ctx, phase="prefill", table_tier="gpu"):
    return perf.step_time(
        Deployment(model, B200, LAY, "fp8", EFF), perf.StepConfig(phase, tokens_per_gpu, ctx, table_tier=table_tier)
    )


def test_prefill_is_the_encoder_at_every_token_and_the_decoder_at_the_replayed_ones():
    # an 8,192-token prompt per GPU: the 20 encoder layers at 8,192 tokens, the 20 decoder layers at 128 (1/64).
    # Every layer is alike in the MoE block, so each per-layer component of the step is half a plain 40-layer
    # prefill at 8,192 tokens plus half one at 128 tokens (same 8,192-token context)
    ced, full, tail = _step(V41, 8192, 8192), _step(PLAIN, 8192, 8192), _step(PLAIN, 128, 8192)
    for part in ("routed_experts", "shared_experts", "router", "dispatch", "combine", "layer_overhead"):
        assert ced.components[part] == pytest.approx(
            0.5 * full.components[part] + 0.5 * tail.components[part], rel=1e-9
        ), part
    # the head sees the prompts (one logit row per sequence), not the replayed tokens
    assert ced.components["lm_head"] == pytest.approx(full.components["lm_head"], rel=1e-12)


def test_prefill_compute_is_about_halved_and_decode_is_unchanged():
    # published: 8B active per prompt token vs 16B per generated token, i.e. about half the GEMM work; the
    # decoder's 128 replayed tokens of 8,192 add 1.6%: the step is 0.45-0.6 of pricing every layer at every token
    ratio = _step(V41, 8192, 8192).step_s / _step(PLAIN, 8192, 8192).step_s
    assert 0.45 < ratio < 0.6
    assert _step(V41, 64, 8192, "decode").step_s == _step(PLAIN, 64, 8192, "decode").step_s
    # a prompt no longer than the window replays every token: nothing saved
    assert _step(V41, 128, 128).step_s == pytest.approx(_step(PLAIN, 128, 128).step_s, rel=1e-12)


def test_pipeline_stages_split_at_the_encoder():
    # PP 2: stage 0 holds the encoder (layers 0-19, every token), stage 1 the decoder (replayed tokens): the first
    # stage is the busy one
    lay = ParallelLayout(attention_tp=1, attention_dp=4, ep=4, pp=2)
    st = perf.step_time(
        Deployment(V41, B200, lay, "fp8", EFF), perf.StepConfig("prefill", 8192, 8192, table_tier="gpu")
    )
    assert st.stage_s[0] > 5 * st.stage_s[1]
