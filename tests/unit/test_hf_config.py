import copy
import json
import re

import pytest

from core.catalog import CATALOG_DIR
from core.hf import SUPPORTED_MODEL_TYPES, model_from_hf_config, parse_config_text, vision_tower_params
from core.model.mixers.gqa import GQA
from core.model.mixers.mla import MLA


def raw(model_id):
    return json.loads((CATALOG_DIR / "models" / model_id / "config.json").read_text())


def test_unsupported_architecture_names_it_and_the_supported_ones():
    with pytest.raises(ValueError) as e:
        model_from_hf_config({"model_type": "mamba", "architectures": ["MambaForCausalLM"]}, model_id="x")
    msg = str(e.value)
    assert "'mamba' is not supported" in msg and "deepseek_v3" in msg and "mixtral" in msg


def test_missing_field_is_named():
    cfg = raw("deepseek-v3")
    del cfg["kv_lora_rank"]  # without it the reader falls back to MHA and then needs nothing MLA...
    del cfg["num_attention_heads"]
    with pytest.raises(ValueError, match=r"config.json \(deepseek_v3\): missing field 'num_attention_heads'"):
        model_from_hf_config(cfg, model_id="x")


def test_mistyped_field_is_named():
    cfg = raw("mixtral-8x7b")
    cfg["hidden_size"] = "4096"
    with pytest.raises(ValueError, match=r"field 'hidden_size' must be an integer, got '4096'"):
        model_from_hf_config(cfg, model_id="x")
    cfg["hidden_size"] = -1
    with pytest.raises(ValueError, match=r"field 'hidden_size' must be >= 1, got -1"):
        model_from_hf_config(cfg, model_id="x")


def test_heads_must_divide():
    cfg = raw("mixtral-8x7b")
    cfg["num_key_value_heads"] = 7
    with pytest.raises(ValueError, match=r"num_attention_heads \(32\) is not a multiple of num_key_value_heads \(7\)"):
        model_from_hf_config(cfg, model_id="x")


def test_architectures_identify_the_family_without_model_type():
    cfg = raw("mixtral-8x7b")
    cfg.pop("model_type")
    assert model_from_hf_config(cfg, model_id="x").architecture == "mixtral"


def test_deepseek_v3_fields():
    m = model_from_hf_config(raw("deepseek-v3"), model_id="dsv3")
    (group,) = m.mixers  # one mixer on all 61 layers
    mla = group.mixer
    assert isinstance(mla, MLA) and group.layers == tuple(range(61)) and mla.indexer is None
    assert (mla.kv_lora_rank, mla.qk_rope_head_dim, mla.q_lora_rank, mla.qk_nope_head_dim, mla.v_head_dim) == (
        512,
        64,
        1536,
        128,
        128,
    )
    assert (m.moe.n_routed_experts, m.moe.top_k, m.moe.n_shared_experts) == (256, 8, 1)
    assert m.moe.router_bias  # noaux_tc: e_score_correction_bias
    assert m.num_mtp_layers == 1 and m.num_moe_layers == 58


def test_deepseek_v2_lite_has_no_q_lora():
    m = model_from_hf_config(raw("deepseek-v2-lite"), model_id="lite")
    assert isinstance(m.head_mixer, MLA) and m.head_mixer.q_lora_rank is None


def test_gpt_oss_head_dim_and_sliding_layers():
    m = model_from_hf_config(raw("gpt-oss-120b"), model_id="oss")
    # head_dim 64 is explicit (hidden 2880 / 64 heads = 45 would be wrong); half the 36 layers slide over 128
    sliding, full = m.mixers  # layer_types: sliding_attention on even layers, full_attention on odd ones
    assert sliding.layers == tuple(range(0, 36, 2)) and full.layers == tuple(range(1, 36, 2))
    assert sliding.mixer.sliding_window == 128 and full.mixer.window is None and sliding.mixer.chunk is None
    assert all(isinstance(g.mixer, GQA) and g.mixer.head_dim == 64 and g.mixer.sinks for g in m.mixers)
    assert m.moe.expert_bias and m.moe.router_bias


