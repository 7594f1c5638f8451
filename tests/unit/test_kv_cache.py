"""KV-cache bytes per token, computed by hand from the published configs."""

import pytest

from core import memory
from core.catalog import load_catalog

cat = load_catalog()


def test_deepseek_v3_mla_caches_576_elements_per_layer():
    m = cat.model("deepseek-v3")
    # MLA: kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements per token per layer, any head count
    assert memory.kv_elements_per_token_per_layer(m) == 576
    # 576 x 2 bytes (bf16) x 61 layers = 70,272 bytes per token
    assert memory.kv_bytes_per_token(m, "bf16") == 70_272
    # fp8 halves it: 35,136
    assert memory.kv_bytes_per_token(m, "fp8") == 35_136


def test_llama3_70b_gqa_caches_2_x_8_x_128_per_layer():
    m = cat.model("llama-3-70b")
    assert memory.kv_elements_per_token_per_layer(m) == 2 * 8 * 128
    # 2048 elements x 2 bytes x 80 layers = 327,680 bytes = 320 KiB per token
    assert memory.kv_bytes_per_token(m, "bf16") == 327_680


def test_kimi_k2_mla_is_independent_of_head_count():
    # 64 heads instead of DeepSeek-V3's 128, same 576-element latent, same 61 layers
    assert memory.kv_bytes_per_token(cat.model("kimi-k2")) == 70_272


def test_hunyuan_cross_layer_attention_halves_the_cache():
    m = cat.model("hunyuan-large")
    # 2 x 8 KV heads x 80 head_dim = 1,280 elements; K/V stored on 64 / 2 = 32 layers
    assert memory.kv_elements_per_token_per_layer(m) == 1280
    assert memory.kv_bytes_per_token(m, "bf16") == 1280 * 2 * 32


def test_deepseek_v32_adds_the_fp8_indexer_key():
    m = cat.model("deepseek-v3.2-exp")
    # 70,272 (MLA, as V3) + 61 layers x (128 FP8 bytes + 4-byte fp32 scale) = 78,324
    assert memory.kv_bytes_per_token(m, "bf16") == 70_272 + 61 * 132


def test_qwen3_uses_explicit_head_dim_not_hidden_over_heads():
    m = cat.model("qwen3-235b-a22b")
    # 4 KV heads x 128 (explicit head_dim; hidden/heads = 4096/64 would wrongly give 64) -> 1024
    assert memory.kv_elements_per_token_per_layer(m) == 1024
    assert memory.kv_bytes_per_token(m, "bf16") == 1024 * 2 * 94


def test_mla_is_an_order_of_magnitude_below_mha_of_the_same_width():
    m = cat.model("deepseek-v3")
    mha_elems = 2 * 128 * 128  # 128 heads x 128 head dim, K and V
    assert mha_elems / memory.kv_elements_per_token_per_layer(m) > 50


def test_bad_kv_dtype():
    with pytest.raises(ValueError, match="unknown KV cache dtype 'int4'"):
        memory.kv_bytes_per_token(cat.model("mixtral-8x7b"), "int4")
