"""Domain model: frozen pydantic models with bounds and clear messages.

Everything a user or a catalog file can set passes through one of these models. A bad value raises
``pydantic.ValidationError``, which is a subclass of ``ValueError`` and names the field and the allowed
range; :func:`describe_validation_error` turns it into one line per problem for the pages.

Units live in the names: ``_gb`` is decimal gigabytes (1e9 bytes), ``_gbps`` decimal gigabytes per
second, ``_tflops`` 1e12 FLOP/s (dense, no 2:4 sparsity), ``_w`` watts, ``_usd`` US dollars.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    Field,
    model_validator,
)

from core._util.validated import FROZEN, PosInt
from core.deployment.calibration import ServedCalibration
from core.hardware.efficiency import (
    SERVING_STACKS,
)
from core.model.dtypes import (
    DTYPES,
    DispatchDtypeName,
    DtypeName,
    KVDtypeName,
    LinearStateDtypeName,
)

__all__ = [
    "SPEC_METHOD_KINDS",
    "DraftMethod",
    "MemoryAssumptions",
    "ParallelLayout",
    "Precision",
    "Scenario",
    "SingleBox",
    "SpecDecodeConfig",
    "Workload",
]


class Precision(BaseModel):
    """Storage dtypes: weights, routed experts (if different), KV cache, all-to-all dispatch."""

    model_config = FROZEN

    weights: DtypeName = "bf16"
    routed_experts: DtypeName | None = Field(
        None, description="routed-expert dtype when it differs from the rest (e.g. int4 experts)"
    )
    kv_cache: KVDtypeName = "bf16"
    dispatch: DispatchDtypeName = "bf16"
    linear_state: LinearStateDtypeName | None = Field(
        None,
        description="the recurrent state of linear-attention / SSM layers where the engine overrides the checkpoint's "
        "fp32 (vLLM --mamba-ssm-cache-dtype, SGLang --mamba-ssm-dtype)",
    )

    @classmethod
    def of(cls, value: Precision | str) -> Precision:
        """A Precision, or a dtype name applied to all weights."""
        if isinstance(value, Precision):
            return value
        if isinstance(value, str) and value in DTYPES:
            return cls(weights=value)
        raise ValueError(f"unknown precision {value!r}; allowed: {', '.join(DTYPES)} or a Precision")

    @property
    def expert_dtype(self) -> str:
        return self.routed_experts or self.weights

    @property
    def label(self) -> str:
        s = self.weights
        if self.routed_experts and self.routed_experts != self.weights:
            s = f"{self.weights} + {self.routed_experts} experts"
        state = f", linear state {self.linear_state}" if self.linear_state else ""
        return f"{s}, KV {self.kv_cache}{state}"


class Workload(BaseModel):
    """Concurrent sequences and their lengths, in tokens."""

    model_config = FROZEN

    batch: Annotated[int, Field(ge=1, le=1_000_000)] = 64
    input_len: Annotated[int, Field(ge=1, le=10_000_000)] = 2048
    output_len: Annotated[int, Field(ge=1, le=10_000_000)] = 512
    prefix_reuse: Annotated[float, Field(ge=0.0, le=0.99)] = Field(
        0.0, description="share of each prompt a warm prefix cache serves (its KV read, not recomputed)"
    )

    @property
    def context_len(self) -> int:
        """Tokens a sequence holds at its end: the whole prompt and every output token."""
        return self.input_len + self.output_len

    @property
    def cached_prompt_tokens(self) -> int:
        """Prompt tokens the prefix cache serves: ``prefix_reuse`` of the prompt, rounded, at most all but one
        (the last prompt token is always computed: it yields the first output token)."""
        return min(self.input_len - 1, round(self.prefix_reuse * self.input_len))

    @property
    def computed_prompt_tokens(self) -> int:
        """Prompt tokens prefill computes per request: the prompt less what the prefix cache serves."""
        return self.input_len - self.cached_prompt_tokens

    def prompts_per_s(self, prompt_tokens_per_s: float) -> float:
        """Prompts a prefill rate of ``prompt_tokens_per_s`` computed tokens finishes per second."""
        return prompt_tokens_per_s / self.computed_prompt_tokens

    @property
    def decode_context_len(self) -> int:
        """The mean context a decode step attends to: the prompt and half the output (``input + output // 2``)."""
        return self.input_len + self.output_len // 2


class ParallelLayout(BaseModel):
    """How one replica is split: attention TP x attention DP = expert TP x EP, then PP, then DP. ``dcp``:
    decode context parallelism inside each attention-TP group (vLLM's ``--decode-context-parallel-size``):
    the cache is sharded along the sequence over ``dcp`` of the group's ranks instead of replicated."""

    model_config = FROZEN

    attention_tp: PosInt = 1
    attention_dp: PosInt = 1
    ep: PosInt = 1
    expert_tp: PosInt = 1
    pp: PosInt = 1
    dp: PosInt = 1
    dcp: PosInt = 1

    @model_validator(mode="after")
    def _check(self) -> ParallelLayout:
        attn = self.attention_tp * self.attention_dp
        experts = self.ep * self.expert_tp
        if attn != experts:
            raise ValueError(
                f"attention_tp x attention_dp ({attn}) must equal ep x expert_tp ({experts}): "
                "both split the same GPUs of one pipeline stage"
            )
        if self.attention_tp % self.dcp:
            raise ValueError(
                f"decode context parallel size {self.dcp} must divide attention TP {self.attention_tp}: "
                "it shards the cache over ranks of the TP group"
            )
        return self

    @property
    def gpus_per_stage(self) -> int:
        return self.attention_tp * self.attention_dp

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_stage * self.pp * self.dp


# speculative methods (ids of catalogs/draft_methods.yaml) -> how the memory and step models treat
# their draft: a separate model, a one-layer head on the target's features, the model's own MTP
# module, or no model at all (n-gram / lookup drafts)
# (in the order the sidebar offers them)
SPEC_METHOD_KINDS: dict[str, str] = {
    "none": "none",
    "mtp": "mtp",
    "eagle3": "eagle",
    "eagle": "eagle",
    "p_eagle": "eagle",
    "medusa": "eagle",
    "draft_model": "draft_model",
    "ngram": "ngram",
    "lookahead": "ngram",
    "suffix": "ngram",
}
SpecMethodName = Literal[tuple(SPEC_METHOD_KINDS)]


class SpecDecodeConfig(BaseModel):
    """Speculative decoding: which draft, how many tokens it proposes per step (gamma)."""

    model_config = FROZEN

    method: SpecMethodName = "none"
    draft_model_id: str | None = Field(None, description="catalog id of a separate draft model")
    draft_weights: DtypeName | None = Field(None, description="draft weight dtype (None: the target's)")
    num_speculative_tokens: Annotated[int, Field(ge=1, le=64)] = 3
    acceptance_rate: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        None, description="per-token acceptance alpha (None: the method's default)"
    )
    draft_cost: Annotated[float, Field(ge=0.0, le=10.0)] | None = Field(
        None, description="c: one draft forward relative to one target forward (None: the method's default)"
    )

    @model_validator(mode="after")
    def _check(self) -> SpecDecodeConfig:
        if self.method == "draft_model" and not self.draft_model_id:
            raise ValueError("method 'draft_model' needs draft_model_id")
        return self

    @property
    def enabled(self) -> bool:
        return self.method != "none"

    @property
    def kind(self) -> str:
        """draft_model | eagle | mtp | ngram | none: how the draft occupies memory and time."""
        return SPEC_METHOD_KINDS[self.method]