def test_mistral_sliding_window_everywhere():
    m = model_from_hf_config(raw("mistral-7b"), model_id="m7")
    (group,) = m.mixers
    assert group.mixer.sliding_window == 4096 and len(group.layers) == 32


def test_llama4_vision_tower_by_hand():
    vc = raw("llama-4-scout")["vision_config"]
    d, f, layers = 1408, 5632, 34
    per_layer = 4 * (d * d + d) + 4 * d + (d * f + f) + (f * d + d)  # attn w+b, 2 LayerNorms, MLP w+b
    embed = 3 * 14 * 14 * d + d + (24 * 24 + 1) * d + 4 * d  # patch conv, class, positions, pre/post LN
    adapter = (4 * d) * 4096 + 4096 * 4096  # pixel shuffle 0.5 -> 4 x 1408 in
    projector = 4096 * 5120
    assert vision_tower_params(vc, 5120) == embed + layers * per_layer + adapter + projector == 871_932_416


def test_every_supported_type_has_a_catalog_example_or_is_an_alias():
    from core.catalog import load_catalog

    used = {m.architecture for m in load_catalog().models.values()}
    assert {
        "deepseek",
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "kimi_k2",
        "mixtral",
        "qwen3_moe",
        "llama4",
        "gpt_oss",
        "hunyuan",
        "arctic",
        "grok-1",
        "llama",
        "mistral",
        "qwen3",
    } <= used
    assert used <= set(SUPPORTED_MODEL_TYPES)


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("", "empty"),
        ("{", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"hidden_size": NaN}', "NaN"),
        ("[" * 5000 + "]" * 5000, "nested"),
        ('{"a": ' * 30 + "1" + "}" * 30, "nested"),
    ],
)
def test_parse_config_text_refuses_bad_input(text, fragment):
    with pytest.raises(ValueError, match=fragment):
        parse_config_text(text)


def test_parse_config_text_size_limit():
    with pytest.raises(ValueError, match="limit"):
        parse_config_text("{" + " " * 2_000_000 + "}")
    with pytest.raises(ValueError, match="not UTF-8"):
        parse_config_text(b"\xff\xfe{}")


def test_pasted_text_roundtrip_matches_catalog():
    from core.catalog import load_catalog

    text = (CATALOG_DIR / "models" / "mixtral-8x22b" / "config.json").read_text()
    m = model_from_hf_config(parse_config_text(text), model_id="pasted")
    assert m.total_params == load_catalog().model("mixtral-8x22b").total_params


def test_config_is_not_mutated():
    cfg = raw("llama-4-maverick")
    before = copy.deepcopy(cfg)
    model_from_hf_config(cfg, model_id="x")
    assert cfg == before


def test_url_encoding_round_trip_and_limits():
    from core.hf import decode_config, encode_config, model_from_config_text

    spec, norm = model_from_config_text((CATALOG_DIR / "models" / "kimi-k2" / "config.json").read_text(), name="k")
    assert spec.id.startswith("custom-") and spec.name == "k (imported)"
    assert decode_config(encode_config(norm)) == norm
    import base64
    import zlib

    bomb = base64.urlsafe_b64encode(zlib.compress(b"{" + b" " * 5_000_000 + b"}", 9)).decode().rstrip("=")
    with pytest.raises(ValueError, match="size limit"):
        decode_config(bomb)
    with pytest.raises(ValueError, match="not a valid encoded"):
        decode_config("!!!!")


def test_quant_presets():
    from core.hf import quant_preset

    assert quant_preset({"quantization": {"quant_algo": "NVFP4"}}) == {"weights": "fp8", "routed_experts": "nvfp4"}
    assert quant_preset({"quantization": {"quant_algo": "FP8"}}) == {"weights": "fp8", "routed_experts": "fp8"}
    assert quant_preset({"quant_method": "awq"})["routed_experts"] == "int4"
    with pytest.raises(ValueError, match="unrecognised quantisation"):
        quant_preset({"quantization": {"quant_algo": "magic"}})


