"""What a model is: embeddings, groups of layers that share one mixer, the FFN of each layer, extras.

Built by :func:`core.hf.model_from_hf_config` from a Hugging Face ``config.json`` (catalog entries and user
uploads alike). A layer is one mixer (:mod:`core.model.mixers`: attention of some kind, or a linear /
state-space recurrence) followed by a dense FFN, a MoE block, or nothing (``ffn_free_layers``).
``total_params`` / ``active_params`` are derived from the architecture (:mod:`core.model.params`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core._util.memo import by_identity
from core.model import params as _params
from core.model.extras import ExtraSpec, Lookup
from core.model.extras.base import Phase
from core.model.mixers import Mixer, MixerSpec

__all__ = ["MixerGroup", "MoESpec", "ModelSpec", "PublishedCounts"]

# the fields a model was described by before its extras had a seam (reader output, dumps): the validator builds the
# extras from them
_LEGACY_EXTRAS = ("host_tables", "prefill_encoder_layers", "prefill_replay_tokens")

_FROZEN = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)
PosInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]


class MoESpec(BaseModel):
    """The mixture-of-experts block of a MoE layer."""

    model_config = _FROZEN

    n_routed_experts: PosInt = Field(description="routed experts per MoE layer")
    top_k: PosInt = Field(description="routed experts each token is sent to")
    expert_intermediate_size: PosInt = Field(description="FFN width of one routed expert")
    n_shared_experts: NonNegInt = Field(0, description="always-on experts per MoE layer")
    shared_intermediate_size: NonNegInt = Field(0, description="FFN width of ONE shared expert (0 when there is none)")
    router_bias: bool = Field(False, description="router has a bias / e_score_correction_bias vector")
    expert_bias: bool = Field(False, description="expert projections carry biases (gpt-oss)")
    shared_expert_gate: bool = Field(False, description="a sigmoid gate (hidden x 1) on the shared expert (Qwen2-MoE)")
    latent_size: NonNegInt = Field(
        0,
        description="latent MoE: routed experts run at this width between a down and an up projection "
        "(Kimi-K3 3584, Nemotron-3 1024); 0 = the hidden size",
    )
    n_groups: PosInt = Field(1, description="expert groups for group-limited routing (DeepSeek-V3: 8)")
    topk_groups: PosInt = Field(1, description="groups a token may route to (DeepSeek-V3: 4)")

    @model_validator(mode="after")
    def _check(self) -> MoESpec:
        if self.top_k > self.n_routed_experts:
            raise ValueError(f"top_k ({self.top_k}) cannot exceed n_routed_experts ({self.n_routed_experts})")
        if self.n_routed_experts % self.n_groups:
            raise ValueError(f"n_groups ({self.n_groups}) must divide n_routed_experts ({self.n_routed_experts})")
        if self.n_shared_experts > 0 and self.shared_intermediate_size == 0:
            raise ValueError("shared_intermediate_size must be > 0 when n_shared_experts > 0")
        return self


class PublishedCounts(BaseModel):
    """A vendor's headline parameter counts and how they were counted."""

    model_config = _FROZEN

    total_params: PosInt | None = None
    active_params: PosInt | None = None
    active_convention: Literal["incl_embedding_and_head", "excl_input_embedding", "non_embedding"] = (
        "incl_embedding_and_head"
    )
    includes_mtp: bool = False
    includes_vision: bool = False
    active_rounded_to: NonNegInt = Field(
        0,
        description="the published active figure is a name rounded to this many parameters (Qwen3.5-35B-A3B: "
        "'3B' = 1e9), so it is matched within half of it instead of within 3%",
    )
    counting_notes: str = ""
    source: str = ""
    verified: Literal["primary", "secondary", "unverified"] = "unverified"


class MixerGroup(BaseModel):
    """Layers (0-based indexes) that share one mixer."""

    model_config = _FROZEN

    mixer: MixerSpec
    layers: tuple[int, ...] = Field(min_length=1)

    @field_validator("layers")
    @classmethod
    def _sorted_unique(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(set(v)))