class DraftMethod(BaseModel):
    """A speculative-decoding method from ``catalogs/draft_methods.yaml``: where its draft tokens come
    from, its published acceptance and speedup ranges, and the flag each engine turns it on with."""

    model_config = FROZEN

    id: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9_]+$")
    name: str
    planner_method: Literal["draft_model", "eagle", "mtp", "ngram"]
    year: Annotated[int, Field(ge=2015, le=2035)]
    idea: str
    alpha_range: tuple[Annotated[float, Field(ge=0, le=1)], Annotated[float, Field(ge=0, le=1)]]
    default_alpha: Annotated[float, Field(ge=0, le=1)]
    draft_cost_c: Annotated[float, Field(ge=0, le=10)]
    default_gamma: Annotated[int, Field(ge=1, le=64)]
    memory_overhead: str
    typical_speedup: tuple[Annotated[float, Field(gt=0, le=100)], Annotated[float, Field(gt=0, le=100)]]
    engines: dict[str, str | None]
    sources: list[str] = Field(min_length=1)
    notes: str = ""

    @model_validator(mode="after")
    def _check(self) -> DraftMethod:
        lo, hi = self.alpha_range
        if not lo <= self.default_alpha <= hi:
            raise ValueError(f"default_alpha {self.default_alpha} outside alpha_range [{lo}, {hi}]")
        if self.typical_speedup[0] > self.typical_speedup[1]:
            raise ValueError("typical_speedup must be [low, high]")
        return self


