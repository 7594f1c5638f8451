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
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from core.model.spec import ModelSpec, MoESpec, PublishedCounts

__all__ = [
    "ACTIVE_CONVENTIONS",
    "COMPUTE_DTYPES",
    "DTYPES",
    "EFFICIENCY_FAMILIES",
    "GGUF_DTYPES",
    "KV_DTYPES",
    "SPEC_METHOD_KINDS",
    "ClusterSpec",
    "DraftMethod",
    "EfficiencyProfile",
    "GPUSpec",
    "HostSpec",
    "InterconnectSpec",
    "KernelFactors",
    "LinkFactors",
    "MemoryAssumptions",
    "MoESpec",
    "ModelSpec",
    "ParallelLayout",
    "Precision",
    "PublishedCounts",
    "Scenario",
    "SingleBox",
    "SpecDecodeConfig",
    "SystemFactors",
    "Workload",
    "describe_validation_error",
]

# Storage dtypes a weight tensor can have. nvfp4 / mxfp4 are 4-bit floats with block scales,
# int4 is AWQ/GPTQ-style integer with group scales (their scale overhead lives in core.memory).
# llama.cpp GGUF types (block formats; bits per weight computed in core.memory from their block layouts)
GGUF_DTYPES: tuple[str, ...] = (
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q4_k_m",
    "iq4_xs",
    "q3_k_m",
    "iq3_xxs",
    "q2_k",
    "iq2_xs",
    "iq2_xxs",
    "iq1_s",
)
DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4", *GGUF_DTYPES)
# Dtypes a KV cache is stored in by the serving engines we model (vLLM / SGLang / TRT-LLM).
KV_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8", "int8")
# Tensor-core math a GPU datasheet quotes dense TFLOPS for.
COMPUTE_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8", "int8", "fp4")
# How a vendor's "active parameters" headline is counted (see catalogs/README.md).
ACTIVE_CONVENTIONS: tuple[str, ...] = ("incl_embedding_and_head", "excl_input_embedding", "non_embedding")

_FROZEN = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

PosInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]

# The formulas divide by bandwidths, capacities, peaks and efficiencies: a positive value so small that
# the division overflows (5e-324) is refused like zero. Checked after the field's own bounds, so 0 or a
# negative value still gets pydantic's "greater than 0" message.
MIN_DIVISOR = 0.001


def _not_vanishing(v: float | None, info) -> float | None:
    if v is not None and v < MIN_DIVISOR:
        raise ValueError(f"{info.field_name} must be at least {MIN_DIVISOR:g}, got {v!r}")
    return v


def describe_validation_error(err: ValidationError | ValueError) -> str:
    """One line per problem, "field: message", for display in the app (never a traceback)."""
    if isinstance(err, ValidationError):
        lines = []
        for e in err.errors():
            loc = ".".join(str(p) for p in e.get("loc", ())) or "value"
            msg = e.get("msg", "invalid")
            msg = msg.removeprefix("Value error, ")
            lines.append(f"{loc}: {msg}")
        return "; ".join(lines)
    return str(err)