def test_infinity_is_accepted_where_unread_but_never_in_a_read_field():
    from core.hf import model_from_config_text

    base = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "vocab_size": 100,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "intermediate_size": 128,
    }
    import json

    text = json.dumps(base)[:-1] + ', "time_step_limit": [0.0, Infinity]}'
    spec, _ = model_from_config_text(text, name="tiny")
    assert spec.hidden_size == 64
    bad = json.dumps(base).replace('"hidden_size": 64', '"hidden_size": Infinity')
    with pytest.raises(ValueError, match="hidden_size"):
        model_from_config_text(bad, name="tiny")


def test_gpt_oss_quantisation_preset_is_its_published_checkpoint():
    # gpt-oss-120b's own quantization_config: quant_method mxfp4 with self_attn, the router, the embedding and
    # lm_head in modules_to_not_convert. MXFP4 experts, bf16 elsewhere (audit W5: "fp4" matched inside "mxfp4"
    # gave NVFP4 experts and FP8 attention, 67.8 GB).
    from core import memory
    from core.catalog import load_catalog
    from core.deployment.specs import Precision
    from core.hf import quant_preset

    preset = quant_preset(raw("gpt-oss-120b"))
    assert preset == {"weights": "bf16", "routed_experts": "mxfp4"}
    # 114,701,598,720 expert parameters (biases included) x 4.25 / 8 B + 2,127,557,952 others x 2 B = 65.19 GB
    m = load_catalog().model("gpt-oss-120b")
    assert memory.weights_bytes(m, Precision(**preset)) == pytest.approx(
        114_701_598_720 * 4.25 / 8 + 2_127_557_952 * 2, rel=1e-6
    )
    # a plain mxfp4 config without exclusions is MXFP4, never NVFP4
    assert quant_preset({"quant_method": "mxfp4"})["routed_experts"] == "mxfp4"
    assert quant_preset({"quant_algo": "NVFP4"})["routed_experts"] == "nvfp4"


def test_a_scenario_that_differs_from_the_published_checkpoint_says_so():
    # audit M3: "w=mxfp4" quantises gpt-oss's attention, which its checkpoint keeps in bf16 (63.8 GB of
    # weights instead of 65.2): the notes name the checkpoint's own format and how to reproduce it
    from core import memory
    from core.catalog import load_catalog
    from core.deployment.bundle import Deployment
    from core.deployment.specs import ParallelLayout, Precision

    cat = load_catalog()
    d = Deployment(cat.model("gpt-oss-120b"), cat.gpu("h100-sxm"), ParallelLayout(), "mxfp4")
    notes = [msg for _, msg in memory.scenario_notes(d)]
    assert any("published checkpoint stores its weights in bf16 and its routed experts in mxfp4" in n for n in notes)
    same = d.with_(precision=Precision(weights="bf16", routed_experts="mxfp4"))
    assert not any("published checkpoint" in msg for _, msg in memory.scenario_notes(same))
    # DeepSeek-V3's checkpoint is block FP8 throughout: the default scenario matches it
    assert cat.model("deepseek-v3").checkpoint_precision == {"weights": "fp8", "routed_experts": "fp8"}


def test_deepseek_fp4_experts_are_mxfp4():
    # DeepSeek-V4's config.json says "expert_dtype": "fp4" beside a block-FP8 quantization_config; its
    # inference code stores routed experts as E2M1 with one ue8m0 (E8M0) scale per 32 weights, which is
    # OCP MXFP4. The checkpoint is FP8 + MXFP4 experts, not FP8 throughout (the Fit page's note said fp8).
    from core.catalog import load_catalog
    from core.hf import quant_preset

    cat = load_catalog()
    for mid in ("deepseek-v4-flash", "deepseek-v4-pro"):
        assert cat.model(mid).checkpoint_precision == {"weights": "fp8", "routed_experts": "mxfp4"}
    # V4.1 moves the field inside quantization_config
    q = {"quant_method": "fp8", "weight_block_size": [32, 32], "scale_fmt": "ue8m0", "expert_dtype": "fp4"}
    assert quant_preset({"quantization_config": q}) == {"weights": "fp8", "routed_experts": "mxfp4"}
    assert quant_preset({"quant_method": "fp8", "expert_dtype": "fp8"}) == {"weights": "fp8", "routed_experts": "fp8"}
    with pytest.raises(ValueError, match="expert_dtype"):
        quant_preset({"quant_method": "fp8", "expert_dtype": "fp3"})
    with pytest.raises(ValueError, match="expert_dtype"):
        quant_preset({"quant_method": "fp8", "expert_dtype": ["fp4"]})


