"""Kimi Delta Attention (core.model.mixers.linear.KDA) on Kimi-K3, every expected value worked by hand from
catalogs/models/kimi-k3/config.json: hidden_size 7168, linear_attn_config num_heads 96, head_dim 128,
short_conv_kernel_size 4, use_full_rank_gate true; 93 layers, 69 KDA and 24 gated MLA (kv_lora_rank 512,
qk_rope_head_dim 64)."""

from __future__ import annotations

from core import memory
from core.catalog import load_catalog
from core.model.mixers.linear import KDA

cat = load_catalog()
MODEL = cat.models["kimi-k3"]
LINEAR = next(g for g in MODEL.mixers if g.mixer.kind == "kda")
LAYER = LINEAR.mixer


def test_the_catalog_reads_the_config():
    assert isinstance(LAYER, KDA) and len(LINEAR.layers) == 69
    assert (LAYER.num_heads, LAYER.head_dim, LAYER.gate_rank, LAYER.conv_kernel) == (96, 128, 0, 4)


def test_parameters_per_layer_by_hand():
    # heads x dim = 96 x 128 = 12,288 = w
    # q, k, v 3 x 7,168 x 12,288 = 264,241,152; full-rank g_proj 7,168 x 12,288 = 88,080,384
    # short convs 3 x 12,288 x 4 = 147,456; f_a 7,168 x 128 = 917,504; f_b 128 x 12,288 = 1,572,864
    # dt_bias 12,288; A_log 96; b_proj 7,168 x 96 = 688,128; o_norm 128; o_proj 12,288 x 7,168 = 88,080,384
    # sum: 443,740,384
    assert LAYER.params(MODEL.hidden_size) == 443_740_384


def test_no_kv_per_token_but_a_fixed_state():
    # state per sequence: fp32 96 x 128 x 128 x 4 B = 6,291,456 + three bf16 conv windows 3 x 12,288 x 3 x 2 B
    # = 221,184: 6,512,640 B
    assert LAYER.cache_bytes_per_token("bf16") == 0
    assert LAYER.state_bytes() == 6_512_640
    # KV per token from the 24 MLA layers: (512 + 64) x 2 B = 1,152 B each, 27,648 B; 1,000 tokens: 27,648,000
    # + 69 states x 6,512,640 = 449,372,160 -> 477,020,160 B
    assert memory.kv_bytes_per_sequence(MODEL, 1000, "bf16") == 477_020_160
