"""The hardware: an accelerator (per-device datasheet figures, per direction, dense TFLOPS; a GPU, or a Google
TPU / AWS Trainium chip with its own serving stack), a cluster of them, a single-box host, a link; and how a GPU
executes a storage dtype (natively on its tensor cores, weight-only or emulated), which the memory notes, the
step-time model, the roofline and the single-box page use.

Device memory has two figures: ``hbm_capacity_gb`` is the marketed size, ``runtime_memory_bytes`` what the
runtime reports to the serving engine (CUDA's ``cudaMemGetInfo`` total, the ``total_memory`` of
``torch.cuda.get_device_properties``, which vLLM's ``gpu_memory_utilization`` multiplies): a little less, since
the driver keeps some. Every budget starts from the latter (``GPUSpec.memory_bytes``).

Units live in the names: ``_gb`` decimal gigabytes (1e9 bytes), ``_gbps`` decimal gigabytes per second,
``_tflops`` 1e12 FLOP/s (dense, no 2:4 sparsity), ``_w`` watts, ``_usd`` US dollars.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from core._util.validated import FROZEN, MIN_DIVISOR, not_vanishing
from core.model.dtypes import COMPUTE_DTYPES, GGUF_DTYPES

__all__ = [
    "RUNTIME_MEMORY_RATIO_HIGH",
    "RUNTIME_MEMORY_RATIO_LOW",
    "ClusterSpec",
    "GPUSpec",
    "HostLink",
    "HostSpec",
    "InterconnectSpec",
    "PrecisionSupport",
    "precision_support",
]


#: runtime memory must lie within (LOW, HIGH] x the marketed size read as GiB: catches typos (a GB figure for a
#: MiB one, a dropped digit) while leaving room for drivers that keep up to ~8% (unified-memory parts).
RUNTIME_MEMORY_RATIO_LOW = 0.8
RUNTIME_MEMORY_RATIO_HIGH = 1.02


class HostLink(BaseModel):
    """An accelerator's link to host (CPU) memory, per direction: what the host tier of a model's lookup tables
    (:mod:`core.memory.host_tables`) is read over. PCIe on an x86 server, NVLink-C2C on Grace / Vera superchips, the
    memory itself on a unified part. ``source`` says where the figure was read, or states the assumption;
    ``confidence`` grades this link alone (the accelerator's own ``confidence`` grades its other fields)."""

    model_config = FROZEN

    name: str = Field(min_length=1, max_length=60, description='"PCIe Gen5 x16", "NVLink-C2C", "unified LPDDR5X"')
    gbps_per_direction: Annotated[float, Field(gt=0, le=100_000)]
    source: str = Field(min_length=1, max_length=2_000)
    confidence: Literal["primary", "secondary", "unverified"] = "unverified"

    _divisors = field_validator("gbps_per_direction")(not_vanishing)


class GPUSpec(BaseModel):
    """One accelerator, per device. Bandwidths are per direction; TFLOPS dense (no sparsity)."""

    model_config = FROZEN

    id: str = Field(min_length=1, max_length=60, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str = Field(min_length=1)
    vendor: Literal["nvidia", "amd", "google", "amazon", "other"] = "nvidia"
    accelerator: Literal["gpu", "tpu", "trainium"] = Field(
        "gpu", description="a GPU, or a chip served by its own stack (TPU: vLLM TPU / JetStream; Trainium: Neuron)"
    )
    serving_stack: str = Field(
        "", max_length=120, description="the serving stack when not the GPU engines (vLLM / SGLang / TensorRT-LLM)"
    )
    architecture: str = ""
    release_year: Annotated[int, Field(ge=2010, le=2035)] | None = None
    hbm_capacity_gb: Annotated[float, Field(gt=0, le=10_000, description="the marketed device memory (nominal GB)")]
    memory_type: str = Field("HBM", max_length=40, description="the device memory's kind: HBM3e, GDDR6X, ...")
    hbm_capacity_note: str = ""
    runtime_memory_bytes: Annotated[int, Field(gt=0, le=10**14)] | None = Field(
        None,
        description="total device memory in bytes as CUDA / ROCm (or the TPU / Neuron runtime) reports it to the "
        "serving engine: the base of every budget. Default: hbm_capacity_gb read as GiB (catalog entries set it)",
    )
    hbm_bandwidth_gbps: Annotated[float, Field(gt=0, le=1_000_000)]
    dense_tflops: dict[Literal["bf16", "fp16", "fp8", "int8", "fp4"], Annotated[float, Field(gt=0, le=1_000_000)]]
    scale_up_link: str = ""
    scale_up_bw_gbps: Annotated[float, Field(gt=0, le=100_000)]
    scale_up_domain_gpus: Annotated[int, Field(ge=1, le=100_000)] = 8
    gpus_per_node: Annotated[int, Field(ge=1, le=1024)] = 8
    scale_out_link: str = ""
    scale_out_bw_gbps: Annotated[float, Field(gt=0, le=100_000)]
    single_box: bool = Field(False, description="a PCIe card for one box beside host RAM (the Single box page)")
    host_link: HostLink | None = Field(
        None,
        description="the link to host memory (catalog entries set it); None: PCIe Gen5 x16 at 64 GB/s per "
        "direction is assumed (core.memory.host_tables.host_link)",
    )
    power_w: Annotated[float, Field(gt=0, le=100_000)] | None = None
    price_per_gpu_hour_usd: Annotated[float, Field(ge=0, le=10_000)] = 0.0
    price_source: str = ""
    sources: dict[str, str] = Field(default_factory=dict)
    confidence: Literal["primary", "secondary", "unverified"] = "unverified"
    notes: str = ""

    _divisors = field_validator(
        "hbm_capacity_gb", "hbm_bandwidth_gbps", "scale_up_bw_gbps", "scale_out_bw_gbps", "power_w"
    )(not_vanishing)

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
        if self.runtime_memory_bytes is not None:
            marketed = self.hbm_capacity_gb * 2**30
            lo, hi = RUNTIME_MEMORY_RATIO_LOW * marketed, RUNTIME_MEMORY_RATIO_HIGH * marketed
            if not lo < self.runtime_memory_bytes <= hi:
                raise ValueError(
                    f"runtime_memory_bytes {self.runtime_memory_bytes:,} ({self.runtime_memory_bytes / 2**30:,.2f} GiB) "
                    f"is not within {RUNTIME_MEMORY_RATIO_LOW:g}-{RUNTIME_MEMORY_RATIO_HIGH:g} x the marketed "
                    f"{self.hbm_capacity_gb:g} GB read as GiB: a typo?"
                )
        return self

    @property
    def short_name(self) -> str:
        """The name without its parenthesised detail ("H200" of "H200 (141 GB HBM3e)"), for chart titles."""
        return self.name.split(" (")[0]

    @property
    def memory_bytes(self) -> int:
        """Device memory in bytes as the runtime reports it (what vLLM's gpu_memory_utilization is a fraction of)."""
        if self.runtime_memory_bytes is not None:
            return self.runtime_memory_bytes
        return int(self.hbm_capacity_gb * 2**30)

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

    model_config = FROZEN

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
        """The datasheet's memory over the cluster (marketed GB)."""
        return self.total_gpus * self.gpu.hbm_capacity_gb

    @property
    def memory_gb(self) -> float:
        """Device memory over the cluster as the runtime sees it (decimal GB): what every budget divides."""
        return self.total_gpus * self.gpu.memory_gb


class HostSpec(BaseModel):
    """A single-box host: CPU memory (``discrete``, beside a PCIe GPU) or one unified CPU/GPU pool.

    Peak bandwidth is derived, never typed: ``bus_width_bits / 8 x mts`` (a DDR5 channel is 64 bits)."""

    model_config = FROZEN

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

    _divisors = field_validator("memory_gb", "cpu_tflops", "igpu_tflops", "gpu_share", "pcie_gbps")(not_vanishing)

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

    model_config = FROZEN

    id: str = Field(min_length=1, max_length=60, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str = Field(min_length=1)
    kind: Literal["scale_up", "scale_out", "host"]
    bw_gbps_per_direction: Annotated[float, Field(gt=0, le=100_000)]
    nominal: str = ""
    latency_us: Annotated[float, Field(ge=0, le=10_000)] | None = None
    source: str = ""
    notes: str = ""

    _divisors = field_validator("bw_gbps_per_direction")(not_vanishing)


@dataclass(frozen=True)
class PrecisionSupport:
    """Whether a GPU runs a storage dtype natively, weight-only (dequantised) or emulated."""

    dtype: str
    status: str  # "native" | "weight_only" | "emulated"
    compute_dtype: str
    message: str

    @property
    def native(self) -> bool:
        return self.status == "native"


def precision_support(gpu: GPUSpec, dtype: str) -> PrecisionSupport:
    """How ``gpu`` executes weights stored as ``dtype``.

    fp8 needs Hopper/Ada/Blackwell/CDNA3 tensor cores; fp4 (nvfp4, mxfp4) needs Blackwell (NVIDIA) or
    MI355X (MXFP4 only). Without them the engines still run such checkpoints weight-only (e.g. vLLM's
    Marlin kernels dequantise FP8 / FP4 weights to bf16): the memory saving holds, the compute runs in
    bf16, and the app marks the cell "emulated". int4 (AWQ/GPTQ) is weight-only everywhere (W4A16).
    """
    half = "bf16" if gpu.supports("bf16") else "fp16"
    if dtype in ("fp32", "bf16", "fp16"):
        return PrecisionSupport(dtype, "native", half, f"{dtype} runs natively on {gpu.name}")
    if dtype in ("fp8", "int8"):
        if gpu.supports(dtype):
            return PrecisionSupport(dtype, "native", dtype, f"{dtype} tensor cores on {gpu.name}")
        return PrecisionSupport(
            dtype,
            "emulated",
            half,
            f"{gpu.name} has no {dtype} tensor cores: {dtype} weights run weight-only (dequantised to {half}); "
            "memory is saved, compute is not",
        )
    if dtype == "int4":
        return PrecisionSupport(
            dtype, "weight_only", half, f"int4 (AWQ/GPTQ) is weight-only: dequantised to {half} in the GEMM (W4A16)"
        )
    if dtype in GGUF_DTYPES:
        return PrecisionSupport(
            dtype,
            "weight_only",
            half,
            f"{dtype} is a llama.cpp GGUF type: weight-only, dequantised in the kernel (llama.cpp, not vLLM/SGLang)",
        )
    if dtype in ("nvfp4", "mxfp4"):
        if gpu.supports("fp4") and (dtype == "mxfp4" or gpu.vendor == "nvidia"):
            return PrecisionSupport(dtype, "native", "fp4", f"{dtype} tensor cores on {gpu.name}")
        return PrecisionSupport(
            dtype,
            "emulated",
            half,
            f"{gpu.name} has no native {dtype} tensor cores (Blackwell or, for mxfp4, MI355X): weight-only, "
            f"dequantised to {half}",
        )
    raise ValueError(
        f"unknown dtype {dtype!r}; allowed: fp32, bf16, fp16, fp8, int8, int4, nvfp4, mxfp4, " + ", ".join(GGUF_DTYPES)
    )
