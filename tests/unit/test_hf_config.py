import copy
import json

import pytest

from core.catalog import CATALOG_DIR
from core.hf_config import SUPPORTED_MODEL_TYPES, model_from_hf_config, parse_config_text, vision_tower_params
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
    assert sliding.mixer.window == 128 and full.mixer.window is None
    assert all(isinstance(g.mixer, GQA) and g.mixer.head_dim == 64 and g.mixer.sinks for g in m.mixers)
    assert m.moe.expert_bias and m.moe.router_bias


def test_mistral_sliding_window_everywhere():
    m = model_from_hf_config(raw("mistral-7b"), model_id="m7")
    (group,) = m.mixers
    assert group.mixer.window == 4096 and len(group.layers) == 32


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
    from core.hf_config import decode_config, encode_config, model_from_config_text

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
    from core.hf_config import quant_preset

    assert quant_preset({"quantization": {"quant_algo": "NVFP4"}}) == {"weights": "fp8", "routed_experts": "nvfp4"}
    assert quant_preset({"quantization": {"quant_algo": "FP8"}}) == {"weights": "fp8", "routed_experts": "fp8"}
    assert quant_preset({"quant_method": "awq"})["routed_experts"] == "int4"
    with pytest.raises(ValueError, match="unrecognised quantisation"):
        quant_preset({"quantization": {"quant_algo": "magic"}})


def test_infinity_is_accepted_where_unread_but_never_in_a_read_field():
    from core.hf_config import model_from_config_text

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
    from core.hf_config import quant_preset
    from core.specs import Precision

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
    from core.specs import Precision, Workload

    cat = load_catalog()
    m, h100 = cat.model("gpt-oss-120b"), cat.gpu("h100-sxm")
    notes = [msg for _, msg in memory.scenario_notes(m, h100, "mxfp4", Workload())]
    assert any("published checkpoint stores its weights in bf16 and its routed experts in mxfp4" in n for n in notes)
    same = Precision(weights="bf16", routed_experts="mxfp4")
    assert not any("published checkpoint" in msg for _, msg in memory.scenario_notes(m, h100, same, Workload()))
    # DeepSeek-V3's checkpoint is block FP8 throughout: the default scenario matches it
    assert cat.model("deepseek-v3").checkpoint_precision == {"weights": "fp8", "routed_experts": "fp8"}


def test_deepseek_fp4_experts_are_mxfp4():
    # DeepSeek-V4's config.json says "expert_dtype": "fp4" beside a block-FP8 quantization_config; its
    # inference code stores routed experts as E2M1 with one ue8m0 (E8M0) scale per 32 weights, which is
    # OCP MXFP4. The checkpoint is FP8 + MXFP4 experts, not FP8 throughout (the Fit page's note said fp8).
    from core.catalog import load_catalog
    from core.hf_config import quant_preset

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
