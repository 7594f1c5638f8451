"""Mamba-2 (core.model.mixers.linear.Mamba2) on Nemotron-3-Super-120B-A12B, every expected value worked by hand
from catalogs/models/nemotron-3-super-120b-a12b/config.json: hidden_size 4096, mamba_num_heads 128, mamba_head_dim
64, n_groups 8, ssm_state_size 128, conv_kernel 4, use_conv_bias true; hybrid_override_pattern: 40 Mamba-2 layers
(M), 8 attention layers (*, num_key_value_heads 2, head_dim 128), the rest MoE (E)."""

from __future__ import annotations

from core import memory
from core.catalog import load_catalog
from core.model.mixers.linear import Mamba2

cat = load_catalog()
MODEL = cat.models["nemotron-3-super-120b-a12b"]
SSM = next(g for g in MODEL.mixers if g.mixer.kind == "mamba2")
LAYER = SSM.mixer


def test_the_catalog_reads_the_config():
    assert isinstance(LAYER, Mamba2) and len(SSM.layers) == 40
    assert (LAYER.num_heads, LAYER.head_dim, LAYER.n_groups, LAYER.state_size) == (128, 64, 8, 128)


def test_parameters_per_layer_by_hand():
    # d_inner = 128 x 64 = 8,192; B and C 2 x 8 groups x 128 = 2,048
    # in_proj (z, x, B, C, dt) 4,096 x (2 x 8,192 + 2,048 + 128) = 4,096 x 18,560 = 76,021,760
    # conv over x, B, C: 8,192 + 2,048 = 10,240 channels x 4 = 40,960 + bias 10,240
    # dt_bias, A_log, D 3 x 128 = 384; gated norm 8,192; out_proj 8,192 x 4,096 = 33,554,432
    # 76,021,760 + 40,960 + 10,240 + 384 + 8,192 + 33,554,432 = 109,635,968
    assert LAYER.params(MODEL.hidden_size) == 109_635_968


def test_no_kv_per_token_but_a_fixed_state():
    # state per sequence: fp32 128 x 64 x 128 x 4 B = 4,194,304 + a bf16 conv window 10,240 x 3 x 2 B = 61,440:
    # 4,255,744 B
    assert LAYER.cache_bytes_per_token("bf16") == 0
    assert LAYER.state_bytes() == 4_255_744
    # KV per token from the 8 attention layers: 2 x 128 x (K + V) x 2 B = 1,024 B each, 8,192 B; 1,000 tokens:
    # 8,192,000 + 40 states x 4,255,744 = 170,229,760 -> 178,421,760 B
    assert memory.kv_bytes_per_sequence(MODEL, 1000, "bf16") == 178_421_760
