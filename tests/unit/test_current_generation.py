"""Current-generation models whose layers the planner already models (issue 12, first part):
Qwen3-Coder-480B-A35B (qwen3_moe), Kimi-K2.5 (kimi_k25: Kimi-K2 text + MoonViT), GLM-5 (glm_moe_dsa:
DeepSeek-V3.2 layout). Published counts and the cache sizes are computed by hand below."""

import pytest

from core import hf_config, memory, params
from core.catalog import load_catalog

cat = load_catalog()


@pytest.mark.parametrize("model_id,total,active", [
    ("qwen3-coder-480b-a35b", 480e9, 35e9),
    ("kimi-k2.5", 1000e9, 32e9),  # "1T" is rounded: 1026.4B, +2.6%, as for Kimi-K2
    ("glm-5", 744e9, 40e9),
])
def test_published_counts_within_3_percent(model_id, total, active):
    m = cat.model(model_id)
    assert params.total_params(m, include_vision=False) == pytest.approx(total, rel=0.03)
    assert params.active_params(m) == pytest.approx(active, rel=0.03)


def test_conventions_per_vendor():
    # Moonshot counts the lm_head but not the input embedding; Z.ai counts neither; Qwen counts both
    assert cat.model("kimi-k2.5").published.active_convention == "excl_input_embedding"
    assert cat.model("glm-5").published.active_convention == "non_embedding"
    assert cat.model("qwen3-coder-480b-a35b").published.active_convention == "incl_embedding_and_head"
    # GLM-5's active count moves by its 154,880 x 6,144 = 0.95B embedding table under another convention
    glm = cat.model("glm-5")
    assert params.active_params(glm, "excl_input_embedding") - params.active_params(glm, "non_embedding") == 154_880 * 6_144


def test_kv_bytes_per_token():
    # Qwen3-Coder: 2 x 8 KV heads x 128 x 2 B = 4,096 B per layer, x 62 layers = 253,952 B
    assert memory.kv_bytes_per_token(cat.model("qwen3-coder-480b-a35b"), "bf16") == 253_952
    # Kimi-K2.5: MLA (512 + 64) x 2 B = 1,152 B per layer, x 61 = 70,272 B
    assert memory.kv_bytes_per_token(cat.model("kimi-k2.5"), "bf16") == 70_272
    # GLM-5: 1,152 B MLA + 128 B FP8 indexer key + 4 B scale = 1,284 B per layer, x 78 = 100,152 B
    assert memory.kv_bytes_per_token(cat.model("glm-5"), "bf16") == 100_152


@pytest.mark.parametrize("tokens,gib", [(4096, 0.38), (32768, 3.06), (131072, 12.23)])
def test_glm5_cache_per_sequence(tokens, gib):
    # 100,152 B x tokens / 2^30: 0.38 / 3.06 / 12.23 GiB at 4K / 32K / 128K
    got = memory.kv_bytes_per_sequence(cat.model("glm-5"), tokens, "bf16") / 2**30
    assert got == pytest.approx(gib, abs=0.005)


def test_moonvit_estimate_by_hand():
    # per layer: 4 x 1152^2 + 4 x 1152 (qkv, o with biases) + 2 x 1152 x 4304 + 4304 + 1152 (MLP) + 4 x 1152 (2 LN)
    per_layer = 4 * 1152**2 + 4 * 1152 + 2 * 1152 * 4304 + 4304 + 1152 + 4 * 1152
    assert per_layer == 15_239_504
    patch = 3 * 14 * 14 * 1152 + 1152  # 678,528
    pos = 64 * 64 * 1152 + 4 * 1152  # 4,723,200
    merger = 2 * 1152 + 4608**2 + 4608 + 4608 * 7168 + 7168  # LN + 4608->4608->7168 MLP = 54,277,888
    expected = 27 * per_layer + patch + pos + 2 * 1152 + merger
    assert expected == 471_148_528
    assert cat.model("kimi-k2.5").vision_params == expected


def test_glm5_mtp_is_counted_apart():
    # one MTP layer of ~9.95B (a full MoE layer + eh_proj + norms), excluded from 744B
    assert params.mtp_params(cat.model("glm-5")) == pytest.approx(9.95e9, rel=0.005)


def test_kimi_k25_needs_text_config():
    with pytest.raises(ValueError, match="text_config"):
        hf_config.model_from_hf_config({"model_type": "kimi_k25"}, model_id="k")
