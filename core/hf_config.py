"""Hugging Face ``config.json`` -> :class:`core.specs.ModelSpec`.

One code path for the catalog (``catalogs/models/<id>/config.json`` as published) and for a config a
user pastes or uploads. Each supported family is read by a small function that names the config
fields it uses; a missing or mistyped field raises ``ValueError`` naming the field and the family,
an unsupported architecture names what is supported.

Supported ``model_type`` values (``SUPPORTED_MODEL_TYPES``): deepseek (DeepSeekMoE), deepseek_v2,
deepseek_v3, deepseek_v32, kimi_k2, kimi_k25 (+ MoonViT), glm_moe_dsa (DeepSeek-V3 / V3.2 layout), mixtral, qwen2_moe, qwen3_moe, llama4 /
llama4_text (interleaved MoE, shared expert, vision tower), gpt_oss, hunyuan (cross-layer attention),
arctic (parallel residual MLP), grok-1, and dense llama, mistral, qwen2, qwen3.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from core.specs import AttentionKind, ModelSpec, MoESpec, PublishedCounts

__all__ = [
    "MAX_CONFIG_BYTES",
    "decode_config",
    "encode_config",
    "imported_model_id",
    "model_from_config_text",
    "quant_preset",
    "SUPPORTED_MODEL_TYPES",
    "model_from_hf_config",
    "parse_config_text",
    "moonvit_params",
    "qwen_vl_vision_params",
    "gemma4_vision_params",
    "vision_tower_params",
]

MAX_CONFIG_BYTES = 1_000_000  # a real config.json is a few KB; refuse anything absurd
_MAX_DEPTH = 20


def parse_config_text(text: str | bytes, *, max_bytes: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """Parse the text of a config.json safely: size-limited, depth-limited, must be a JSON object."""
    if isinstance(text, bytes):
        if len(text) > max_bytes:
            raise ValueError(f"config.json is {len(text):,} bytes; the limit is {max_bytes:,} bytes")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"config.json is not UTF-8 text ({e.reason} at byte {e.start})") from None
    if len(text) > max_bytes:
        raise ValueError(f"config.json is {len(text):,} characters; the limit is {max_bytes:,}")
    if not text.strip():
        raise ValueError("config.json is empty")
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("config.json is nested too deeply") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"config.json is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    except ValueError as e:  # an integer of more than 4,300 digits, or NaN (_reject_constant)
        msg = str(e)
        if msg.startswith("config.json"):
            raise
        raise ValueError(f"config.json has a number that cannot be read ({msg.split(':')[0]})") from None
    if not isinstance(data, dict):
        raise ValueError(f"config.json must be a JSON object, got {type(data).__name__}")
    if _depth(data) > _MAX_DEPTH:
        raise ValueError(f"config.json is nested more than {_MAX_DEPTH} levels deep")
    return data


def _reject_constant(name: str) -> Any:
    # Infinity appears in published configs in fields the planner does not read (Nemotron-H's
    # time_step_limit [0.0, Infinity]); every number that is read must be finite (_Fields checks). NaN
    # never has a meaning in a config.
    if name in ("Infinity", "-Infinity"):
        return float(name.replace("Infinity", "inf"))
    raise ValueError(f"config.json contains {name}, which is not a valid number here")


def _depth(obj: Any, level: int = 0) -> int:
    if level > _MAX_DEPTH:
        return level
    if isinstance(obj, dict):
        return max((_depth(v, level + 1) for v in obj.values()), default=level + 1)
    if isinstance(obj, list):
        return max((_depth(v, level + 1) for v in obj), default=level + 1)
    return level


class _Fields:
    """Typed access to config fields with messages that name the field and the family."""

    def __init__(self, cfg: Mapping[str, Any], family: str):
        self.cfg = cfg
        self.family = family

    def _where(self, key: str) -> str:
        return f"config.json ({self.family}): field '{key}'"

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def int(self, *keys: str, default: Any = ..., minimum: int = 1, maximum: int | None = None) -> int:
        for key in keys:
            if key in self.cfg and self.cfg[key] is not None:
                v = self.cfg[key]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or (
                    isinstance(v, float) and (not math.isfinite(v) or v != int(v))
                ):
                    raise ValueError(f"{self._where(key)} must be an integer, got {v!r}")
                v = int(v)
                if v < minimum:
                    raise ValueError(f"{self._where(key)} must be >= {minimum}, got {v}")
                if v > 10**12:
                    raise ValueError(f"{self._where(key)} is implausibly large ({v})")
                if maximum is not None and v > maximum:
                    raise ValueError(f"{self._where(key)} must be <= {maximum:,}, got {v:,}")
                return v
        if default is ...:
            names = "' or '".join(keys)
            raise ValueError(f"config.json ({self.family}): missing field '{names}'")
        return default

    def bool(self, key: str, default: bool = False) -> bool:
        v = self.cfg.get(key, default)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise ValueError(f"{self._where(key)} must be true or false, got {v!r}")
        return v

    def str(self, key: str, default: str | None = None) -> str | None:
        v = self.cfg.get(key, default)
        if v is not None and not isinstance(v, str):
            raise ValueError(f"{self._where(key)} must be a string, got {v!r}")
        return v

    def int_list(self, key: str, default: list[int] | None = None) -> list[int]:
        v = self.cfg.get(key)
        if v is None:
            return list(default or [])
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            raise ValueError(f"{self._where(key)} must be a list of integers")
        return v

    def first_int(self, key: str, default: Any = ...) -> int:
        """Some families (Hunyuan) give per-layer lists for a value that is uniform in practice."""
        v = self.cfg.get(key)
        if isinstance(v, list):
            if not v:
                raise ValueError(f"{self._where(key)} is an empty list")
            if len(set(v)) > 1:
                raise ValueError(f"{self._where(key)} varies by layer ({sorted(set(v))}); not supported")
            return _Fields({key: v[0]}, self.family).int(key)
        return self.int(key, default=default)


def _attention_gqa(f: _Fields, hidden: int) -> dict[str, Any]:
    heads = f.int("num_attention_heads")
    kv_heads = f.int("num_key_value_heads", default=heads)
    if heads % kv_heads:
        raise ValueError(
            f"config.json ({f.family}): num_attention_heads ({heads}) is not a multiple of "
            f"num_key_value_heads ({kv_heads})"
        )
    if f.has("head_dim"):
        head_dim = f.int("head_dim")
    elif hidden % heads:
        raise ValueError(
            f"config.json ({f.family}): no 'head_dim' and hidden_size ({hidden}) is not divisible by "
            f"num_attention_heads ({heads})"
        )
    else:
        head_dim = hidden // heads
    return dict(
        attention=AttentionKind.MHA if kv_heads == heads else AttentionKind.GQA,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
    )


MAX_LAYERS = 10_000  # ModelSpec's bound; checked before any per-layer list is built


def _common(f: _Fields) -> dict[str, Any]:
    hidden = f.int("hidden_size")
    layers = f.int("num_hidden_layers")
    if layers > MAX_LAYERS:
        raise ValueError(f"{f._where('num_hidden_layers')} is {layers:,}; at most {MAX_LAYERS:,} layers are supported")
    return dict(
        hidden_size=hidden,
        num_layers=layers,
        vocab_size=f.int("vocab_size"),
        tie_word_embeddings=f.bool("tie_word_embeddings", False),
        max_position_embeddings=f.int("max_position_embeddings", default=4096),
    )


def _sliding(f: _Fields, num_layers: int) -> dict[str, Any]:
    window = f.int("sliding_window", default=None)
    if window is None or (f.has("use_sliding_window") and not f.bool("use_sliding_window")):
        return {}
    layer_types = f.cfg.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        n = sum(1 for t in layer_types if t == "sliding_attention")
    else:
        n = num_layers
    return dict(sliding_window=window, sliding_window_layers=n)


# ---------------------------------------------------------------------------------------- families


def _deepseek(f: _Fields) -> dict[str, Any]:
    """DeepSeekMoE (MHA), DeepSeek-V2/V3/V3.2 and Kimi K2 (MLA): first_k_dense_replace dense layers,
    then a MoE layer every moe_layer_freq layers; shared experts of moe_intermediate_size each;
    noaux_tc routing adds an e_score_correction_bias; MTP in num_nextn_predict_layers."""
    c = _common(f)
    hidden, layers = c["hidden_size"], c["num_layers"]
    if f.has("kv_lora_rank"):
        nope, rope, v = f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim"), f.int("v_head_dim")
        q_lora = f.int("q_lora_rank", default=None, minimum=0) or None
        heads = f.int("num_attention_heads")
        attn = dict(
            attention=AttentionKind.MLA,
            num_attention_heads=heads,
            num_kv_heads=heads,
            head_dim=nope + rope,
            v_head_dim=v,
            q_lora_rank=q_lora,
            kv_lora_rank=f.int("kv_lora_rank"),
            qk_nope_head_dim=nope,
            qk_rope_head_dim=rope,
        )
    else:
        attn = _attention_gqa(f, hidden)
    n_routed = f.int("n_routed_experts", default=None, minimum=0) or None
    first_k = f.int("first_k_dense_replace", default=0, minimum=0)
    freq = f.int("moe_layer_freq", default=1)
    if n_routed:
        dense = [i for i in range(layers) if not (i >= first_k and i % freq == 0)]
        expert_ffn = f.int("moe_intermediate_size")
        n_shared = f.int("n_shared_experts", default=0, minimum=0)
        moe = MoESpec(
            n_routed_experts=n_routed,
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=expert_ffn,
            n_shared_experts=n_shared,
            shared_intermediate_size=expert_ffn if n_shared else 0,
            router_bias=f.str("topk_method", "") == "noaux_tc",
            n_groups=f.int("n_group", default=1),
            topk_groups=f.int("topk_group", default=1),
        )
    else:
        dense, moe = list(range(layers)), None
    extra: dict[str, Any] = {}
    if f.has("index_n_heads") or f.family == "deepseek_v32":
        extra = dict(index_n_heads=f.int("index_n_heads"), index_head_dim=f.int("index_head_dim"),
                     sparse_topk_tokens=f.int("index_topk", default=0, minimum=0))
    return dict(
        c,
        **attn,
        **extra,
        attention_bias=f.bool("attention_bias", False),
        attention_output_bias=f.bool("attention_bias", False),
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("intermediate_size") if dense else 0,
        moe=moe,
        num_mtp_layers=f.int("num_nextn_predict_layers", default=0, minimum=0),
    )


def _mixtral(f: _Fields) -> dict[str, Any]:
    """Mixtral: every layer MoE, experts are full-width SwiGLU FFNs of intermediate_size."""
    c = _common(f)
    return dict(
        c,
        **_attention_gqa(f, c["hidden_size"]),
        **_sliding(f, c["num_layers"]),
        moe=MoESpec(
            n_routed_experts=f.int("num_local_experts"),
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("intermediate_size"),
        ),
    )


def _qwen_moe(f: _Fields) -> dict[str, Any]:
    """Qwen2-MoE / Qwen3-MoE: layer i is MoE unless in mlp_only_layers, every decoder_sparse_step;
    Qwen2-MoE adds one gated shared expert of shared_expert_intermediate_size; Qwen3 adds q/k norms."""
    c = _common(f)
    layers = c["num_layers"]
    step = f.int("decoder_sparse_step", default=1)
    mlp_only = set(f.int_list("mlp_only_layers"))
    n_exp = f.int("num_experts")
    dense = [i for i in range(layers) if i in mlp_only or (i + 1) % step != 0]
    shared = f.int("shared_expert_intermediate_size", default=0, minimum=0)
    is_qwen2 = f.family == "qwen2_moe"
    return dict(
        c,
        **_attention_gqa(f, c["hidden_size"]),
        **(_sliding(f, layers) if f.bool("use_sliding_window", False) else {}),
        attention_bias=f.bool("attention_bias", is_qwen2),
        qk_norm=not is_qwen2,
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("intermediate_size") if dense else 0,
        moe=MoESpec(
            n_routed_experts=n_exp,
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("moe_intermediate_size"),
            n_shared_experts=1 if shared else 0,
            shared_intermediate_size=shared,
            shared_expert_gate=bool(shared),
        ),
    )


def _text_hidden(v) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1_000_000:
        raise ValueError(f"text_hidden (the language model's hidden size) must be a whole number 1-1,000,000, got {v!r}")


def vision_tower_params(vc: Mapping[str, Any], text_hidden: int) -> int:
    """Parameters of Llama 4's vision encoder + pixel-shuffle adapter + projector.

    ViT: conv patch embedding (channels * patch^2 * d, no bias), class embedding (d), positional
    embedding ((patches + 1) * d), pre/post LayerNorms (2 * 2d), per layer q/k/v/o with biases
    (4 * (d^2 + d)), two LayerNorms (4d), MLP fc1/fc2 with biases (2 * d * f + f + d).
    Adapter after pixel shuffle (ratio r): fc1 (d / r^2 -> projector_input_dim), fc2
    (projector_input_dim -> projector_output_dim), then the multi-modal projector
    (vision_output_dim -> text hidden); no biases. Reproduces the 871,932,416 of Llama 4 Scout.
    """
    _text_hidden(text_hidden)
    f = _Fields(vc, "llama4 vision_config")
    d = f.int("hidden_size")
    layers = f.int("num_hidden_layers")
    ffn = f.int("intermediate_size")
    patch = f.int("patch_size")
    image = f.int("image_size")
    channels = f.int("num_channels", default=3)
    ratio = vc.get("pixel_shuffle_ratio", 0.5)
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0.01 <= ratio <= 1:
        raise ValueError("config.json (llama4 vision_config): field 'pixel_shuffle_ratio' must be in [0.01, 1]")
    proj_in = f.int("projector_input_dim")
    proj_out = f.int("projector_output_dim")
    out_dim = f.int("vision_output_dim")
    patches = (image // patch) ** 2
    embed = channels * patch * patch * d + d + (patches + 1) * d + 2 * 2 * d
    per_layer = 4 * (d * d + d) + 2 * 2 * d + (d * ffn + ffn) + (ffn * d + d)
    adapter = round(d / (ratio * ratio)) * proj_in + proj_in * proj_out
    projector = out_dim * text_hidden
    return embed + layers * per_layer + adapter + projector


def _llama4(f: _Fields) -> dict[str, Any]:
    """Llama 4: text_config holds the LM; MoE layers every interleave_moe_layer_step (the others use
    a dense MLP of intermediate_size_mlp); one shared expert of intermediate_size beside the routed
    ones; chunked local attention on 3 of every 4 layers; vision tower from vision_config."""
    root = f.cfg
    text = root.get("text_config", root)
    if not isinstance(text, Mapping):
        raise ValueError("config.json (llama4): field 'text_config' must be an object")
    t = _Fields(text, "llama4")
    c = _common(t)
    layers = c["num_layers"]
    if "moe_layers" in text and text["moe_layers"] is not None:
        moe_layers = set(t.int_list("moe_layers"))
    else:
        step = t.int("interleave_moe_layer_step", default=1)
        moe_layers = set(range(step - 1, layers, step))
    dense = [i for i in range(layers) if i not in moe_layers]
    expert_ffn = t.int("intermediate_size")
    chunk = t.int("attention_chunk_size", default=None)
    extra: dict[str, Any] = {}
    if chunk:
        nope = t.int_list("no_rope_layers")
        # no_rope_layers[i] == 0 marks a global (NoPE) layer; by default every 4th layer is global
        local = sum(nope) if nope else layers - layers // 4
        extra = dict(sliding_window=chunk, sliding_window_layers=local)
    vision = 0
    vc = root.get("vision_config")
    if isinstance(vc, Mapping) and vc:
        vision = vision_tower_params(vc, c["hidden_size"])
    return dict(
        c,
        **_attention_gqa(t, c["hidden_size"]),
        **extra,
        attention_bias=t.bool("attention_bias", False),
        attention_output_bias=t.bool("attention_bias", False),
        dense_layers=tuple(dense),
        dense_intermediate_size=t.int("intermediate_size_mlp") if dense else 0,
        moe=MoESpec(
            n_routed_experts=t.int("num_local_experts"),
            top_k=t.int("num_experts_per_tok"),
            expert_intermediate_size=expert_ffn,
            n_shared_experts=1,
            shared_intermediate_size=expert_ffn,
        ),
        vision_params=vision,
    )


def _vit_block_params(h: int, inter: int) -> int:
    """One pre-norm ViT block with biases: q, k, v, o (4h^2 + 4h), a two-matrix GELU MLP (2hf + f + h)
    and two LayerNorms with bias (4h)."""
    return 4 * h * h + 4 * h + 2 * h * inter + inter + h + 4 * h


def moonvit_params(vc: Mapping[str, Any], text_hidden: int) -> int:
    """Estimated parameters of Kimi-K2.5's MoonViT tower + patch-merger projector (the modelling code was
    not read; a standard pre-norm ViT is assumed): per layer qkv and o projections with biases
    (4h^2 + 4h), a GELU MLP with biases (2 h f + f + h) and two LayerNorms (4h); a 3 x p x p patch conv
    with bias; learned height x width (+ time) position embeddings; a final LayerNorm; the merger takes
    merge_kernel (2 x 2) patches, LayerNorm, then MLP (4h -> 4h -> text hidden) with biases. With
    h 1152, f 4304, 27 layers, p 14 this gives 0.471B (third-party extraction: ~0.45B)."""
    _text_hidden(text_hidden)
    f = _Fields(vc, "kimi_k25 vision_config")
    h, inter, layers = f.int("vt_hidden_size"), f.int("vt_intermediate_size"), f.int("vt_num_hidden_layers")
    p = f.int("patch_size")
    per_layer = _vit_block_params(h, inter)
    pos = f.int("init_pos_emb_height", default=0, minimum=0) * f.int("init_pos_emb_width", default=0, minimum=0) * h
    pos += f.int("init_pos_emb_time", default=0, minimum=0) * h
    kernel = f.int_list("merge_kernel_size") or [2, 2]
    if len(kernel) != 2 or min(kernel) < 1:
        raise ValueError("config.json (kimi_k25 vision_config): field 'merge_kernel_size' must be two positive integers")
    merged = h * kernel[0] * kernel[1]
    merger = 2 * h + merged * merged + merged + merged * text_hidden + text_hidden
    return layers * per_layer + (3 * p * p * h + h) + pos + 2 * h + merger


def _kimi_k25(f: _Fields) -> dict[str, Any]:
    """Kimi-K2.5: text_config is Kimi-K2 (DeepSeek-V3 layout, MLA); a MoonViT vision tower beside it."""
    text = f.cfg.get("text_config")
    if not isinstance(text, Mapping):
        raise ValueError("config.json (kimi_k25): field 'text_config' must be an object")
    out = _deepseek(_Fields(text, "kimi_k25"))
    vc = f.cfg.get("vision_config")
    if isinstance(vc, Mapping) and vc:
        out["vision_params"] = moonvit_params(vc, out["hidden_size"])
    return out


def qwen_vl_vision_params(vc: Mapping[str, Any]) -> int:
    """Qwen3-VL-style vision tower (Qwen3.5): ``depth`` pre-norm ViT blocks with biases (qkv and proj
    4h^2 + 4h, GELU MLP 2hf + f + h, two LayerNorms 4h), a Conv3d patch embedding
    (3 x temporal x p x p x h + h), learned position embeddings (num_position_embeddings x h) and a
    patch merger (LayerNorm, then (h m^2) -> (h m^2) -> out_hidden_size with biases; m = spatial merge),
    plus one more merger per deepstack index. Qwen3.5-397B's tower: 0.456B."""
    f = _Fields(vc, "qwen3_5_moe vision_config")
    h, inter, depth = f.int("hidden_size"), f.int("intermediate_size"), f.int("depth")
    p, tp = f.int("patch_size"), f.int("temporal_patch_size", default=1)
    out = f.int("out_hidden_size")
    m2 = f.int("spatial_merge_size", default=2) ** 2
    per_layer = _vit_block_params(h, inter)
    merged = h * m2
    merger = 2 * h + merged * merged + merged + merged * out + out
    n_mergers = 1 + len(f.int_list("deepstack_visual_indexes"))
    return (depth * per_layer + 3 * tp * p * p * h + h + f.int("num_position_embeddings", default=0, minimum=0) * h
            + n_mergers * merger)


