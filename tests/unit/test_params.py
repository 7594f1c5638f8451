"""Parameter accounting against the vendors' published counts and against hand arithmetic."""

import pytest

from core.catalog import load_catalog
from core.model import params

cat = load_catalog()
MOE_IDS = sorted(i for i, m in cat.models.items() if m.is_moe)
ALL_IDS = sorted(cat.models)

REQUIRED_MOE = {
    "mixtral-8x7b",
    "mixtral-8x22b",
    "grok-1",
    "deepseek-moe-16b",
    "deepseek-v2",
    "snowflake-arctic",
    "hunyuan-large",
    "deepseek-v3",
    "llama-4-scout",
    "llama-4-maverick",
    "qwen3-235b-a22b",
    "kimi-k2",
    "deepseek-v3.2-exp",
    "qwen3-30b-a3b",
    "deepseek-v2-lite",
    "gpt-oss-120b",
    "gpt-oss-20b",
}
REQUIRED_DENSE = {
    "llama-3-8b",
    "llama-3-70b",
    "llama-3.1-405b",
    "mistral-7b",
    "qwen3-0.6b",
    "qwen3-1.7b",
    "qwen3-32b",
}


def test_catalog_has_every_required_model():
    assert REQUIRED_MOE <= set(MOE_IDS)
    assert REQUIRED_DENSE <= set(ALL_IDS) - set(MOE_IDS)


@pytest.mark.parametrize("model_id", ALL_IDS)
def test_total_within_3pct_of_published(model_id):
    m = cat.model(model_id)
    pub = m.published
    assert pub.total_params, f"{model_id}: model.yaml has no published total"
    total = params.total_params(m, include_mtp=pub.includes_mtp, include_vision=pub.includes_vision)
    assert total == pytest.approx(pub.total_params, rel=0.03), f"{model_id}: {total / 1e9:.2f}B"


@pytest.mark.parametrize("model_id", [i for i in ALL_IDS if cat.model(i).published.active_params])
def test_active_within_3pct_of_published_under_vendor_convention(model_id):
    m = cat.model(model_id)
    pub = m.published
    if pub.active_rounded_to:  # a rounded name ("A3B"): the computed count must round to it
        assert abs(m.active_params - pub.active_params) <= pub.active_rounded_to / 2, f"{m.active_params / 1e9:.2f}B"
        assert pub.counting_notes, "a rounded published figure needs its reason in counting_notes"
    else:
        assert m.active_params == pytest.approx(pub.active_params, rel=0.03), f"{m.active_params / 1e9:.2f}B"


def test_mixtral_8x7b_by_hand():
    m = cat.model("mixtral-8x7b")
    # per layer: attention q,o 4096x4096 each + k,v 4096x1024 each = 41,943,040
    #            8 experts x 3 x 4096 x 14336 = 1,409,286,144; router 8 x 4096 = 32,768; 2 norms 8,192
    per_layer = 41_943_040 + 1_409_286_144 + 32_768 + 8_192
    # + embedding and untied head 2 x 32000 x 4096 + final norm 4096
    assert m.total_params == 32 * per_layer + 2 * 131_072_000 + 4096 == 46_702_792_704
    # active: 2 of 8 experts -> 41,943,040 + 2 x 176,160,768 + 32,768 + 8,192 per layer, with embedding and head
    assert m.active_params == 32 * (41_943_040 + 2 * 176_160_768 + 32_768 + 8_192) + 2 * 131_072_000 + 4096


def test_deepseek_v3_mla_attention_by_hand():
    m = cat.model("deepseek-v3")
    # q_a 7168x1536 + norm 1536 + q_b 1536x(128x192) + kv_a 7168x(512+64) + norm 512
    # + kv_b 512x(128x(128+128)) + o (128x128)x7168
    expected = 11_010_048 + 1_536 + 37_748_736 + 4_128_768 + 512 + 16_777_216 + 117_440_512
    assert params.attention_params_per_layer(m) == expected == 187_107_328


