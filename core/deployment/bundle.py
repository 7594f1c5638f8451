"""One deployment, resolved once: the model, the GPU, the cluster, the layout, the precision, the workload, the
memory assumptions, the speculative config and its draft, and the efficiency factors of the GPU under the
serving stack, in one frozen value (:class:`Deployment`).

The pages, the CLI and the report build it once from a scenario (:func:`core.scenario.resolve`: the id lookups,
the default layout and the efficiency inheritance happen there, once); the formulas above the primitives take
``(deployment, what varies)``: ``perf.step_time(d, cfg)``, ``serving.replica_costs(d, ...)``. What a search
varies it replaces: :meth:`Deployment.with_layout`. The layout's validity for the model (and the precision's
block splits) is checked once, in the constructor.

The builder from a scenario lives in ``core.scenario`` rather than here as a classmethod: the default layout is
the layout search's best plan (``core.serving``), which stands above this package.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core._util.checks import whole
from core.deployment.calibration import ServedCalibration
from core.deployment.parallel import check_layout
from core.deployment.specs import MemoryAssumptions, ParallelLayout, Precision, SpecDecodeConfig, Workload
from core.hardware import ClusterSpec, GPUSpec
from core.hardware.efficiency import IDEAL, KERNEL_PATHS, Efficiency
from core.hardware.served_step import ServedStepCost
from core.model import ModelSpec

__all__ = ["Deployment", "InvalidLayout"]


class InvalidLayout(ValueError):
    """A layout the model (or its quantised blocks) cannot run; the message lists every problem."""


@dataclass(frozen=True, eq=False)
class Deployment:
    """What is deployed, resolved: ``layout`` is the one in force (the default one already chosen), ``precision``
    a :class:`Precision` (its ``linear_state`` already applied to ``model``'s linear-attention layers),
    ``efficiency`` the GPU's factors under the serving stack (inheritance resolved), ``kernel_path`` the MoE kernel
    path the engine runs where it is not the stack's for the layout, ``draft`` the separate draft model the speculative config names (None for MTP / EAGLE / n-gram / none),
    ``calibration`` the scales fitted on one's own benchmark results (the step model multiplies its step times),
    ``served_step`` the engine's per-step costs a served decode step adds to the kernels (None: kernels alone).

    ``domain_gpus`` is the scale-up domain the step model times collectives over: the cluster's where there is
    one, else the GPU's own (a node, or an NVL72 rack). Equality and hashing are by identity (a deployment is
    built once and passed on; caches key on it)."""

    model: ModelSpec
    gpu: GPUSpec
    layout: ParallelLayout
    precision: Precision = field(default_factory=Precision)
    efficiency: Efficiency = IDEAL
    cluster: ClusterSpec | None = None
    workload: Workload = field(default_factory=Workload)
    assumptions: MemoryAssumptions = field(default_factory=MemoryAssumptions)
    spec: SpecDecodeConfig = field(default_factory=SpecDecodeConfig)
    draft: ModelSpec | None = None
    domain_gpus: int | None = None
    redundant_experts: int | None = None  # None: the memory assumptions'
    calibration: ServedCalibration | None = None  # step-time scales fitted on one's own benchmark results
    # what a served decode step pays beyond the kernels under the stack (scheduling, sampling, graph replay), fitted
    # on published batch-1 measurements (core.hardware.served_step); None: the kernel step alone (kernel tables)
    served_step: ServedStepCost | None = None
    # the MoE kernel path the engine runs where it is not the stack's for the layout (a recipe's MoE backend, an
    # engine version's default; core.hardware.efficiency.KERNEL_PATHS); None: the stack's
    kernel_path: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "precision", Precision.of(self.precision))
        if self.precision.linear_state:  # the engine's recurrent-state dtype, resolved into the model once
            object.__setattr__(self, "model", self.model.with_state_dtype(self.precision.linear_state))
        if self.kernel_path is not None and self.kernel_path not in KERNEL_PATHS:
            raise ValueError(f"kernel_path must be one of {', '.join(KERNEL_PATHS)} or None, got {self.kernel_path!r}")
        if self.cluster is not None and self.cluster.gpu.id != self.gpu.id:
            raise ValueError(f"the cluster's GPU ({self.cluster.gpu.id}) is not the deployment's ({self.gpu.id})")
        if self.domain_gpus is not None:
            whole("domain_gpus", self.domain_gpus, 1, 100_000)
        if self.redundant_experts is None:
            object.__setattr__(self, "redundant_experts", self.assumptions.redundant_experts)
        problems = check_layout(self.model, self.layout, self.redundant_experts, self.precision)
        if problems:
            raise InvalidLayout("invalid layout for " + self.model.name + ": " + "; ".join(problems))

    @property
    def domain(self) -> int:
        """GPUs per scale-up domain the collectives run over (see the class docstring)."""
        if self.domain_gpus is not None:
            return self.domain_gpus
        if self.cluster is not None:
            return self.cluster.scale_up_domain_gpus
        return max(self.gpu.gpus_per_node, self.gpu.scale_up_domain_gpus)

    @property
    def moe_path(self) -> str:
        """The MoE kernel path the engine runs: ``kernel_path`` where set, else the stack's for the layout."""
        lay = self.layout
        return self.kernel_path or self.efficiency.path(
            lay.attention_dp, lay.ep, lay.expert_tp, self.precision.expert_dtype
        )

    @property
    def stack(self) -> str:
        """The serving stack whose kernels time the steps."""
        return self.efficiency.stack

    def with_layout(self, layout: ParallelLayout, redundant_experts: int | None = None) -> Deployment:
        """The same deployment under another layout (what the layout search varies), with ``redundant_experts``
        slots where given (else the memory assumptions')."""
        return replace(self, layout=layout, redundant_experts=redundant_experts)

    def with_(self, **changes) -> Deployment:
        """The same deployment with some fields replaced (each checked again)."""
        if "layout" in changes and "redundant_experts" not in changes:
            changes["redundant_experts"] = None
        return replace(self, **changes)