# ---- issue 21: every config the importer accepts is one the pages can draw; every refusal names the field


def _moe_ids():
    from core.catalog import load_catalog

    return sorted(mid for mid, m in load_catalog().models.items() if m.moe is not None)


def _put(cfg, key, value):
    """Set ``key`` wherever it appears in ``cfg`` and its text_config (not in a vision tower's config)."""
    for d in (cfg, cfg.get("text_config")):
        if isinstance(d, dict) and key in d:
            d[key] = value
    return cfg


def test_the_page_limits_are_named_constants():
    from core.hf import CHART_MAX_ROWS, MAX_FIELD_INT, MAX_LAYERS, MAX_ROUTED_EXPERTS

    # Altair refuses a chart of more than 5,000 rows (MaxRowsError); Balance draws one bar per routed
    # expert, Single box three rows per layer: 3 x 1,666 = 4,998 <= 5,000 < 3 x 1,667 = 5,001
    assert (CHART_MAX_ROWS, MAX_ROUTED_EXPERTS, MAX_LAYERS, MAX_FIELD_INT) == (5_000, 5_000, 1_666, 10**12)


@pytest.mark.parametrize("model_id", _moe_ids())
def test_more_routed_experts_than_the_balance_chart_draws_are_refused(model_id):
    keys = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")  # the last: Step-3.7
    cfg = raw(model_id)
    for key in keys:
        _put(cfg, key, 5_001)
    with pytest.raises(
        ValueError,
        match=r"field '(n_routed_experts|num_experts|num_local_experts|moe_num_experts)' must be <= 5,000 "
        r"\(the Balance page draws one bar per routed expert.*\), got 5,001",
    ):
        model_from_hf_config(cfg, model_id="x")


@pytest.mark.parametrize("model_id", ["deepseek-v3", "qwen3-30b-a3b", "mixtral-8x7b", "kimi-k3", "hunyuan-large"])
def test_the_most_routed_experts_the_pages_draw_are_accepted(model_id):
    cfg = raw(model_id)
    for key in ("n_routed_experts", "num_experts", "num_local_experts"):
        _put(cfg, key, 5_000)  # 5,000 / DeepSeek-V3's 8 expert groups = 625 per group
    assert model_from_hf_config(cfg, model_id="x").moe.n_routed_experts == 5_000


@pytest.mark.parametrize("model_id", ["deepseek-v3", "qwen3-30b-a3b", "mixtral-8x7b", "llama-3-70b", "llama-4-scout"])
def test_more_layers_than_the_single_box_chart_draws_are_refused(model_id):
    cfg = _put(raw(model_id), "num_hidden_layers", 1_667)
    with pytest.raises(
        ValueError,
        match=r"field 'num_hidden_layers' must be <= 1,666 \(the Single box page draws "
        r"three rows per layer.*\), got 1,667",
    ):
        model_from_hf_config(cfg, model_id="x")
    assert model_from_hf_config(_put(raw(model_id), "num_hidden_layers", 1_666), model_id="x").num_layers == 1_666


def test_a_hybrid_pattern_longer_than_the_layer_limit_is_refused():
    cfg = raw("nemotron-3-super-120b-a12b")
    cfg["hybrid_override_pattern"] = "ME" * 1_667
    with pytest.raises(ValueError, match=r"hybrid_override_pattern.*more than 1,666 mixer blocks"):
        model_from_hf_config(cfg, model_id="x")


@pytest.mark.parametrize("first_k", [61, 62, 1_000])
def test_dense_layers_beyond_the_layer_count_are_refused(first_k):
    # DeepSeek-V3: 61 layers; first_k_dense_replace = 61 or more leaves no MoE layer, which the Balance page
    # cannot draw (it asked for 0 layers of loads: 'layers must be in 1..10,000', an uncaught exception)
    cfg = raw("deepseek-v3")
    cfg["first_k_dense_replace"] = first_k
    with pytest.raises(
        ValueError,
        match=rf"field 'first_k_dense_replace' must be <= 60 \(at least one of the 61 "
        rf"layers \(num_hidden_layers\) must have the MoE block\), got {first_k:,}",
    ):
        model_from_hf_config(cfg, model_id="x")
    cfg["first_k_dense_replace"] = 60  # the last layer alone is MoE
    assert model_from_hf_config(cfg, model_id="x").num_moe_layers == 1


