"""Gated DeltaNet (core.model.mixers.linear.GatedDeltaNet) on Qwen3.5-35B-A3B, every expected value worked by hand
from catalogs/models/qwen3.5-35b-a3b/config.json: hidden_size 2048, linear_num_key_heads 16, linear_key_head_dim
128, linear_num_value_heads 32, linear_value_head_dim 128, linear_conv_kernel_dim 4; 40 layers, every fourth full
attention (num_key_value_heads 2, head_dim 256), the other 30 linear."""

from __future__ import annotations

from core import memory
from core.catalog import load_catalog
from core.model.mixers.linear import GatedDeltaNet

cat = load_catalog()
MODEL = cat.models["qwen3.5-35b-a3b"]
LINEAR = next(g for g in MODEL.mixers if g.mixer.kind == "gated_deltanet")
LAYER = LINEAR.mixer


def test_the_catalog_reads_the_config():
    assert isinstance(LAYER, GatedDeltaNet) and len(LINEAR.layers) == 30
    assert (LAYER.key_heads, LAYER.key_head_dim, LAYER.value_heads, LAYER.value_head_dim) == (16, 128, 32, 128)


def test_parameters_per_layer_by_hand():
    # in_proj_qkvz 2,048 x (2 x 16 x 128 + 2 x 32 x 128) = 2,048 x 12,288 = 25,165,824
    # in_proj_ba 2,048 x 2 x 32 = 131,072
    # conv1d over q, k, v: (2 x 16 x 128 + 32 x 128) = 8,192 channels x 4 = 32,768
    # dt_bias + A_log 2 x 32 = 64; gated norm 128; out_proj 32 x 128 x 2,048 = 8,388,608
    # 25,165,824 + 131,072 + 32,768 + 64 + 128 + 8,388,608 = 33,718,464
    assert LAYER.params(MODEL.hidden_size) == 33_718_464


def test_no_kv_per_token_but_a_fixed_state():
    # a linear layer caches nothing per token; its state per sequence is fp32 32 x 128 x 128 x 4 B = 2,097,152
    # + a bf16 conv window of 8,192 channels x 3 steps x 2 B = 49,152: 2,146,304 B
    assert LAYER.cache_bytes_per_token("bf16") == 0
    assert LAYER.state_bytes() == 2_146_304
    # the model's KV per token is its 10 full-attention layers': 2 KV heads x 256 x (K + V) x 2 B = 2,048 B each,
    # 20,480 B; 1,000 tokens: 20,480,000 + 30 states x 2,146,304 = 64,389,120 -> 84,869,120 B
    assert memory.kv_bytes_per_sequence(MODEL, 1000, "bf16") == 84_869_120
