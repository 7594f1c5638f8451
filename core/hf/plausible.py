"""Values an imported config.json may have but no real model does (numbers audit 3, issue 34).

The importer's bounds (``MAX_FIELD_INT``, the model's field limits) are what the planner can compute with; a
value inside them can still be absurd (``max_position_embeddings`` 10^12 sizes as fast as Llama 4 Scout's
10,485,760, and every context default and chart then runs to it). Such a value is accepted and named in a
warning, with the range a real model has.
"""

from __future__ import annotations

from core.model import ModelSpec

__all__ = ["PLAUSIBLE", "implausible_values"]

# config.json field -> (the ModelSpec attribute it becomes, the plausible maximum, its unit, why): each maximum is
# about 10x the largest published value (the catalog's largest, named), so a real model never trips it.
PLAUSIBLE: dict[str, tuple[str, int, str, str]] = {
    "max_position_embeddings": (
        "max_position_embeddings",
        100_000_000,
        "tokens",
        "the longest published context is Llama 4 Scout's 10,485,760",
    ),
    "vocab_size": ("vocab_size", 2_000_000, "tokens", "the largest published vocabulary is Gemma 4's 262,144"),
    "hidden_size": ("hidden_size", 131_072, "", "the widest published model is Llama-3.1-405B at 16,384"),
    "num_hidden_layers": ("num_layers", 1_024, "layers", "the deepest published model is Llama-3.1-405B at 126"),
}


def implausible_values(spec: ModelSpec) -> list[str]:
    """One warning per field of an imported model beyond what any real model has: the config.json field, its
    value and the plausible range (``max_position_embeddings`` 10^12: "... is 1,000,000,000,000 tokens, past the
    plausible 1 to 100,000,000 tokens ..."). Empty for every model of the catalog."""
    if not isinstance(spec, ModelSpec):
        raise ValueError(f"spec must be a ModelSpec, got {type(spec).__name__}")
    out = []
    for field, (attr, top, unit, why) in PLAUSIBLE.items():
        value = getattr(spec, attr)
        if value > top:
            unit = f" {unit}" if unit else ""
            out.append(
                f"config.json: {field} is {value:,}{unit}, past the plausible 1 to {top:,}{unit} ({why}). "
                "It is accepted, but the figures sized by it (contexts, charts up to it) mean little: check the value."
            )
    return out