def test_deepseek_v3_conventions():
    m = cat.model("deepseek-v3")
    # 671B excludes the MTP module (README_WEIGHTS: 685B = 671B main model + 14B MTP, 11.5B of it unique)
    assert m.total_params == pytest.approx(671e9, rel=0.001)
    assert params.total_params(m, include_mtp=True) == pytest.approx(682.6e9, rel=0.002)
    # MTP module: ~11.5B unique parameters (DeepSeek README_WEIGHTS)
    assert m.mtp_params == pytest.approx(11.5e9, rel=0.02)
    # the DeepSeek convention leaves out the 0.93B input embedding (129280 x 7168)
    with_emb = params.active_params(m, "incl_embedding_and_head")
    assert with_emb - m.active_params == 129_280 * 7_168


def test_deepseek_v2_lite_needs_its_convention():
    m = cat.model("deepseek-v2-lite")
    # counting the input embedding overshoots the published 2.4B by ~11%; the vendor's way lands within 3%
    assert params.active_params(m, "incl_embedding_and_head") > 1.08 * 2.4e9
    assert m.active_params == pytest.approx(2.4e9, rel=0.03)


def test_llama4_totals_include_the_vision_tower():
    for mid, text_only in (("llama-4-scout", 107.77e9), ("llama-4-maverick", 400.71e9)):
        m = cat.model(mid)
        assert m.vision_params == 871_932_416  # vision encoder + adapter + projector
        assert params.total_params(m, include_vision=False) == pytest.approx(text_only, rel=0.001)
        assert m.published.includes_vision
        # vision is never active for text tokens
        assert params.active_breakdown(m).vision == 0


def test_llama4_maverick_interleaves_dense_and_moe_layers():
    m = cat.model("llama-4-maverick")
    assert m.num_moe_layers == 24 and m.dense_layers == tuple(range(0, 48, 2))
    assert m.dense_intermediate_size == 16384 and m.moe.expert_intermediate_size == 8192
    assert m.moe.n_shared_experts == 1


def test_dense_layers_in_moe_models():
    assert cat.model("deepseek-v3").dense_layers == (0, 1, 2)
    assert cat.model("kimi-k2").dense_layers == (0,)
    assert cat.model("deepseek-v2").dense_layers == (0,)
    assert cat.model("qwen3-235b-a22b").dense_layers == ()


def test_gpt_oss_matches_the_model_card_split():
    # model card: 116.83B total / 5.13B active, 20.91B / 3.61B (counting the unembedding only)
    assert cat.model("gpt-oss-120b").total_params == pytest.approx(116.83e9, rel=0.001)
    assert cat.model("gpt-oss-120b").active_params == pytest.approx(5.13e9, rel=0.002)
    assert cat.model("gpt-oss-20b").total_params == pytest.approx(20.91e9, rel=0.001)
    assert cat.model("gpt-oss-20b").active_params == pytest.approx(3.61e9, rel=0.002)


def test_arctic_parallel_residual_mlp():
    m = cat.model("snowflake-arctic")
    # 35 layers x 3 x 7168 x 7168 dense residual MLP = 5.39B beside the experts
    assert params.breakdown(m).parallel_mlp == 35 * 3 * 7168 * 7168
    # one expert is 3 x 7168 x 4864 x 35 layers = 3.66B ("128 x 3.66B MoE" in Snowflake's README)
    assert 35 * params.expert_params(m) == pytest.approx(3.66e9, rel=0.002)


def test_tied_embeddings_counted_once():
    m = cat.model("qwen3-0.6b")
    assert m.tie_word_embeddings and params.breakdown(m).lm_head == 0
    # Qwen card: 0.44B non-embedding parameters
    assert params.active_params(m, "non_embedding") == pytest.approx(0.44e9, rel=0.01)


def test_flops_per_token_is_twice_active_matmul_params():
    m = cat.model("llama-3-70b")
    # 70.55B total includes the 1.05B input embedding (128256 x 8192), which is a lookup
    assert params.flops_per_token(m) == 2 * (m.total_params - 128_256 * 8_192)


def test_breakdown_sums_to_total():
    for m in cat.models.values():
        assert params.breakdown(m).total == m.total_params


def test_unknown_convention():
    with pytest.raises(ValueError, match="unknown active convention 'all'"):
        params.active_params(cat.model("mixtral-8x7b"), "all")