def _qwen35(f: _Fields) -> dict[str, Any]:
    """Qwen3.5 (qwen3_5_moe): Qwen3-MoE experts with a gated shared expert on every layer; three of every
    four mixers are Gated DeltaNet (linear attention with a fixed fp32 state), the fourth is gated GQA
    (q_proj also emits an output gate) with q/k norms; one MTP layer; a vision tower beside the LM."""
    text = f.cfg.get("text_config", f.cfg)
    if not isinstance(text, Mapping):
        raise ValueError("config.json (qwen3_5_moe): field 'text_config' must be an object")
    t = _Fields(text, "qwen3_5_moe")
    out = _qwen_moe(t)
    out["tie_word_embeddings"] = f.bool("tie_word_embeddings", t.bool("tie_word_embeddings", False))
    layers = out["num_layers"]
    types = text.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != layers or any(x not in ("linear_attention", "full_attention") for x in types):
            raise ValueError("config.json (qwen3_5_moe): field 'layer_types' must list 'linear_attention' or "
                             f"'full_attention' for each of the {layers} layers")
        linear = [i for i, x in enumerate(types) if x == "linear_attention"]
    else:
        every = t.int("full_attention_interval", default=4)
        linear = [i for i in range(layers) if (i + 1) % every != 0]
    h = out["hidden_size"]
    nk, hk = t.int("linear_num_key_heads"), t.int("linear_key_head_dim")
    nv, hv = t.int("linear_num_value_heads"), t.int("linear_value_head_dim")
    kernel = t.int("linear_conv_kernel_dim", default=4)
    conv_ch = 2 * nk * hk + nv * hv
    gdn = (h * (2 * nk * hk + 2 * nv * hv)  # in_proj_qkvz
           + h * 2 * nv  # in_proj_ba
           + conv_ch * kernel  # depthwise conv, no bias
           + 2 * nv  # dt_bias, A_log
           + hv  # gated RMSNorm
           + nv * hv * h)  # out_proj
    state = nv * hk * hv * 4 + conv_ch * (kernel - 1) * 2  # fp32 recurrent state + bf16 conv window
    out.update(
        attn_output_gate=t.bool("attn_output_gate", True),
        linear_attention_layers=tuple(linear),
        linear_attention_params=gdn,
        linear_state_bytes=state,
        num_mtp_layers=t.int("mtp_num_hidden_layers", default=0, minimum=0),
    )
    vc = f.cfg.get("vision_config")
    if isinstance(vc, Mapping) and vc:
        out["vision_params"] = qwen_vl_vision_params(vc)
    return out