def group_layers(num_layers: int, mixer_of) -> tuple[MixerGroup, ...]:
    """Groups for ``num_layers`` layers from ``mixer_of(layer) -> Mixer`` (equal mixers share a group),
    in the order their first layer appears."""
    by: dict[Mixer, list[int]] = {}
    for i in range(num_layers):
        by.setdefault(mixer_of(i), []).append(i)
    return tuple(MixerGroup(mixer=mx, layers=tuple(ls)) for mx, ls in by.items())


class ModelSpec(BaseModel):
    """A transformer's architecture, as a Hugging Face ``config.json`` describes it."""

    model_config = _FROZEN

    id: str = Field(min_length=1, max_length=120, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str = Field(min_length=1, max_length=200)
    family: str = ""
    architecture: str = Field(description="config.json model_type, e.g. deepseek_v3")
    hf_id: str = ""
    release_date: str = ""
    tokenizer_family: str = ""

    hidden_size: Annotated[int, Field(gt=0, le=1_000_000)]
    num_layers: Annotated[int, Field(gt=0, le=10_000)]
    vocab_size: Annotated[int, Field(gt=0, le=100_000_000)]
    tie_word_embeddings: bool = False
    max_position_embeddings: Annotated[int, Field(gt=0)] = 4096

    mixers: tuple[MixerGroup, ...] = Field(min_length=1, description="the layers, grouped by their mixer")
    mtp_mixer: MixerSpec | None = Field(
        None, description="the mixer of the MTP module's layer when it is not the first softmax layer's"
    )

    # feed-forward
    dense_layers: tuple[int, ...] = Field((), description="indexes of layers with a dense FFN instead of a MoE block")
    dense_intermediate_size: NonNegInt = Field(0, description="FFN width of the dense layers")
    ffn_free_layers: tuple[int, ...] = Field(
        (), description="layers with a mixer but no FFN / MoE block (Nemotron-H blocks carry one mixer each)"
    )
    parallel_dense_intermediate_size: NonNegInt = Field(
        0, description="a dense residual MLP beside the MoE on every MoE layer (Snowflake Arctic, Gemma 4)"
    )
    moe: MoESpec | None = None
    ffn_matrices: Annotated[int, Field(ge=2, le=3)] = Field(3, description="3 for SwiGLU/GeGLU, 2 for plain MLPs")
    norms_per_layer: Annotated[int, Field(ge=0, le=16)] = 2

    # extras
    residual_streams: Annotated[int, Field(ge=1, le=64)] = Field(
        1, description="copies of the residual stream (DeepSeek-V4's hyper-connections: hc_mult 4)"
    )
    layer_extra_params: NonNegInt = Field(0, description="per-layer extras every token uses (hyper-connection mixers)")
    model_extra_params: NonNegInt = Field(0, description="model-level extras every token uses (hyper-connection head)")
    inactive_extra_params: NonNegInt = Field(
        0, description="stored but never multiplied by a token (DeepSeek-V4's hash-routing table): total only"
    )
    num_mtp_layers: NonNegInt = Field(0, description="multi-token-prediction (next-n) modules")
    mtp_dense_ffn: bool = Field(
        False,
        description="the MTP modules' FFN is dense (dense_intermediate_size wide), not a copy of the MoE block "
        "(Step-3.5 / 3.7, MiMo-V2)",
    )
    checkpoint_precision: dict[str, str] | None = Field(
        None,
        description="how the published checkpoint stores it, from its quantization_config: "
        '{"weights": ..., "routed_experts": ...} (None: unquantised, or no quantization_config)',
    )
    checkpoint_block_width: int | None = Field(
        None,
        ge=1,
        le=65_536,
        description="the published checkpoint's block-quantisation width (quantization_config.weight_block_size; "
        "DeepSeek-V3 128, DeepSeek-V4.1-Flash 32); None: the dtype's usual block",
    )
    vision_params: NonNegInt = Field(0, description="vision tower + projector parameters, from vision_config")
    extras: tuple[ExtraSpec, ...] = Field(
        (),
        description="model-level extras (core.model.extras): off-GPU lookup tables (Engram, PLE; not in the "
        "backbone's counts), a causal encoder (DeepSeek-V4.1); at most one of each kind",
    )

    published: PublishedCounts = PublishedCounts()
    source: str = ""
    notes: str = ""

    @field_validator("dense_layers", "ffn_free_layers")
    @classmethod
    def _sorted_unique(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(set(v)))

    @model_validator(mode="before")
    @classmethod
    def _legacy_extras(cls, data):
        """``host_tables`` / ``prefill_encoder_layers`` + ``prefill_replay_tokens`` (how a model described its tables
        and its causal encoder before extras): each becomes its extra, replacing one of the same kind."""
        if not isinstance(data, dict) or not any(k in data for k in _LEGACY_EXTRAS):
            return data
        data = dict(data)
        tables = data.pop("host_tables", None)
        encoder, replay = data.pop("prefill_encoder_layers", None), data.pop("prefill_replay_tokens", None)
        new, replaced = [], set()
        if tables is not None:
            replaced.add("lookup_tables")
            new += [{"kind": "lookup_tables", "tables": tables}] if tables else []
        if encoder is not None or replay is not None:
            replaced.add("causal_encoder")
            if encoder:
                new.append({"kind": "causal_encoder", "encoder_layers": encoder, "replay_tokens": replay or 0})
        kept = [e for e in data.get("extras", ()) if _kind(e) not in replaced]
        data["extras"] = (*kept, *new)
        return data

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        n = self.num_layers
        seen: dict[int, int] = {}
        for gi, g in enumerate(self.mixers):
            bad = [i for i in g.layers if not 0 <= i < n]
            if bad:
                raise ValueError(f"mixers[{gi}].layers {bad[:5]} outside 0..{n - 1}")
            twice = [i for i in g.layers if i in seen]
            if twice:
                raise ValueError(f"layer {twice[0]} is in two mixer groups ({seen[twice[0]]} and {gi})")
            seen.update(dict.fromkeys(g.layers, gi))
        if len(seen) != n:
            missing = [i for i in range(n) if i not in seen]
            raise ValueError(f"every layer needs a mixer: layers {missing[:5]} are in no group")
        if not any(g.mixer.caches_context for g in self.mixers):
            raise ValueError("at least one layer must be a softmax-attention layer")
        for name in ("dense_layers", "ffn_free_layers"):
            bad = [i for i in getattr(self, name) if not 0 <= i < n]
            if bad:
                raise ValueError(f"{name} {bad[:5]} outside 0..{n - 1}")
        if set(self.ffn_free_layers) & set(self.dense_layers):
            raise ValueError("a layer cannot be both dense and FFN-free")
        if self.moe is None and len(self.dense_layers) + len(self.ffn_free_layers) != n:
            raise ValueError("a model without a MoE block must list every layer in dense_layers")
        if self.mtp_dense_ffn and self.dense_intermediate_size == 0:
            raise ValueError("mtp_dense_ffn needs dense_intermediate_size > 0 (the MTP FFN's width)")
        if self.dense_layers and self.dense_intermediate_size == 0:
            raise ValueError("dense_intermediate_size must be > 0 when there are dense layers")
        kinds = [e.kind for e in self.extras]
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"one extra of each kind, got {', '.join(kinds)}")
        if sum(e.split_layer is not None for e in self.extras) > 1:
            raise ValueError("at most one extra may split the layers' tokens")
        for e in self.extras:
            problems = e.problems(n)
            if problems:
                raise ValueError("; ".join(problems))
        return self

    # -- derived structure -------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def num_moe_layers(self) -> int:
        return 0 if self.moe is None else self.num_layers - len(self.dense_layers) - len(self.ffn_free_layers)

    @property
    def num_dense_layers(self) -> int:
        return len(self.dense_layers)

    @property
    def head_mixer(self) -> Mixer:
        """The mixer of one extra decoder layer (an MTP module, an EAGLE head): ``mtp_mixer`` when the config
        names one, else the mixer of the model's first softmax-attention layer."""
        return self.mtp_mixer or _first_cached(self)

    def with_state_dtype(self, dtype: str) -> ModelSpec:
        """The model with its linear-attention / SSM layers' recurrent state stored in ``dtype`` (an engine's
        override of the checkpoint's fp32: vLLM ``--mamba-ssm-cache-dtype``, SGLang ``--mamba-ssm-dtype``); the
        model itself where no layer changes."""
        groups = tuple(g.model_copy(update={"mixer": g.mixer.with_state_dtype(dtype)}) for g in self.mixers)
        if all(a.mixer is b.mixer for a, b in zip(groups, self.mixers, strict=True)):
            return self
        return self.model_copy(update={"mixers": groups})

    @property
    def stores_recurrent_state(self) -> bool:
        """Whether some layer keeps a recurrent (linear-attention / SSM) state whose dtype an engine sets."""
        return self.with_state_dtype("bf16") is not self or self.with_state_dtype("fp32") is not self

    @property
    def mixer_summary(self) -> str:
        """The layer mix in words: "MLA" or "Gated DeltaNet × 45 + GQA, gated × 15"."""
        if len(self.mixers) == 1:
            return self.mixers[0].mixer.label()
        return " + ".join(f"{g.mixer.label()} × {len(g.layers)}" for g in self.mixers)

    @property
    def total_params(self) -> int:
        """All weights of the main model (text + vision tower if any; MTP counted apart)."""
        return _params.total_params(self)

    @property
    def active_params(self) -> int:
        """Parameters one token activates, under the model's own published convention."""
        return _params.active_params(self)

    @property
    def mtp_params(self) -> int:
        return _params.mtp_params(self)

    # -- the sums over the extras (core.model.extras) ------------------------------------------
    @property
    def extra_params(self) -> int:
        """Parameters the extras store beside the backbone (lookup tables): not in ``total_params``."""
        return sum(e.params for e in self.extras)

    @property
    def extra_bytes(self) -> int:
        """Bytes the extras store as stored (scales included)."""
        return sum(e.stored_bytes for e in self.extras)

    def extra_hbm_bytes_per_rank(self, tier: str, tp: int) -> float:
        """HBM one GPU gives the extras' stored bytes when they live in ``tier`` (attention TP ``tp``)."""
        return sum(e.hbm_bytes_per_rank(tier, tp) for e in self.extras)

    @property
    def lookups(self) -> tuple[Lookup, ...]:
        """Every row read per token from the extras, in fetch order (the rows due first are fetched first)."""
        return tuple(sorted((lk for e in self.extras for lk in e.lookups()), key=lambda lk: lk.due_layer))

    @property
    def split_layer(self) -> int:
        """The first layer that runs only :meth:`token_share` of a step's tokens (``num_layers``: none)."""
        return next((e.split_layer for e in self.extras if e.split_layer is not None), self.num_layers)

    def token_share(self, phase: Phase, computed_len: int) -> float:
        """The share of a step's tokens the layers from :attr:`split_layer` on run, for prompts that compute
        ``computed_len`` tokens each: 1 for decode and for a model without a splitting extra."""
        return min((e.token_share(phase, computed_len) for e in self.extras), default=1.0)


def _kind(extra) -> str | None:
    return extra.get("kind") if isinstance(extra, dict) else getattr(extra, "kind", None)


@by_identity(256)
def _first_cached(m: ModelSpec) -> Mixer:
    return min((g for g in m.mixers if g.mixer.caches_context), key=lambda g: g.layers[0]).mixer
