"""Vision towers beside a language model: counted in the total (the checkpoint stores them), never active
for text. Llama 4's encoder is read in full; MoonViT (Kimi), the Qwen3-VL tower (Qwen3.5) and Gemma 4's
encoder are estimated from their configs as standard pre-norm ViTs (each docstring says what was assumed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core._util.checks import whole
from core.hf._common import MAX_HEADS, MAX_HIDDEN
from core.hf.fields import MAX_FIELD_INT, MAX_LAYERS, Fields

__all__ = [
    "VISION_BOUNDS",
    "VisionFields",
    "gemma4_vision_params",
    "moonvit_params",
    "qwen_vl_vision_params",
    "vision_tower_params",
]

# Real bounds for a vision tower's fields (issue 37): 10**12 per field let [10**300, 10**300] merge kernels and
# 10**54-parameter towers through. Each is far above any published tower (widths 1,152-1,408, 24-63 blocks,
# 14-16 pixel patches, 2 x 2 merges, 384-896 pixel images); the product of several stays finite, and the whole
# model's count is checked against core.hf.build.MAX_TOTAL_PARAMS. key -> (maximum, what it is)
VISION_BOUNDS: dict[str, tuple[int, str]] = {
    **dict.fromkeys(
        (
            "hidden_size",
            "vt_hidden_size",
            "intermediate_size",
            "vt_intermediate_size",
            "out_hidden_size",
            "projector_input_dim",
            "projector_output_dim",
            "vision_output_dim",
            "projection_intermediate_size",
            "head_dim",
        ),
        (MAX_HIDDEN, "a vision tower's width"),
    ),
    **dict.fromkeys(("num_hidden_layers", "vt_num_hidden_layers", "depth"), (MAX_LAYERS, "a vision tower's blocks")),
    "num_attention_heads": (MAX_HEADS, "a vision tower's heads"),
    "patch_size": (1_024, "a vision tower's patch, in pixels"),
    "image_size": (100_000, "a vision tower's image side, in pixels"),
    **dict.fromkeys(("num_channels", "in_channels"), (64, "a vision tower's input channels")),
    **dict.fromkeys(
        ("temporal_patch_size", "spatial_merge_size", "merge_kernel_size"), (64, "a vision tower's patch merge")
    ),
    **dict.fromkeys(
        ("init_pos_emb_height", "init_pos_emb_width", "init_pos_emb_time", "num_position_embeddings"),
        (1_000_000, "a vision tower's learned positions"),
    ),
}


class VisionFields(Fields):
    """Fields of a ``vision_config``: each integer bounded by :data:`VISION_BOUNDS` (list elements included),
    unless the reader gives its own maximum."""

    def int(self, *keys: str, default=..., minimum: int = 1, maximum: int | None = None, why: str = "") -> int:
        if maximum is None:
            maximum, why = min((VISION_BOUNDS.get(k, (MAX_FIELD_INT, "")) for k in keys), key=lambda b: b[0])
        return super().int(*keys, default=default, minimum=minimum, maximum=maximum, why=why)

    def int_list(self, key: str, default=None, *, minimum: int = -MAX_FIELD_INT, maximum=None, why: str = ""):
        if maximum is None:
            maximum, why = VISION_BOUNDS.get(key, (MAX_FIELD_INT, ""))
        return super().int_list(key, default, minimum=minimum, maximum=maximum, why=why)


def _text_hidden(v) -> None:
    whole("text_hidden (the language model's hidden size)", v, 1, 1_000_000)


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
    f = VisionFields(vc, "llama4 vision_config")
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
    f = VisionFields(vc, "kimi_k25 vision_config")
    h, inter, layers = f.int("vt_hidden_size"), f.int("vt_intermediate_size"), f.int("vt_num_hidden_layers")
    p = f.int("patch_size")
    per_layer = _vit_block_params(h, inter)
    pos = f.int("init_pos_emb_height", default=0, minimum=0) * f.int("init_pos_emb_width", default=0, minimum=0) * h
    pos += f.int("init_pos_emb_time", default=0, minimum=0) * h
    kernel = f.int_list("merge_kernel_size", minimum=1) or [2, 2]
    if len(kernel) != 2:
        raise ValueError(
            "config.json (kimi_k25 vision_config): field 'merge_kernel_size' must be two integers, 1 to "
            f"{VISION_BOUNDS['merge_kernel_size'][0]:,}, got {len(kernel):,} of them"
        )
    merged = h * kernel[0] * kernel[1]
    merger = 2 * h + merged * merged + merged + merged * text_hidden + text_hidden
    return layers * per_layer + (3 * p * p * h + h) + pos + 2 * h + merger


def qwen_vl_vision_params(vc: Mapping[str, Any]) -> int:
    """Qwen3-VL-style vision tower (Qwen3.5): ``depth`` pre-norm ViT blocks with biases (qkv and proj
    4h^2 + 4h, GELU MLP 2hf + f + h, two LayerNorms 4h), a Conv3d patch embedding
    (3 x temporal x p x p x h + h), learned position embeddings (num_position_embeddings x h) and a
    patch merger (LayerNorm, then (h m^2) -> (h m^2) -> out_hidden_size with biases; m = spatial merge),
    plus one more merger per deepstack index. Qwen3.5-397B's tower: 0.456B."""
    f = VisionFields(vc, "qwen3_5_moe vision_config")
    h, inter, depth = f.int("hidden_size"), f.int("intermediate_size"), f.int("depth")
    p, tp = f.int("patch_size"), f.int("temporal_patch_size", default=1)
    out = f.int("out_hidden_size")
    m2 = f.int("spatial_merge_size", default=2) ** 2
    per_layer = _vit_block_params(h, inter)
    merged = h * m2
    merger = 2 * h + merged * merged + merged + merged * out + out
    n_mergers = 1 + len(
        f.int_list("deepstack_visual_indexes", minimum=0, maximum=depth - 1, why=f"an index of the {depth:,} blocks")
    )
    return (
        depth * per_layer
        + 3 * tp * p * p * h
        + h
        + f.int("num_position_embeddings", default=0, minimum=0) * h
        + n_mergers * merger
    )


def gemma4_vision_params(vc: Mapping[str, Any], text_hidden: int) -> int:
    """Estimated Gemma 4 vision encoder: ``num_hidden_layers`` blocks of attention (q, k, v, o without
    biases, 4h^2, q/k norms) and a GeGLU MLP (3 h f) with four norms, a p x p x 3 patch projection and a
    linear projection to the text width. The position table is not counted (its layout was not read).
    26B-A4B: 0.549B (card: ~550M)."""
    _text_hidden(text_hidden)
    f = VisionFields(vc, "gemma4 vision_config")
    h, inter, layers = f.int("hidden_size"), f.int("intermediate_size"), f.int("num_hidden_layers")
    d, p = f.int("head_dim", default=h // max(f.int("num_attention_heads"), 1)), f.int("patch_size")
    per_layer = 4 * h * h + 3 * h * inter + 4 * h + 2 * d
    return layers * per_layer + 3 * p * p * h + h * text_hidden
