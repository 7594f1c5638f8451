"""DeepSeek-V4's compressed attention (core.model.mixers.compressed.CompressedAttention) on DeepSeek-V4-Flash,
every expected value worked by hand from catalogs/models/deepseek-v4-flash/config.json: hidden_size 4096,
num_attention_heads 64, head_dim 512 (one K=V head), q_lora_rank 1024, o_lora_rank 1024, o_groups 8,
sliding_window 128, index_n_heads 64, index_head_dim 128, index_topk 512, compress_ratios [0, 0, 4, 128, 4, ...]:
2 window-only layers, 21 CSA layers (ratio 4) and 20 HCA layers (ratio 128). A cached entry is SGLang's serving
format, 448 B FP8 + 64 x 2 B BF16 RoPE + 8 B scales = 584 B; an FP4 index key 68 B."""

from __future__ import annotations

import pytest

from core.catalog import load_catalog
from core.model.mixers.compressed import CompressedAttention

cat = load_catalog()
MODEL = cat.models["deepseek-v4-flash"]
BY_RATIO = {g.mixer.ratio: g for g in MODEL.mixers}
H = MODEL.hidden_size

# every layer: wq_a 4,096 x 1,024 = 4,194,304 + norm 1,024 + wkv 4,096 x 512 = 2,097,152 + norm 512 = 6,292,992;
# wq_b 1,024 x 64 x 512 = 33,554,432 + wo_a 64 x 512 x 1,024 = 33,554,432 + wo_b 8 x 1,024 x 4,096 = 33,554,432
# + 64 sinks = 100,663,360; together 106,956,352
BASE = 106_956_352


def test_the_catalog_reads_the_config():
    assert sorted(BY_RATIO) == [0, 4, 128]
    assert [len(BY_RATIO[r].layers) for r in (0, 4, 128)] == [2, 21, 20]
    csa = BY_RATIO[4].mixer
    assert isinstance(csa, CompressedAttention) and csa.sparse and not BY_RATIO[128].mixer.sparse
    assert (csa.entry_bytes, csa.index_key_bytes, csa.window, csa.topk_tokens) == (584, 68, 128, 512)


def test_parameters_per_layer_by_hand():
    assert BY_RATIO[0].mixer.params(H) == BASE
    # HCA (1 entry per 128, coff 1): compressor ape 128 x 512 = 65,536 + wkv and wgate 2 x 4,096 x 512 = 4,194,304
    # + norm 512 = 4,260,352 -> 111,216,704
    assert BY_RATIO[128].mixer.params(H) == BASE + 4_260_352 == 111_216_704
    # CSA (ratio 4, overlapping: coff 2): compressor 4 x 2 x 512 = 4,096 + 2 x 4,096 x 2 x 512 = 8,388,608 + 512
    # = 8,393,216; indexer wq_b 1,024 x 64 x 128 = 8,388,608, weights_proj 4,096 x 64 = 262,144, its compressor
    # 4 x 2 x 128 = 1,024 + 2 x 4,096 x 2 x 128 = 2,097,152 + 128 = 2,098,304; extra 19,142,272 -> 126,098,624
    assert BY_RATIO[4].mixer.params(H) == BASE + 19_142_272 == 126_098_624


def test_kv_bytes_per_token_by_hand():
    # the long-context rate: CSA (584 + 68) / 4 = 163 B a token; HCA 584 / 128 = 4.5625 B; the window-only layers
    # keep a fixed 128 entries (0 B a token beyond it), whatever kv_dtype says (the format is fixed)
    assert BY_RATIO[4].mixer.cache_bytes_per_token("bf16") == 163
    assert BY_RATIO[128].mixer.cache_bytes_per_token("fp8") == 4.5625
    assert BY_RATIO[0].mixer.cache_bytes_per_token("bf16") == 0
    # the model: 21 x 163 + 20 x 4.5625 = 3,423 + 91.25 = 3,514.25 B a token
    per_token = sum(len(g.layers) * g.mixer.cache_bytes_per_token("bf16") for g in MODEL.mixers)
    assert per_token == pytest.approx(3_514.25)


def test_cache_at_1024_tokens_by_hand():
    # every layer: the last 128 raw entries x 584 B = 74,752 B
    assert float(BY_RATIO[0].mixer.cache_bytes(1024, "bf16")) == 74_752
    # CSA: + 1,024 / 4 = 256 entries x 584 = 149,504 + 256 index keys x 68 = 17,408: 241,664 B
    assert float(BY_RATIO[4].mixer.cache_bytes(1024, "bf16")) == 241_664
    # HCA: + 1,024 / 128 = 8 entries x 584 = 4,672: 79,424 B
    assert float(BY_RATIO[128].mixer.cache_bytes(1024, "bf16")) == 79_424