class GPUSpec(BaseModel):
    """One accelerator, per GPU. Bandwidths are per direction; TFLOPS dense (no sparsity)."""

    model_config = _FROZEN

    id: str = Field(min_length=1, max_length=60, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str = Field(min_length=1)
    vendor: Literal["nvidia", "amd", "other"] = "nvidia"
    architecture: str = ""
    release_year: Annotated[int, Field(ge=2010, le=2035)] | None = None
    hbm_capacity_gb: Annotated[float, Field(gt=0, le=10_000)]
    hbm_capacity_note: str = ""
    hbm_bytes: Annotated[int, Field(gt=0, le=10**14)] | None = Field(
        None,
        description="device memory in bytes as the runtime reports it; vendors' '80 GB' HBM is 80 GiB. "
        "Default: hbm_capacity_gb read as GiB",
    )
    hbm_bandwidth_gbps: Annotated[float, Field(gt=0, le=1_000_000)]
    dense_tflops: dict[Literal["bf16", "fp16", "fp8", "int8", "fp4"], Annotated[float, Field(gt=0, le=1_000_000)]]
    scale_up_link: str = ""
    scale_up_bw_gbps: Annotated[float, Field(gt=0, le=100_000)]
    scale_up_domain_gpus: Annotated[int, Field(ge=1, le=100_000)] = 8
    gpus_per_node: Annotated[int, Field(ge=1, le=1024)] = 8
    scale_out_link: str = ""
    scale_out_bw_gbps: Annotated[float, Field(gt=0, le=100_000)]
    power_w: Annotated[float, Field(gt=0, le=100_000)] | None = None
    price_per_gpu_hour_usd: Annotated[float, Field(ge=0, le=10_000)] = 0.0
    price_source: str = ""
    sources: dict[str, str] = Field(default_factory=dict)
    confidence: Literal["primary", "secondary", "unverified"] = "unverified"
    notes: str = ""

    _divisors = field_validator(
        "hbm_capacity_gb", "hbm_bandwidth_gbps", "scale_up_bw_gbps", "scale_out_bw_gbps", "power_w"
    )(_not_vanishing)

    @field_validator("dense_tflops")
    @classmethod
    def _no_vanishing_peak(cls, v: dict) -> dict:
        for k, x in v.items():
            if x < MIN_DIVISOR:
                raise ValueError(f"dense_tflops.{k} must be at least {MIN_DIVISOR:g} TFLOPS, got {x!r}")
        return v

    @field_validator("dense_tflops", mode="before")
    @classmethod
    def _drop_nulls(cls, v):
        if isinstance(v, dict):
            return {k: x for k, x in v.items() if x is not None}
        return v

    @model_validator(mode="after")
    def _check(self) -> GPUSpec:
        if "bf16" not in self.dense_tflops and "fp16" not in self.dense_tflops:
            raise ValueError("dense_tflops needs at least bf16 or fp16")
        return self

    @property
    def short_name(self) -> str:
        """The name without its parenthesised detail ("H200" of "H200 (141 GB HBM3e)"), for chart titles."""
        return self.name.split(" (")[0]

    @property
    def memory_bytes(self) -> int:
        """Device memory in bytes (what vLLM's gpu_memory_utilization is a fraction of)."""
        return self.hbm_bytes if self.hbm_bytes is not None else int(self.hbm_capacity_gb * 2**30)

    @property
    def memory_gb(self) -> float:
        """Device memory in decimal GB (1e9 bytes), the unit every figure in the app uses."""
        return self.memory_bytes / 1e9

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.hbm_bandwidth_gbps * 1e9

    def supports(self, compute_dtype: str) -> bool:
        """Whether the tensor cores run ``compute_dtype`` natively."""
        return compute_dtype in self.dense_tflops

    def tflops(self, compute_dtype: str) -> float:
        """Dense TFLOPS for a compute dtype; ValueError if the part has no native support."""
        if compute_dtype not in COMPUTE_DTYPES:
            raise ValueError(f"unknown compute dtype {compute_dtype!r}; allowed: {', '.join(COMPUTE_DTYPES)}")
        if compute_dtype not in self.dense_tflops:
            have = ", ".join(sorted(self.dense_tflops))
            raise ValueError(f"{self.name} has no native {compute_dtype} tensor cores (native: {have})")
        return self.dense_tflops[compute_dtype]

    def ridge_point_flop_per_byte(self, compute_dtype: str = "bf16") -> float:
        """Roofline ridge: dense FLOP/s over HBM bytes/s (FLOP per byte)."""
        return self.tflops(compute_dtype) * 1e12 / self.hbm_bytes_per_s


class ClusterSpec(BaseModel):
    """num_nodes x gpus_per_node GPUs of one type."""

    model_config = _FROZEN

    gpu: GPUSpec
    num_nodes: Annotated[int, Field(ge=1, le=4096)] = 1
    gpus_per_node: Annotated[int, Field(ge=1, le=1024)] = 8

    @model_validator(mode="after")
    def _check(self) -> ClusterSpec:
        if self.total_gpus > 65_536:
            raise ValueError(f"cluster of {self.total_gpus} GPUs exceeds the 65,536 supported")
        return self

    @property
    def total_gpus(self) -> int:
        return self.num_nodes * self.gpus_per_node

    @property
    def scale_up_domain_gpus(self) -> int:
        """GPUs that share the fast domain (NVLink / Infinity Fabric): at least a node, at most the
        GPU's domain (72 for an NVL72 rack), never more than the cluster."""
        return min(self.total_gpus, max(self.gpus_per_node, self.gpu.scale_up_domain_gpus))

    @property
    def hbm_total_gb(self) -> float:
        return self.total_gpus * self.gpu.hbm_capacity_gb


DtypeName = Literal[
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "int8",
    "int4",
    "nvfp4",
    "mxfp4",
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q4_k_m",
    "iq4_xs",
    "q3_k_m",
    "iq3_xxs",
    "q2_k",
    "iq2_xs",
    "iq2_xxs",
    "iq1_s",
]
KVDtypeName = Literal["bf16", "fp16", "fp8", "int8"]


class Precision(BaseModel):
    """Storage dtypes: weights, routed experts (if different), KV cache, all-to-all dispatch."""

    model_config = _FROZEN

    weights: DtypeName = "bf16"
    routed_experts: DtypeName | None = Field(
        None, description="routed-expert dtype when it differs from the rest (e.g. int4 experts)"
    )
    kv_cache: KVDtypeName = "bf16"
    dispatch: Literal["bf16", "fp8", "nvfp4"] = "bf16"

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
        return f"{s}, KV {self.kv_cache}"


class Workload(BaseModel):
    """Concurrent sequences and their lengths, in tokens."""

    model_config = _FROZEN

    batch: Annotated[int, Field(ge=1, le=1_000_000)] = 64
    input_len: Annotated[int, Field(ge=1, le=10_000_000)] = 2048
    output_len: Annotated[int, Field(ge=1, le=10_000_000)] = 512

    @property
    def context_len(self) -> int:
        """Tokens a sequence holds at its end: the whole prompt and every output token."""
        return self.input_len + self.output_len

    @property
    def decode_context_len(self) -> int:
        """The mean context a decode step attends to: the prompt and half the output (``input + output // 2``)."""
        return self.input_len + self.output_len // 2


class ParallelLayout(BaseModel):
    """How one replica is split: attention TP x attention DP = expert TP x EP, then PP, then DP."""

    model_config = _FROZEN

    attention_tp: PosInt = 1
    attention_dp: PosInt = 1
    ep: PosInt = 1
    expert_tp: PosInt = 1
    pp: PosInt = 1
    dp: PosInt = 1

    @model_validator(mode="after")
    def _check(self) -> ParallelLayout:
        attn = self.attention_tp * self.attention_dp
        experts = self.ep * self.expert_tp
        if attn != experts:
            raise ValueError(
                f"attention_tp x attention_dp ({attn}) must equal ep x expert_tp ({experts}): "
                "both split the same GPUs of one pipeline stage"
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
SPEC_METHOD_KINDS: dict[str, str] = {
    "none": "none",
    "draft_model": "draft_model",
    "medusa": "eagle",
    "eagle": "eagle",
    "eagle3": "eagle",
    "p_eagle": "eagle",
    "mtp": "mtp",
    "ngram": "ngram",
    "lookahead": "ngram",
    "suffix": "ngram",
}
SpecMethodName = Literal[
    "none", "draft_model", "medusa", "eagle", "eagle3", "p_eagle", "mtp", "ngram", "lookahead", "suffix"
]


class SpecDecodeConfig(BaseModel):
    """Speculative decoding: which draft, how many tokens it proposes per step (gamma)."""

    model_config = _FROZEN

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

    model_config = _FROZEN

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

    model_config = _FROZEN

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

    model_config = _FROZEN

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

    model_config = _FROZEN

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


class HostSpec(BaseModel):
    """A single-box host: CPU memory (``discrete``, beside a PCIe GPU) or one unified CPU/GPU pool.

    Peak bandwidth is derived, never typed: ``bus_width_bits / 8 x mts`` (a DDR5 channel is 64 bits)."""

    model_config = _FROZEN

    id: str = Field(min_length=1, max_length=120, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str = Field(min_length=1, max_length=200)
    kind: Literal["discrete", "unified"]
    memory_gb: Annotated[float, Field(gt=0, le=100_000)]
    memory_type: str = ""
    bus_width_bits: Annotated[int, Field(gt=0, le=65_536)]
    mts: Annotated[int, Field(gt=0, le=100_000)] = Field(description="transfers per second, millions (DDR5-4800: 4800)")
    cpu_tflops: Annotated[float, Field(gt=0, le=10_000)] | None = Field(
        None, description="dense fp32 matmul peak of the CPU (discrete hosts): bounds CPU prompt processing"
    )
    igpu_tflops: Annotated[float, Field(gt=0, le=10_000)] | None = Field(
        None, description="dense fp16/bf16 peak of the integrated GPU (unified hosts)"
    )
    gpu_share: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None, description="fraction of a unified pool the GPU may use by default"
    )
    pcie_gbps: Annotated[float, Field(gt=0, le=10_000)] | None = Field(
        None, description="host-side PCIe link to the GPU, GB/s per direction (discrete hosts)"
    )
    notes: str = ""
    sources: dict[str, str] = Field(default_factory=dict)
    confidence: str = ""

    _divisors = field_validator("memory_gb", "cpu_tflops", "igpu_tflops", "gpu_share", "pcie_gbps")(_not_vanishing)

    @model_validator(mode="after")
    def _check_kind(self) -> HostSpec:
        if self.kind == "unified" and (self.gpu_share is None or self.igpu_tflops is None):
            raise ValueError("a unified host needs gpu_share and igpu_tflops")
        if self.kind == "discrete" and (self.cpu_tflops is None or self.pcie_gbps is None):
            raise ValueError("a discrete host needs cpu_tflops and pcie_gbps")
        return self

    @property
    def peak_bandwidth_gbps(self) -> float:
        """Peak memory bandwidth, GB/s: bus bytes per transfer x MT/s / 1000."""
        return self.bus_width_bits / 8 * self.mts / 1000

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * 1e9


class InterconnectSpec(BaseModel):
    """A link: NVLink generation, InfiniBand / RoCE port, PCIe slot. Bandwidth per direction."""

    model_config = _FROZEN

    id: str = Field(min_length=1, max_length=60, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str = Field(min_length=1)
    kind: Literal["scale_up", "scale_out", "host"]
    bw_gbps_per_direction: Annotated[float, Field(gt=0, le=100_000)]
    nominal: str = ""
    latency_us: Annotated[float, Field(ge=0, le=10_000)] | None = None
    source: str = ""
    notes: str = ""

    _divisors = field_validator("bw_gbps_per_direction")(_not_vanishing)


class KernelFactors(BaseModel):
    """Achieved fractions of a GPU's peaks for one kernel family, plus a fixed floor per call
    (launch, synchronisation, pipeline fill) that no amount of bandwidth removes."""

    model_config = _FROZEN

    compute_eff: Annotated[float, Field(gt=0, le=1.2)] = 0.6
    mem_eff: Annotated[float, Field(gt=0, le=1.2)] = 0.8
    floor_us: Annotated[float, Field(ge=0, le=100_000)] = 0.0

    _divisors = field_validator("compute_eff", "mem_eff")(_not_vanishing)


class LinkFactors(BaseModel):
    """Achieved fraction of the scale-up and scale-out bandwidth, and the fixed latency per call."""

    model_config = _FROZEN

    scale_up_eff: Annotated[float, Field(gt=0, le=1.5)] = 0.8
    scale_out_eff: Annotated[float, Field(gt=0, le=1.5)] = 0.8
    latency_us: Annotated[float, Field(ge=0, le=100_000)] = 10.0

    _divisors = field_validator("scale_up_eff", "scale_out_eff")(_not_vanishing)


class SystemFactors(BaseModel):
    """Whole-step effects: fixed time per layer outside the big kernels (norms, RoPE, router top-k,
    residual adds, their launches), the share of communication that two-batch overlap hides, and the
    micro-batches a pipeline keeps in flight per stage (a stated assumption: continuous batching in decode,
    prompt chunks in prefill)."""

    model_config = _FROZEN

    layer_overhead_us: Annotated[float, Field(ge=0, le=100_000)] = 20.0
    overlap_eff: Annotated[float, Field(ge=0, le=1)] = 0.8
    decode_microbatches_per_stage: Annotated[float, Field(ge=1, le=1_000)] = 2.0
    prefill_microbatches_per_stage: Annotated[float, Field(ge=1, le=1_000)] = 8.0


EFFICIENCY_FAMILIES = (
    "grouped_gemm_decode",
    "grouped_gemm_prefill",
    "dense_gemm",
    "attention_decode",
    "attention_prefill",
    "alltoall_low_latency",
    "alltoall_normal",
    "allreduce",
    "system",
)


class EfficiencyProfile(BaseModel):
    """Efficiency factors of one GPU type under one serving stack (``catalogs/efficiency.yaml``).
    A family left out is inherited from ``inherits`` (the closest relative), and said so."""

    model_config = _FROZEN

    gpu: str
    stack: str
    inherits: str | None = None
    grouped_gemm_decode: KernelFactors | None = None
    grouped_gemm_prefill: KernelFactors | None = None
    dense_gemm: KernelFactors | None = None
    attention_decode: KernelFactors | None = None
    attention_prefill: KernelFactors | None = None
    alltoall_low_latency: LinkFactors | None = None
    alltoall_normal: LinkFactors | None = None
    allreduce: LinkFactors | None = None
    system: SystemFactors | None = None
    provenance: dict[str, str] = Field(default_factory=dict)
    notes: str = ""
