"""An imported config.json with a value inside the importer's bounds but past any real model's (numbers audit 3,
issue 34) is accepted and named in a warning: the field, the value and the plausible range."""

from __future__ import annotations

import json

import pytest

from core.catalog import CATALOG_DIR, load_catalog
from core.hf import MAX_FIELD_INT, implausible_values, model_from_config_text

cat = load_catalog()


def _mixtral(**changes) -> str:
    cfg = json.loads((CATALOG_DIR / "models" / "mixtral-8x7b" / "config.json").read_text())
    return json.dumps({**cfg, **changes})


def test_an_absurd_context_is_accepted_and_named():
    # 10^12 positions is within MAX_FIELD_INT (10^12) and sizes as fast as any context: accepted, but absurd
    spec, _ = model_from_config_text(_mixtral(max_position_embeddings=10**12))
    assert spec.max_position_embeddings == MAX_FIELD_INT == 10**12
    (why,) = implausible_values(spec)
    assert why.startswith("config.json: max_position_embeddings is 1,000,000,000,000 tokens, past the plausible 1 to ")
    assert "100,000,000 tokens" in why and "Llama 4 Scout's 10,485,760" in why


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("max_position_embeddings", 100_000_001, "max_position_embeddings is 100,000,001 tokens"),
        ("vocab_size", 5_000_000, "vocab_size is 5,000,000 tokens, past the plausible 1 to 2,000,000 tokens"),
        ("num_hidden_layers", 1_500, "num_hidden_layers is 1,500 layers, past the plausible 1 to 1,024 layers"),
    ],
)
def test_each_field_past_its_range_is_named(field, value, shown):
    spec, _ = model_from_config_text(_mixtral(**{field: value}))
    assert [w for w in implausible_values(spec) if shown in w], implausible_values(spec)


def test_the_edge_of_the_range_and_every_catalog_model_pass():
    # exactly 100,000,000 tokens is plausible (the range is inclusive); Mixtral's own 32,768 too
    assert implausible_values(model_from_config_text(_mixtral(max_position_embeddings=100_000_000))[0]) == []
    assert implausible_values(model_from_config_text(_mixtral())[0]) == []
    assert {m.id: implausible_values(m) for m in cat.models.values() if implausible_values(m)} == {}


def test_not_a_model_is_refused_by_name():
    with pytest.raises(ValueError, match="spec must be a ModelSpec, got dict"):
        implausible_values({"max_position_embeddings": 10**12})