@pytest.mark.parametrize(
    "model_id, changes, fields",
    [
        ("deepseek-v3", {"first_k_dense_replace": 3, "moe_layer_freq": 100}, "first_k_dense_replace, moe_layer_freq"),
        ("qwen3-30b-a3b", {"mlp_only_layers": list(range(48))}, "mlp_only_layers"),
        ("qwen3-30b-a3b", {"decoder_sparse_step": 49}, "decoder_sparse_step"),
        ("snowflake-arctic", {"moe_layer_frequency": 36}, "moe_layer_frequency"),
    ],
)
def test_a_moe_config_whose_layers_are_all_dense_is_refused(model_id, changes, fields):
    cfg = raw(model_id)
    cfg.update(changes)
    with pytest.raises(
        ValueError, match=rf"no layer has a MoE block.*fields [a-z_, ]*{fields}.*at least one MoE layer"
    ):
        model_from_hf_config(cfg, model_id="x")


def test_positions_are_bounded_by_the_integer_limit_alone():
    # contexts are arithmetic (never enumerated), so 10**12 positions are accepted; above it any integer
    # field is refused with the limit
    cfg = raw("mixtral-8x7b")
    cfg["max_position_embeddings"] = 10**12
    assert model_from_hf_config(cfg, model_id="x").max_position_embeddings == 10**12
    cfg["max_position_embeddings"] = 10**12 + 1
    with pytest.raises(
        ValueError, match=r"field 'max_position_embeddings' must be <= 1,000,000,000,000, got 1,000,000,000,001"
    ):
        model_from_hf_config(cfg, model_id="x")


@pytest.mark.parametrize(
    "model_id, key, value",
    [
        ("deepseek-v3", "hidden_size", [7168]),
        ("deepseek-v3", "v_head_dim", [128, 128]),
        ("deepseek-v3", "n_routed_experts", {"n": 256}),
        ("mixtral-8x7b", "num_local_experts", [8]),
        ("qwen3-30b-a3b", "num_experts_per_tok", [8]),
        ("llama-4-scout", "num_attention_heads", [40]),
        ("hunyuan-large", "num_experts", [[16]]),  # per-layer list of lists: was TypeError (unhashable)
        ("hunyuan-large", "moe_topk", [[1], [1]]),
        ("hunyuan-large", "num_shared_expert", [{"a": 1}]),
    ],
)
def test_lists_where_numbers_belong_name_the_field(model_id, key, value):
    cfg = _put(raw(model_id), key, value)
    with pytest.raises(ValueError, match=rf"field '{key}' (must be an integer|must list integers)"):
        model_from_hf_config(cfg, model_id="x")


def test_mla_without_v_head_dim_names_the_field_and_what_it_must_be():
    for model_id in ("deepseek-v3", "kimi-k2", "deepseek-v2-lite"):
        cfg = raw(model_id)
        del cfg["v_head_dim"]
        with pytest.raises(ValueError, match=r"missing field 'v_head_dim' \(an integer, 1 to 100,000\)"):
            model_from_hf_config(cfg, model_id="x")


@pytest.mark.parametrize(
    "change, match",
    [
        ({"num_bits": [4]}, r"field 'num_bits' must be 4 or 8, got \[4\]"),
        ({"num_bits": {"b": 4}}, r"field 'num_bits' must be 4 or 8"),
        ({"type": ["int"]}, r"field 'type' must be 'int' or 'float'"),
    ],
)
def test_compressed_tensors_with_wrong_types_name_the_field(change, match):
    from core.hf import quant_preset

    cfg = raw("kimi-k2.5")
    q = cfg["text_config"]["quantization_config"]
    next(iter(q["config_groups"].values()))["weights"].update(change)
    with pytest.raises(ValueError, match=match):
        quant_preset(cfg)
    # the model still imports: a quantisation the planner cannot read leaves the checkpoint's format unknown
    assert model_from_hf_config(cfg, model_id="x").checkpoint_precision is None


