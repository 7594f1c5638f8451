"""Test helpers for a model's layer groups: find the groups of one mixer kind, or a copy of the model with
those mixers changed (what-if twins)."""

from core.model import MixerGroup, ModelSpec


def groups(m: ModelSpec, cls) -> list[MixerGroup]:
    """The model's layer groups whose mixer is a ``cls``."""
    return [g for g in m.mixers if isinstance(g.mixer, cls)]


def layers_of(m: ModelSpec, cls) -> list[int]:
    return sorted(i for g in groups(m, cls) for i in g.layers)


def with_mixers(m: ModelSpec, cls, **update) -> ModelSpec:
    """``m`` with every ``cls`` mixer's fields replaced by ``update`` (validated again)."""
    new = tuple(
        MixerGroup(mixer=type(g.mixer).model_validate({**g.mixer.model_dump(), **update}), layers=g.layers)
        if isinstance(g.mixer, cls)
        else g
        for g in m.mixers
    )
    return ModelSpec.model_validate({**m.model_dump(), "mixers": [g.model_dump() for g in new]})