def gemma4_vision_params(vc: Mapping[str, Any], text_hidden: int) -> int:
    """Estimated Gemma 4 vision encoder: ``num_hidden_layers`` blocks of attention (q, k, v, o without
    biases, 4h^2, q/k norms) and a GeGLU MLP (3 h f) with four norms, a p x p x 3 patch projection and a
    linear projection to the text width. The position table is not counted (its layout was not read).
    26B-A4B: 0.549B (card: ~550M)."""
    _text_hidden(text_hidden)
    f = _Fields(vc, "gemma4 vision_config")
    h, inter, layers = f.int("hidden_size"), f.int("intermediate_size"), f.int("num_hidden_layers")
    d, p = f.int("head_dim", default=h // max(f.int("num_attention_heads"), 1)), f.int("patch_size")
    per_layer = 4 * h * h + 3 * h * inter + 4 * h + 2 * d
    return layers * per_layer + 3 * p * p * h + h * text_hidden


def _gemma4(f: _Fields) -> dict[str, Any]:
    """Gemma 4 (MoE variant): sliding-window GQA layers and global layers with their own KV heads and
    head size (K used as V, still cached twice); a dense GeGLU MLP beside the MoE on every layer; the
    router has a per-dimension and a per-expert scale; 7 norms per layer; tied embeddings."""
    text = f.cfg.get("text_config", f.cfg)
    if not isinstance(text, Mapping):
        raise ValueError("config.json (gemma4): field 'text_config' must be an object")
    t = _Fields(text, "gemma4")
    c = _common(t)
    c["tie_word_embeddings"] = f.bool("tie_word_embeddings", t.bool("tie_word_embeddings", True))
    layers = c["num_layers"]
    types = text.get("layer_types")
    if not (isinstance(types, list) and len(types) == layers
            and all(x in ("sliding_attention", "full_attention") for x in types)):
        raise ValueError(f"config.json (gemma4): field 'layer_types' must list 'sliding_attention' or "
                         f"'full_attention' for each of the {layers} layers")
    glob = [i for i, x in enumerate(types) if x == "full_attention"]
    if t.int("hidden_size_per_layer_input", default=0, minimum=0):
        raise ValueError("config.json (gemma4): per-layer input embeddings (hidden_size_per_layer_input > 0) "
                         "are not modelled; only the MoE Gemma 4 layout is")
    if not t.bool("enable_moe_block", False):
        raise ValueError("config.json (gemma4): only the MoE variant (enable_moe_block true) is modelled")
    attn = _attention_gqa(t, c["hidden_size"])
    out = dict(
        c,
        **attn,
        qk_norm=True,
        sliding_window=t.int("sliding_window"),
        sliding_window_layers=layers - len(glob),
        global_layers=tuple(glob),
        global_num_kv_heads=t.int("num_global_key_value_heads"),
        global_head_dim=t.int("global_head_dim"),
        global_k_eq_v=t.bool("attention_k_eq_v", False),
        dense_layers=(),
        parallel_dense_intermediate_size=t.int("intermediate_size"),
        moe=MoESpec(
            n_routed_experts=t.int("num_experts"),
            top_k=t.int("top_k_experts"),
            expert_intermediate_size=t.int("moe_intermediate_size"),
            router_bias=True,  # stands in for the per-expert scale (one value per expert)
        ),
        norms_per_layer=8,  # 7 RMSNorms + the router's per-dimension scale
    )
    vc = f.cfg.get("vision_config")
    if isinstance(vc, Mapping) and vc:
        out["vision_params"] = gemma4_vision_params(vc, c["hidden_size"])
    return out


# DeepSeek-V4 serving-format cache entries (SGLang DeepSeekV4SingleKVPool): 448 B FP8 no-RoPE part + 64 x 2 B
# BF16 RoPE part + 8 B ue8m0 scales = 584 B; FP4 indexer keys 68 B; compressor decode state in fp32
# (kv_state + score_state of [coff x ratio, coff x dim]): 65,536 + 16,384 B for CSA, 524,288 B for HCA.
_DSV4_ENTRY_BYTES = 448 + 64 * 2 + 8
_DSV4_INDEX_BYTES = 68


def _dsv4(f: _Fields) -> dict[str, Any]:
    """DeepSeek-V4 (Flash, Pro), module shapes from DeepSeek's reference inference/model.py: per layer a
    low-rank query (wq_a h -> q_lora, norm, wq_b -> heads x 512), one K=V head (wkv h -> 512, norm), a
    grouped low-rank output (wo_a heads x 512 x o_lora in o_groups groups, wo_b o_groups x o_lora -> h)
    and per-head sinks; layers with a compress ratio add a Compressor (ape [ratio, coff x 512], wkv and
    wgate h -> coff x 512, norm; coff 2 at ratio 4) and ratio-4 layers an Indexer (wq_b q_lora -> heads x
    dim, weights_proj h -> heads, its own compressor at the index dim). Every layer is MoE (the first
    num_hash_layers routed by token id through a vocab x top-k table); hyper-connections (hc_mult copies
    of the residual) add fp32 mixers per sub-layer and a head. The MTP block's compress_ratios entry is
    the last one."""
    c = _common(f)
    h, layers = c["hidden_size"], c["num_layers"]
    heads, hd = f.int("num_attention_heads"), f.int("head_dim")
    ql, ol, og = f.int("q_lora_rank"), f.int("o_lora_rank"), f.int("o_groups")
    ratios = f.int_list("compress_ratios")
    if len(ratios) < layers or any(r < 0 for r in ratios):
        raise ValueError(f"config.json (deepseek_v4): field 'compress_ratios' needs {layers} non-negative entries")
    ratios = ratios[:layers]
    ih, idim = f.int("index_n_heads"), f.int("index_head_dim")
    hc = f.int("hc_mult", default=1)

    def compressor(r: int, dim: int) -> int:
        coff = 2 if r == 4 else 1
        return r * coff * dim + 2 * h * coff * dim + dim

    base = h * ql + ql + ql * heads * hd + h * hd + hd + heads * hd * ol + og * ol * h + heads
    base_rep = h * ql + ql + h * hd + hd  # low-rank query input, the single K=V head: whole on every rank
    index = ql * ih * idim + h * ih + compressor(4, idim)
    attn, rep = [], []
    for r in ratios:
        extra = (compressor(r, hd) if r else 0) + (index if r == 4 else 0)
        attn.append(base + extra)
        rep.append(base_rep + extra)
    n_routed = f.int("n_routed_experts")
    top_k = f.int("num_experts_per_tok")
    mi = f.int("moe_intermediate_size")
    n_shared = f.int("n_shared_experts", default=0, minimum=0)
    return dict(
        c,
        attention=AttentionKind.GQA,
        num_attention_heads=heads,
        num_kv_heads=1,
        head_dim=hd,
        q_lora_rank=ql,
        sliding_window=f.int("sliding_window"),
        sliding_window_layers=layers,
        attention_params_by_layer=tuple(attn),
        attention_replicated_by_layer=tuple(rep),
        layer_extra_params=2 * ((2 + hc) * hc * hc * h + (2 + hc) * hc + 3),
        model_extra_params=hc * hc * h + hc + 1,
        inactive_extra_params=f.int("num_hash_layers", default=0, minimum=0) * c["vocab_size"] * top_k,
        compress_ratios=tuple(ratios),
        compressed_entry_bytes=_DSV4_ENTRY_BYTES,
        compressed_index_bytes=_DSV4_INDEX_BYTES,
        # fp32 kv_state + score_state of [coff x ratio, coff x dim]: the attention compressor and, on CSA
        # layers, the indexer's own (coff 2 at ratio 4; coff 1 at the HCA ratio)
        compress_state_bytes_csa=2 * (2 * 4) * (2 * hd) * 4 + 2 * (2 * 4) * (2 * idim) * 4,
        compress_state_bytes_hca=2 * max(ratios) * hd * 4,
        compressed_index_flops=2 * ih * idim,
        sparse_topk_tokens=f.int("index_topk"),
        dense_layers=(),
        moe=MoESpec(
            n_routed_experts=n_routed, top_k=top_k, expert_intermediate_size=mi, n_shared_experts=n_shared,
            shared_intermediate_size=mi if n_shared else 0, router_bias=True,
        ),
        num_mtp_layers=f.int("num_nextn_predict_layers", default=0, minimum=0),
    )


def _kimi_k3(f: _Fields) -> dict[str, Any]:
    """Kimi-K3 (kimi_k3 / kimi_linear): KDA linear-attention layers beside gated MLA layers (both listed,
    1-based, in linear_attn_config), a dense first layer, latent MoE on the others (routed experts at
    routed_expert_hidden_size between a down and an up projection; shared experts at full width), AttnRes
    vectors per layer (assumed 4 x hidden), a MoonViT-style vision tower (estimated)."""
    text = f.cfg.get("text_config", f.cfg)
    if not isinstance(text, Mapping):
        raise ValueError("config.json (kimi_k3): field 'text_config' must be an object")
    t = _Fields(text, "kimi_k3")
    out = _deepseek(t)  # MLA geometry, dense first layer, embeddings
    h, layers = out["hidden_size"], out["num_layers"]
    la = text.get("linear_attn_config")
    if not isinstance(la, Mapping):
        raise ValueError("config.json (kimi_k3): field 'linear_attn_config' must be an object")
    lf = _Fields(la, "kimi_k3 linear_attn_config")
    kda = [i - 1 for i in lf.int_list("kda_layers")]
    full = [i - 1 for i in lf.int_list("full_attn_layers")]
    if sorted(kda + full) != list(range(layers)):
        raise ValueError(f"config.json (kimi_k3): kda_layers and full_attn_layers must cover layers 1-{layers} once")
    nh, hd, kern = lf.int("num_heads"), lf.int("head_dim"), lf.int("short_conv_kernel_size", default=4)
    width = nh * hd
    kda_p = (4 * h * width  # q, k, v, g projections
             + 3 * width * kern  # depthwise short convolutions on q, k, v
             + h * hd + hd * width  # f_a, f_b (low-rank forget gate)
             + width + nh  # dt_bias, A_log
             + h * nh  # b_proj
             + hd  # o_norm
             + width * h)  # o_proj
    state = nh * hd * hd * 4 + 3 * width * (kern - 1) * 2
    probe = ModelSpec(id="probe", name="probe", architecture="kimi_k3", **{k: v for k, v in out.items() if k != "moe"},
                      moe=out["moe"])
    from core.params import attention_params_per_layer  # noqa: PLC0415 (local: params imports specs only)

    heads, v = out["num_attention_heads"], out["v_head_dim"]
    mla_p = attention_params_per_layer(probe) + h * heads * v  # + g_proj (output gate)
    ql, kvl, rope = out["q_lora_rank"] or 0, out["kv_lora_rank"], out["qk_rope_head_dim"]
    mla_rep = h * ql + ql + h * (kvl + rope) + kvl
    kda_set = set(kda)
    attn = tuple(kda_p if i in kda_set else mla_p for i in range(layers))
    rep = tuple((h * hd + h * nh + hd) if i in kda_set else mla_rep for i in range(layers))
    lat = t.int("routed_expert_hidden_size", default=0, minimum=0)
    n_shared = t.int("num_shared_experts", default=0, minimum=0)
    mi = t.int("moe_intermediate_size")
    first_k = t.int("first_k_dense_replace", default=0, minimum=0, maximum=layers)
    out.update(
        dense_layers=tuple(range(first_k)),
        dense_intermediate_size=t.int("intermediate_size") if first_k else 0,
        linear_attention_layers=tuple(kda),
        linear_attention_params=kda_p,
        linear_state_bytes=state,
        attention_params_by_layer=attn,
        attention_replicated_by_layer=rep,
        layer_extra_params=4 * h,
        moe=MoESpec(
            n_routed_experts=t.int("num_experts"), top_k=t.int("num_experts_per_token"), expert_intermediate_size=mi,
            n_shared_experts=n_shared, shared_intermediate_size=mi if n_shared else 0,
            router_bias=t.str("topk_method", "") == "noaux_tc", latent_size=lat,
        ),
        num_mtp_layers=t.int("num_nextn_predict_layers", default=0, minimum=0),
    )
    vc = f.cfg.get("vision_config")
    if isinstance(vc, Mapping) and vc:
        out["vision_params"] = moonvit_params(vc, h)
    return out


def _nemotron_h(f: _Fields) -> dict[str, Any]:
    """Nemotron-H / Nemotron-3 (nemotron_h): hybrid_override_pattern lists blocks, each a norm and ONE mixer:
    M = Mamba-2, * = GQA attention, E = (latent) MoE, - = dense MLP. Here a layer is a mixer (M or *)
    with the E / - block that follows it, if any (layers without one are FFN-free). Experts and MLPs are
    2-matrix relu2; a latent MoE routes at moe_latent_size between down and up projections and keeps its
    shared expert at full width."""
    c = _common(f)
    h = c["hidden_size"]
    pattern = f.str("hybrid_override_pattern", "")
    if not pattern or any(ch not in "M*E-" for ch in pattern):
        raise ValueError("config.json (nemotron_h): field 'hybrid_override_pattern' must be a string of M, *, E and -")
    if pattern[0] not in "M*":
        raise ValueError("config.json (nemotron_h): the pattern must start with a mixer block (M or *)")
    kinds: list[tuple[str, str]] = []  # (mixer, ffn) per layer
    for ch in pattern:
        if ch in "M*":
            kinds.append((ch, ""))
        elif kinds[-1][1]:
            raise ValueError("config.json (nemotron_h): two FFN blocks in a row are not modelled")
        else:
            kinds[-1] = (kinds[-1][0], ch)
    layers = len(kinds)
    heads, hd = f.int("mamba_num_heads"), f.int("mamba_head_dim")
    groups, d_state, kern = f.int("n_groups"), f.int("ssm_state_size"), f.int("conv_kernel", default=4)
    d_inner = heads * hd
    conv_ch = d_inner + 2 * groups * d_state
    mamba = (h * (2 * d_inner + 2 * groups * d_state + heads)  # in_proj: z, x, B, C, dt
             + conv_ch * kern + (conv_ch if f.bool("use_conv_bias", True) else 0)
             + 3 * heads  # dt_bias, A_log, D
             + d_inner  # gated RMSNorm
             + d_inner * h)  # out_proj
    state = heads * hd * d_state * 4 + conv_ch * (kern - 1) * 2
    attn = _attention_gqa(f, h)
    n_shared = f.int("n_shared_experts", default=0, minimum=0)
    dense = [i for i, (_, ffn) in enumerate(kinds) if ffn == "-"]
    return dict(
        c,
        num_layers=layers,
        **attn,
        ffn_matrices=2,
        norms_per_layer=2,
        linear_attention_layers=tuple(i for i, (mx, _) in enumerate(kinds) if mx == "M"),
        linear_attention_params=mamba,
        linear_state_bytes=state,
        ffn_free_layers=tuple(i for i, (_, ffn) in enumerate(kinds) if not ffn),
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("intermediate_size") if dense else 0,
        moe=MoESpec(
            n_routed_experts=f.int("n_routed_experts"), top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("moe_intermediate_size"), n_shared_experts=n_shared,
            shared_intermediate_size=f.int("moe_shared_expert_intermediate_size") if n_shared else 0,
            router_bias=True, latent_size=f.int("moe_latent_size", default=0, minimum=0),
        ) if "E" in pattern else None,
        num_mtp_layers=f.int("num_nextn_predict_layers", default=0, minimum=0),
    )


def _minimax_m3(f: _Fields) -> dict[str, Any]:
    """MiniMax-M3: GQA on every layer with per-head q/k norms; MSA block-sparse selection on the layers of
    sparse_attention_config.sparse_attention_freq, each with an index query (heads x dim) and one bf16 index
    key per token; moe_layer_freq marks the MoE layers (the others are dense of dense_intermediate_size);
    routed + shared experts with a biased sigmoid router. The MTP modules are not modelled."""
    c = _common(f)
    layers = c["num_layers"]
    freq = f.cfg.get("moe_layer_freq")
    if isinstance(freq, list):
        if len(freq) != layers or any(x not in (0, 1) for x in freq):
            raise ValueError(f"config.json (minimax_m3): field 'moe_layer_freq' must be {layers} zeros and ones")
        dense = [i for i, x in enumerate(freq) if x == 0]
    else:
        dense = list(range(f.int("first_k_dense_replace", default=0, minimum=0, maximum=layers)))
    sac = f.cfg.get("sparse_attention_config") or {}
    if not isinstance(sac, Mapping):
        raise ValueError("config.json (minimax_m3): field 'sparse_attention_config' must be an object")
    extra: dict[str, Any] = {}
    if sac.get("use_sparse_attention"):
        sf = _Fields(sac, "minimax_m3 sparse_attention_config")
        marks = sf.int_list("sparse_attention_freq")
        if len(marks) != layers:
            raise ValueError(f"config.json (minimax_m3): sparse_attention_freq must have {layers} entries")
        idim = sf.int("sparse_index_dim")
        extra = dict(index_n_heads=sf.int("sparse_num_index_heads"), index_head_dim=idim,
                     index_layers=tuple(i for i, x in enumerate(marks) if x), index_key_bytes=2 * idim,
                     index_weights_proj=False,
                     sparse_topk_tokens=(sf.int("sparse_topk_blocks") + sf.int("sparse_local_block", default=0, minimum=0)
                                         + sf.int("sparse_init_block", default=0, minimum=0)) * sf.int("sparse_block_size"))
    n_shared = f.int("n_shared_experts", default=0, minimum=0)
    return dict(
        c,
        **_attention_gqa(f, c["hidden_size"]),
        **extra,
        qk_norm=f.bool("use_qk_norm", True),
        attn_output_gate=f.bool("attention_output_gate", False),
        dense_layers=tuple(dense),
        dense_intermediate_size=f.int("dense_intermediate_size") if dense else 0,
        moe=MoESpec(
            n_routed_experts=f.int("num_local_experts"),
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("moe_intermediate_size"),
            n_shared_experts=n_shared,
            shared_intermediate_size=f.int("shared_intermediate_size") if n_shared else 0,
            router_bias=f.bool("use_routing_bias", False),
        ),
    )


def _gpt_oss(f: _Fields) -> dict[str, Any]:
    """gpt-oss: every layer MoE with biased experts (gate_up 2f + down h biases) and a biased router,
    q/k/v/o biases, a learned sink per head, alternating 128-token sliding-window layers."""
    c = _common(f)
    return dict(
        c,
        **_attention_gqa(f, c["hidden_size"]),
        **_sliding(f, c["num_layers"]),
        attention_bias=f.bool("attention_bias", True),
        attention_output_bias=f.bool("attention_bias", True),
        attention_sinks=True,
        moe=MoESpec(
            n_routed_experts=f.int("num_local_experts"),
            top_k=f.int("num_experts_per_tok", "experts_per_token"),
            expert_intermediate_size=f.int("intermediate_size"),
            router_bias=True,
            expert_bias=True,
        ),
    )


def _hunyuan(f: _Fields) -> dict[str, Any]:
    """Hunyuan-Large: every layer MoE (num_experts routed, moe_topk, num_shared_expert shared, all of
    intermediate_size), q/k norms, cross-layer attention (K/V every cla_share_factor-th layer)."""
    c = _common(f)
    attn = _attention_gqa(f, c["hidden_size"])
    if f.has("attention_head_dim"):
        attn["head_dim"] = f.int("attention_head_dim")
    ffn = f.first_int("moe_intermediate_size", default=None) or f.int("intermediate_size")
    # the shared expert exists only with use_mixed_mlp_moe (transformers' default: false)
    n_shared = f.first_int("num_shared_expert", default=0) if f.bool("use_mixed_mlp_moe", False) else 0
    return dict(
        c,
        **attn,
        attention_bias=f.bool("attention_bias", False),
        attention_output_bias=f.bool("attention_bias", False),
        qk_norm=f.bool("use_qk_norm", False),
        cla_share_factor=f.int("cla_share_factor", default=1) if f.bool("use_cla", False) else 1,
        moe=MoESpec(
            n_routed_experts=f.first_int("num_experts"),
            top_k=f.first_int("moe_topk"),
            expert_intermediate_size=ffn,
            n_shared_experts=n_shared,
            shared_intermediate_size=ffn if n_shared else 0,
        ),
    )


def _arctic(f: _Fields) -> dict[str, Any]:
    """Snowflake Arctic: MoE every moe_layer_frequency layers; with parallel_attn_mlp_res a dense
    residual MLP of width hidden_size (and its own norm) runs beside the MoE on those layers."""
    c = _common(f)
    layers = c["num_layers"]
    freq = f.int("moe_layer_frequency", default=2)
    moe_layers = {i for i in range(layers) if (i + 1) % freq == 0}
    dense = [i for i in range(layers) if i not in moe_layers]
    parallel = f.bool("parallel_attn_mlp_res", False)
    ffn = f.int("intermediate_size")
    return dict(
        c,
        **_attention_gqa(f, c["hidden_size"]),
        dense_layers=tuple(dense),
        dense_intermediate_size=ffn if dense else 0,
        parallel_dense_intermediate_size=c["hidden_size"] if parallel else 0,
        norms_per_layer=3 if parallel else 2,
        moe=MoESpec(
            n_routed_experts=f.int("num_local_experts"),
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=ffn,
        ),
    )


def _grok(f: _Fields) -> dict[str, Any]:
    """Grok-1: every layer MoE (8 GeGLU experts, 3 matrices each), 4 RMSNorms per layer, tied output."""
    c = _common(f)
    c["tie_word_embeddings"] = f.bool("tie_word_embeddings", True)
    return dict(
        c,
        **_attention_gqa(f, c["hidden_size"]),
        norms_per_layer=4,
        moe=MoESpec(
            n_routed_experts=f.int("num_local_experts", "num_experts"),
            top_k=f.int("num_experts_per_tok"),
            expert_intermediate_size=f.int("intermediate_size", "moe_intermediate_size"),
        ),
    )


def _dense(f: _Fields) -> dict[str, Any]:
    """Dense decoders (Llama, Mistral, Qwen2, Qwen3): SwiGLU FFN on every layer."""
    c = _common(f)
    is_qwen2 = f.family == "qwen2"
    bias = f.bool("attention_bias", is_qwen2)
    return dict(
        c,
        **_attention_gqa(f, c["hidden_size"]),
        **(_sliding(f, c["num_layers"]) if f.family == "mistral" or f.bool("use_sliding_window", False) else {}),
        attention_bias=bias,
        attention_output_bias=bias and not is_qwen2,
        qk_norm=f.family == "qwen3",
        dense_layers=tuple(range(c["num_layers"])),
        dense_intermediate_size=f.int("intermediate_size"),
        moe=None,
    )


_READERS: dict[str, Callable[[_Fields], dict[str, Any]]] = {
    "deepseek": _deepseek,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "deepseek_v32": _deepseek,
    "kimi_k2": _deepseek,
    "kimi_k25": _kimi_k25,
    "glm_moe_dsa": _deepseek,
    "qwen3_5_moe": _qwen35,
    "qwen3_5_moe_text": _qwen35,
    "gemma4": _gemma4,
    "minimax_m3": _minimax_m3,
    "deepseek_v4": _dsv4,
    "kimi_k3": _kimi_k3,
    "nemotron_h": _nemotron_h,
    "kimi_linear": _kimi_k3,
    "gemma4_text": _gemma4,
    "mixtral": _mixtral,
    "qwen2_moe": _qwen_moe,
    "qwen3_moe": _qwen_moe,
    "llama4": _llama4,
    "llama4_text": _llama4,
    "gpt_oss": _gpt_oss,
    "hunyuan": _hunyuan,
    "arctic": _arctic,
    "grok-1": _grok,
    "llama": _dense,
    "mistral": _dense,
    "qwen2": _dense,
    "qwen3": _dense,
}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(_READERS)

# architectures[] names that identify a family when model_type is absent or unusual
_ARCH_TO_TYPE = {
    "DeepseekForCausalLM": "deepseek",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV32ForCausalLM": "deepseek_v32",
    "KimiK25ForConditionalGeneration": "kimi_k25",
    "GlmMoeDsaForCausalLM": "glm_moe_dsa",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
    "Gemma4ForConditionalGeneration": "gemma4",
    "MiniMaxM3ForCausalLM": "minimax_m3",
    "DeepseekV4ForCausalLM": "deepseek_v4",
    "KimiK3ForConditionalGeneration": "kimi_k3",
    "NemotronHForCausalLM": "nemotron_h",
    "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4_text",
    "GptOssForCausalLM": "gpt_oss",
    "HunYuanForCausalLM": "hunyuan",
    "HunYuanMoEV1ForCausalLM": "hunyuan",
    "ArcticForCausalLM": "arctic",
    "Grok1ModelForCausalLM": "grok-1",
    "Grok1ForCausalLM": "grok-1",
    "GrokForCausalLM": "grok-1",
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
}
_TYPE_ALIASES = {"grok": "grok-1", "grok1": "grok-1", "hunyuan_v1_moe": "hunyuan"}


def _family(cfg: Mapping[str, Any]) -> str:
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ValueError(f"config.json: field 'model_type' must be a string, got {model_type!r}")
    if model_type:
        model_type = _TYPE_ALIASES.get(model_type, model_type)
        if model_type in _READERS:
            return model_type
    archs = cfg.get("architectures") or []
    if isinstance(archs, list):
        for a in archs:
            if isinstance(a, str) and a in _ARCH_TO_TYPE:
                return _ARCH_TO_TYPE[a]
    shown = model_type or (archs[0] if isinstance(archs, list) and archs else None)
    if not shown:
        raise ValueError(
            "config.json has neither 'model_type' nor 'architectures'; supported model types: "
            + ", ".join(SUPPORTED_MODEL_TYPES)
        )
    raise ValueError(
        f"config.json: architecture {shown!r} is not supported; supported model types: "
        + ", ".join(SUPPORTED_MODEL_TYPES)
    )


def model_from_hf_config(
    config: Mapping[str, Any],
    *,
    model_id: str,
    name: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> ModelSpec:
    """Build a ModelSpec from a parsed config.json.

    ``meta`` carries what config.json does not know (a catalog ``model.yaml``: display name, family,
    tokenizer family, published counts, sources). Raises ``ValueError`` with a message that names the
    missing or bad field, or the unsupported architecture.
    """
    if not isinstance(config, Mapping):
        raise ValueError("config.json must be a JSON object")
    family = _family(config)
    fields = _READERS[family](_Fields(config, family))
    meta = dict(meta or {})
    published = meta.get("published") or {}
    if not isinstance(published, Mapping):
        raise ValueError("published must be a mapping")
    spec = dict(
        fields,
        id=model_id,
        name=name or meta.get("name") or model_id,
        family=str(meta.get("family") or family),
        architecture=family,
        hf_id=str(meta.get("hf_id") or config.get("_name_or_path") or ""),
        release_date=str(meta.get("release_date") or ""),
        tokenizer_family=str(meta.get("tokenizer_family") or ""),
        published=PublishedCounts(**published),
        source=str(meta.get("config_source") or ""),
        notes=str(meta.get("notes") or ""),
    )
    return ModelSpec(**spec)


# ------------------------------------------------------------------------------ imported configs

import base64 as _base64  # noqa: E402
import hashlib as _hashlib  # noqa: E402
import zlib as _zlib  # noqa: E402

MAX_URL_CONFIG_CHARS = 16_000


def imported_model_id(text: str) -> str:
    """A stable id for an imported config: ``custom-`` and the first 10 hex digits of its SHA-256."""
    if not isinstance(text, str):
        raise ValueError(f"the config must be text, not {type(text).__name__}")
    return "custom-" + _hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def model_from_config_text(text: str | bytes, *, name: str | None = None) -> tuple[ModelSpec, str]:
    """Parse a pasted or uploaded config.json (size- and depth-limited) into a ModelSpec with a stable
    ``custom-...`` id. Returns the spec and the normalised JSON text (what the URL and the store carry)."""
    data = parse_config_text(text)
    normalised = json.dumps(data, sort_keys=True, separators=(",", ":"))
    mid = imported_model_id(normalised)
    label = name or str(data.get("_name_or_path") or "").split("/")[-1] or mid
    label = label[:80] or mid
    return model_from_hf_config(data, model_id=mid, name=f"{label} (imported)", meta={"config_source": "imported config.json"}), normalised


def encode_config(text: str) -> str:
    """A compact URL-safe form of a config.json (zlib + base64url) so a URL can carry an imported model."""
    if not isinstance(text, str):
        raise ValueError(f"the config must be text, not {type(text).__name__}")
    if len(text) > MAX_CONFIG_BYTES:
        raise ValueError(f"this config is too large to carry in a URL ({len(text):,} characters; limit "
                         f"{MAX_CONFIG_BYTES:,} before compression); save the scenario instead")
    token = _base64.urlsafe_b64encode(_zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")
    if len(token) > MAX_URL_CONFIG_CHARS:
        raise ValueError(f"this config is too large to carry in a URL ({len(token):,} characters; limit "
                         f"{MAX_URL_CONFIG_CHARS:,}); save the scenario instead")
    return token


def decode_config(token: str) -> str:
    """Inverse of :func:`encode_config`, refusing anything malformed or that inflates beyond the size limit."""
    if not isinstance(token, str) or not token or len(token) > MAX_URL_CONFIG_CHARS:
        raise ValueError("the URL's imported config is missing or too long")
    try:
        raw = _base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        d = _zlib.decompressobj()
        out = d.decompress(raw, MAX_CONFIG_BYTES + 1)
        if len(out) > MAX_CONFIG_BYTES or d.unconsumed_tail:
            raise ValueError("the URL's imported config inflates beyond the size limit")
        if not out or not d.eof:
            raise ValueError("truncated")
        return out.decode("utf-8")
    except (ValueError, _zlib.error, UnicodeDecodeError) as e:
        if "size limit" in str(e):
            raise
        raise ValueError("the URL's imported config is not a valid encoded config.json") from None


def _compressed_tensors_preset(q: Mapping[str, Any]) -> dict[str, str]:
    """compressed-tensors (Kimi-K2.5's INT4 experts): the quantised group's bits and type; modules on the
    ignore list (attention, shared experts, dense MLPs, lm_head) stay bf16."""
    groups = q.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError("compressed-tensors config without config_groups")
    w = next(iter(groups.values())).get("weights") if isinstance(next(iter(groups.values())), Mapping) else None
    if not isinstance(w, Mapping):
        raise ValueError("compressed-tensors config_groups entry without 'weights'")
    bits, kind = w.get("num_bits"), str(w.get("type") or "")
    table = {(4, "int"): "int4", (8, "int"): "int8", (8, "float"): "fp8", (4, "float"): "mxfp4"}
    dtype = table.get((bits, kind))
    if dtype is None:
        raise ValueError(f"compressed-tensors weights of {bits} bits {kind!r} are not modelled; known: 4/8-bit int, 8-bit float")
    ignore = " ".join(str(x) for x in q.get("ignore") or [])
    rest = "bf16" if ("self_attn" in ignore or "attn" in ignore) else dtype
    return {"weights": rest, "routed_experts": dtype}


def quant_preset(quant_config: Mapping[str, Any]) -> dict[str, str]:
    """Suggested precision from an ``hf_quant_config.json`` (NVIDIA ModelOpt) or a config's
    ``quantization_config``: {"weights": ..., "routed_experts": ...} with planner dtype names."""
    if not isinstance(quant_config, Mapping):
        raise ValueError("the quantisation config must be a JSON object")
    q = quant_config.get("quantization", quant_config)
    if not isinstance(q, Mapping):
        raise ValueError("'quantization' must be an object")
    if "quantization_config" in q and isinstance(q["quantization_config"], Mapping):  # a whole config.json
        q = q["quantization_config"]
    elif isinstance(q.get("text_config"), Mapping) and isinstance(q["text_config"].get("quantization_config"), Mapping):
        q = q["text_config"]["quantization_config"]
    algo = str(q.get("quant_algo") or q.get("quant_method") or "").lower()
    fmt = str(q.get("fmt") or "").lower()
    if algo == "compressed-tensors":
        return _compressed_tensors_preset(q)
    table = {"nvfp4": "nvfp4", "fp4": "nvfp4", "mxfp4": "mxfp4", "fp8": "fp8", "w4a16_awq": "int4", "awq": "int4",
             "gptq": "int4", "w8a8": "int8", "int8": "int8", "mixed_precision": "fp8"}
    for key, dtype in table.items():
        if key in algo or (key == "fp8" and fmt.startswith("e4m3")):
            if algo == "mixed_precision":
                return {"weights": "fp8", "routed_experts": "nvfp4"}
            return {"weights": "fp8" if dtype in ("nvfp4", "mxfp4") else dtype, "routed_experts": dtype}
    raise ValueError(f"unrecognised quantisation {algo or '(none)'!r}; known: nvfp4, mxfp4, fp8, awq/gptq int4, int8")
