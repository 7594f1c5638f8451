"""Fields most families share: sizes, the GQA head geometry, sliding windows, the MoE block."""

from __future__ import annotations

from typing import Any

from core.hf.fields import LAYERS_WHY, MAX_LAYERS, Fields
from core.model import MoESpec

__all__ = [
    "MAX_HEADS",
    "MAX_HEAD_DIM",
    "MAX_HIDDEN",
    "MAX_VOCAB",
    "common",
    "dense_prefix",
    "gqa_geometry",
    "moe_spec",
    "sliding_layers",
    "text_common",
]

# ModelSpec's and the mixers' own bounds, checked here so the message names the config's field
MAX_HIDDEN = 1_000_000
MAX_VOCAB = 100_000_000
MAX_HEADS = 100_000
MAX_HEAD_DIM = 100_000


def common(f: Fields) -> dict[str, Any]:
    """hidden_size, num_layers, vocab_size, tied embeddings, positions."""
    hidden = f.int("hidden_size", maximum=MAX_HIDDEN)
    layers = f.int("num_hidden_layers", maximum=MAX_LAYERS, why=LAYERS_WHY)
    return dict(
        hidden_size=hidden,
        num_layers=layers,
        vocab_size=f.int("vocab_size", maximum=MAX_VOCAB),
        tie_word_embeddings=f.bool("tie_word_embeddings", False),
        max_position_embeddings=f.int("max_position_embeddings", default=4096),
    )


def gqa_geometry(f: Fields, hidden: int) -> dict[str, int]:
    """num_heads, num_kv_heads (default: the heads, i.e. MHA) and head_dim (default hidden / heads)."""
    heads = f.int("num_attention_heads", maximum=MAX_HEADS)
    kv_heads = f.int("num_key_value_heads", default=heads, maximum=MAX_HEADS)
    if heads % kv_heads:
        raise f.error(f"num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv_heads})")
    if f.has("head_dim"):
        head_dim = f.int("head_dim", maximum=MAX_HEAD_DIM)
    elif hidden % heads:
        raise f.error(f"no 'head_dim' and hidden_size ({hidden}) is not divisible by num_attention_heads ({heads})")
    else:
        head_dim = hidden // heads
    return dict(num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim)


def sliding_layers(f: Fields, num_layers: int) -> tuple[int | None, frozenset[int]]:
    """(window, the layers it applies to): ``sliding_window`` unless ``use_sliding_window`` is false; the
    layers ``layer_types`` marks ``sliding_attention``, else every layer."""
    window = f.int("sliding_window", default=None)
    if window is None or (f.has("use_sliding_window") and not f.bool("use_sliding_window")):
        return None, frozenset()
    types = f.cfg.get("layer_types")
    if isinstance(types, list) and types:
        return window, frozenset(i for i, t in enumerate(types[:num_layers]) if t == "sliding_attention")
    return window, frozenset(range(num_layers))


def moe_spec(
    f: Fields,
    *,
    experts: str | tuple[str, ...],
    top_k: tuple[str, ...] = ("num_experts_per_tok",),
    width: str | tuple[str, ...],
    shared: int = 0,
    shared_width: int = 0,
    **kw,
) -> MoESpec:
    """A MoE block from the family's field names (a tuple: the first of those names present)."""
    return MoESpec(
        n_routed_experts=f.experts(*((experts,) if isinstance(experts, str) else experts)),
        top_k=f.int(*top_k),
        expert_intermediate_size=f.int(*((width,) if isinstance(width, str) else width)),
        n_shared_experts=shared,
        shared_intermediate_size=shared_width if shared else 0,
        **kw,
    )


def dense_prefix(f: Fields, layers: int, key: str = "first_k_dense_replace") -> int:
    """The first ``key`` layers are dense: at most ``layers - 1``, so that at least one layer is MoE (a MoE
    config without a MoE layer has no expert loads for the Balance page to draw)."""
    why = f"at least one of the {layers:,} layers (num_hidden_layers) must have the MoE block"
    return f.int(key, default=0, minimum=0, maximum=layers - 1, why=why)


def text_common(f: Fields, family: str, *, tied: bool = False) -> tuple[Fields, dict[str, Any]]:
    """A multimodal config's language model: its ``text_config`` (or the config itself when text-only) and
    :func:`common` of it, with ``tie_word_embeddings`` from the top level, else the text config, else ``tied``."""
    t = f.section("text_config", family=family, or_self=True)
    c = common(t)
    c["tie_word_embeddings"] = f.bool("tie_word_embeddings", t.bool("tie_word_embeddings", tied))
    return t, c
