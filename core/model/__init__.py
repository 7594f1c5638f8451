"""What a model is (:mod:`core.model.spec`), its mixers (:mod:`core.model.mixers`), its FFN blocks
(:mod:`core.model.ffn`), its parameter counts (:mod:`core.model.params`) and the MoE routing arithmetic
(:mod:`core.model.routing`: tokens per expert, experts a step touches)."""

from core.model.mixers import MIXER_KINDS, Indexer, Mixer, MixerSpec
from core.model.spec import HostTable, MixerGroup, ModelSpec, MoESpec, PublishedCounts, group_layers

__all__ = [
    "MIXER_KINDS",
    "HostTable",
    "Indexer",
    "Mixer",
    "MixerGroup",
    "MixerSpec",
    "MoESpec",
    "ModelSpec",
    "PublishedCounts",
    "group_layers",
]