class MemoryAssumptions(BaseModel):
    """Stated, editable assumptions of the per-GPU memory model.

    ``gpu_memory_utilization`` is vLLM's: the fraction of each GPU's memory the engine may use for
    weights, activations, runtime buffers and the KV cache together (default 0.9); the rest is left
    free. ``runtime_reserve_gb`` covers the CUDA context (~0.5 GB), NCCL buffers (~0.4 GB, per
    aiconfigurator's measurements), CUDA graphs and allocator fragmentation. Activations peak at
    ``max_num_batched_tokens x hidden_size x 2 bytes x activation_factor`` (vLLM profiles this at
    start-up; the factor covers the residual stream, normed copies and attention/FFN intermediates).
    """

    model_config = FROZEN

    gpu_memory_utilization: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    runtime_reserve_gb: Annotated[float, Field(ge=0.0, le=1000.0)] = 2.5
    max_num_batched_tokens: Annotated[int, Field(ge=1, le=10_000_000)] = 8192
    activation_factor: Annotated[float, Field(ge=0.0, le=1000.0)] = 16.0
    redundant_experts: Annotated[int, Field(ge=0, le=100_000)] = Field(
        0, description="extra expert replicas across the EP group (EPLB)"
    )


class SingleBox(BaseModel):
    """A single-box setup (Single box page): a host, optionally one to four PCIe GPUs, a GGUF-style
    quantisation and how many leading layers keep their routed experts in host RAM."""

    model_config = FROZEN

    host_id: str = Field("server-ddr5-8ch-512", min_length=1, max_length=120)
    gpu_id: str | None = Field("rtx-4090", description="None on a unified-memory host")
    n_gpus: Annotated[int, Field(ge=1, le=4)] = 1
    n_cpu_moe: Annotated[int, Field(ge=0, le=10_000)] | None = Field(
        None, description="llama.cpp --n-cpu-moe; None = the fewest that fit the GPU"
    )
    quant: DtypeName = "q4_k_m"
    context_len: Annotated[int, Field(ge=1, le=10_000_000)] = 8192


class Scenario(BaseModel):
    """What every page is about: catalog ids plus the choices a user makes in the sidebar."""

    model_config = FROZEN

    model_id: str = "deepseek-v3"
    gpu_id: str = "h200"
    num_nodes: Annotated[int, Field(ge=1, le=4096)] = 1
    gpus_per_node: Annotated[int, Field(ge=1, le=1024)] = 8
    precision: Precision = Precision(weights="fp8", kv_cache="bf16", dispatch="fp8")
    workload: Workload = Workload()
    layout: ParallelLayout | None = Field(None, description="None: the default layout for the cluster")
    spec: SpecDecodeConfig = SpecDecodeConfig()
    memory: MemoryAssumptions = MemoryAssumptions()
    box: SingleBox | None = Field(None, description="None: the Single box page's default setup")
    serving_stack: Literal[tuple(SERVING_STACKS)] = Field(
        "sglang", description="the engine whose kernels time the steps (MoE kernel path, all-reduce kernels)"
    )
    calibration: ServedCalibration | None = Field(
        None, description="step-time scales fitted on one's own benchmark results (None: the catalog's model as is)"
    )

    @model_validator(mode="after")
    def _check_layout(self) -> Scenario:
        if self.layout is not None and self.layout.total_gpus != self.total_gpus:
            raise ValueError(
                f"layout uses {self.layout.total_gpus} GPUs (tp x dp_attn x pp x dp) but the cluster has "
                f"{self.total_gpus}"
            )
        return self

    @property
    def total_gpus(self) -> int:
        return self.num_nodes * self.gpus_per_node