@pytest.mark.parametrize("ignore", [5, 1.5, "lm_head", {"a": 1}])
def test_an_ignore_list_that_is_not_a_list_names_the_field(ignore):
    from core.hf import quant_preset

    cfg = raw("kimi-k2.5")
    cfg["text_config"]["quantization_config"]["ignore"] = ignore
    with pytest.raises(ValueError, match=r"field 'ignore' must be a list of module names"):
        quant_preset(cfg)


def test_a_model_pydantic_refuses_is_reported_without_the_pydantic_boilerplate():
    cfg = raw("mixtral-8x7b")
    cfg["num_experts_per_tok"] = 9  # 8 experts: top-9 is impossible
    with pytest.raises(ValueError) as e:
        model_from_hf_config(cfg, model_id="x")
    msg = str(e.value)
    assert msg.startswith("config.json (mixtral): ") and "top_k (9) cannot exceed n_routed_experts (8)" in msg
    assert "pydantic.dev" not in msg and "validation error" not in msg
    cfg = raw("mixtral-8x7b")
    cfg["hidden_size"] = 10**9  # the ModelSpec bound, named as the config's field
    with pytest.raises(ValueError, match=r"field 'hidden_size' must be <= 1,000,000, got 1,000,000,000"):
        model_from_hf_config(cfg, model_id="x")


# ---- issue 37 (probe 3, CR-3 / CR-4): every integer bounded, list elements included; vision fields have real
# bounds; the whole model's parameter count is checked before any formula sees it


@pytest.mark.parametrize(
    "where, value, field",
    [
        (("eos_token_id",), [1, 10**13], "eos_token_id[1]"),  # a list element of a field the planner does not read
        (("rope_scaling",), {"factor": 10**13}, "rope_scaling.factor"),  # nested
        (("pad_token_id",), -(10**13), "pad_token_id"),
        (("architectures",), [["x", 2**63]], "architectures[0][1]"),
    ],
)
def test_every_integer_anywhere_in_a_config_is_bounded(where, value, field):
    cfg = raw("mixtral-8x7b")
    cfg[where[0]] = value
    with pytest.raises(ValueError) as e:
        model_from_hf_config(cfg, model_id="x")
    assert str(e.value).startswith(f"config.json (mixtral): field '{field}' must be between -1,000,000,000,000 and ")
    assert "1,000,000,000,000 (the bound on every integer in a config.json), got " in str(e.value)
    cfg[where[0]] = json.loads(json.dumps(value).replace(str(10**13), str(10**12)).replace(str(2**63), "7"))
    assert model_from_hf_config(cfg, model_id="x").total_params == 46_702_792_704  # at the bound: accepted


def _moonvit_merger(h: int, k0: int, k1: int, text_hidden: int) -> int:
    """MoonViT's patch merger by hand (its docstring): LayerNorm 2h, then MLP (h k0 k1 -> h k0 k1 -> text) with biases."""
    m = h * k0 * k1
    return 2 * h + m * m + m + m * text_hidden + text_hidden


@pytest.mark.parametrize(
    "kernel, message",
    [
        ([10**300, 10**300], "got a 301-digit integer"),  # the probe's 2.7 KB link: a 1,207-digit parameter count
        ([2**63, 2**63], "got 9,223,372,036,854,775,808"),  # accepted before: 7.6e81 parameters
        ([10**12, 10**12], "got 1,000,000,000,000"),  # within every integer's bound, not a vision tower's
        ([65, 2], "got 65"),
        ([0, 2], "got 0"),
    ],
)
def test_a_vision_merge_kernel_is_bounded_element_by_element(kernel, message):
    cfg = raw("kimi-k3")
    cfg["vision_config"]["merge_kernel_size"] = kernel
    with pytest.raises(ValueError) as e:
        model_from_hf_config(cfg, model_id="x")
    assert str(e.value) == (
        "config.json (kimi_k25 vision_config): field 'merge_kernel_size[0]' must be 1 to 64 (a vision tower's patch "
        f"merge), {message}"
    )


