"""What a model is (:mod:`core.model.spec`), its mixers (:mod:`core.model.mixers`), its model-level extras
(:mod:`core.model.extras`: off-GPU lookup tables, a causal encoder), its FFN blocks (:mod:`core.model.ffn`), its
parameter counts (:mod:`core.model.params`) and the MoE routing arithmetic (:mod:`core.model.routing`: tokens per
expert, experts a step touches)."""

from core.model.extras import DEFAULT_TIER, EXTRA_KINDS, TIERS, Lookup, ModelExtra
from core.model.extras.causal_encoder import CausalEncoder
from core.model.extras.lookup_tables import HostTable, LookupTables
from core.model.mixers import MIXER_KINDS, Indexer, Mixer, MixerSpec
from core.model.spec import MixerGroup, ModelSpec, MoESpec, PublishedCounts, group_layers

__all__ = [
    "DEFAULT_TIER",
    "EXTRA_KINDS",
    "MIXER_KINDS",
    "TIERS",
    "CausalEncoder",
    "HostTable",
    "Indexer",
    "Lookup",
    "LookupTables",
    "Mixer",
    "MixerGroup",
    "MixerSpec",
    "MoESpec",
    "ModelExtra",
    "ModelSpec",
    "PublishedCounts",
    "group_layers",
]