def test_the_largest_vision_merge_kernel_is_counted_exactly():
    base = model_from_hf_config(raw("kimi-k3"), model_id="x")
    cfg = raw("kimi-k3")
    cfg["vision_config"]["merge_kernel_size"] = [64, 64]
    big = model_from_hf_config(cfg, model_id="x")
    # Kimi-K3's tower: vt_hidden_size 1,024, text hidden 7,168; only the merger depends on the kernel
    assert big.vision_params - base.vision_params == _moonvit_merger(1024, 64, 64, 7168) - _moonvit_merger(
        1024, 2, 2, 7168
    )
    assert big.vision_params < 10**15


@pytest.mark.parametrize(
    "model_id, key, value, message",
    [
        ("qwen3.5-397b-a17b", "patch_size", 1025, "field 'patch_size' must be <= 1,024 (a vision tower's patch, in"),
        (
            "qwen3.5-397b-a17b",
            "hidden_size",
            10**7,
            "field 'hidden_size' must be <= 1,000,000 (a vision tower's width)",
        ),
        ("qwen3.5-397b-a17b", "depth", 1_667, "field 'depth' must be <= 1,666 (a vision tower's blocks)"),
        ("qwen3.5-397b-a17b", "deepstack_visual_indexes", [8, 27], "'deepstack_visual_indexes[1]' must be 0 to 26"),
        ("llama-4-scout", "image_size", 100_001, "field 'image_size' must be <= 100,000 (a vision tower's image side"),
        ("gemma-4-26b-a4b", "intermediate_size", 10**12, "field 'intermediate_size' must be <= 1,000,000"),
        ("kimi-k3", "init_pos_emb_height", 10**9, "field 'init_pos_emb_height' must be <= 1,000,000"),
    ],
)
def test_vision_fields_have_real_bounds(model_id, key, value, message):
    cfg = raw(model_id)
    cfg["vision_config"][key] = value
    with pytest.raises(ValueError, match=re.escape(message)):
        model_from_hf_config(cfg, model_id="x")


# DeepSeek-V3: one shared expert per MoE layer is 3 x 7,168 x 2,048 = 44,040,192 parameters; 58 MoE layers
SHARED_V3 = 3 * 7_168 * 2_048 * 58


@pytest.mark.parametrize(
    "model_id, path, component",
    [
        ("deepseek-v4-flash", ("n_shared_experts",), "the shared experts (1,000,000,000,000 of them, e.g. n_shared"),
        ("kimi-k3", ("text_config", "moe_intermediate_size"), "each of intermediate size 1,000,000,000,000, e.g. moe"),
        (
            "qwen3.8-2.4t-a95b",
            ("shared_expert_intermediate_size",),
            "each of intermediate size 1,000,000,000,000, e.g.",
        ),
    ],
)
def test_the_probes_configs_that_three_pages_could_not_draw_are_refused_at_import(model_id, path, component):
    """10**12 in a field whose own bound is 10**12 multiplied into 3.1e18-parameter GEMMs (core.perf.kernels takes 1e15)."""
    cfg = raw(model_id)
    (cfg[path[0]] if len(path) == 2 else cfg)[path[-1]] = 10**12
    with pytest.raises(ValueError) as e:
        model_from_hf_config(cfg, model_id="x")
    msg = str(e.value)
    assert component in msg and "allowed: at most 1,000,000,000,000,000 (10^15) parameters in all" in msg, msg


def test_the_parameter_bound_is_the_whole_models_count():
    base = model_from_hf_config(raw("deepseek-v3"), model_id="x")
    cfg = raw("deepseek-v3")
    cfg["n_shared_experts"] = 100_000  # 2.55e14 parameters of shared experts: accepted
    m = model_from_hf_config(cfg, model_id="x")
    assert m.total_params == base.total_params + (100_000 - 1) * SHARED_V3
    cfg["n_shared_experts"] = 400_000  # 1.02e15: refused
    with pytest.raises(ValueError, match=r"the model would have 1\.0\de\+15 parameters, 1\.02e\+15 of them in the "):
        model_from_hf_config(cfg, model_id="x")
