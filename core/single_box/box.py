"""One single box, resolved once: the model, the host, the GPU beside it (None on a unified-memory machine) and how
many, the quantisation (with the KV cache's dtype), the context one sequence holds, and the offload efficiency
factors, in one frozen value (:class:`Box`).

The Single box page and the report build it once from the scenario's box settings (``Scenario.box``); the
single-box formulas take ``(box, what varies)``: ``placement(box, n_cpu_moe)``, ``best_n_cpu_moe(box)``,
``speed_vs_offload(box)``, ``upgrades(box, hosts)``, ``single_box_options(box, hosts, gpus)``. The box's own checks
(an MoE model, a context and a GPU count in range, a GPU on a CPU host and none on a unified machine) run once, in
its constructor."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core._util.checks import is_whole
from core.deployment.specs import Precision
from core.hardware import GPUSpec, HostSpec
from core.hardware.offload_efficiency import OffloadEfficiency
from core.model import ModelSpec

__all__ = ["Box"]


@dataclass(frozen=True, eq=False)
class Box:
    """One box: ``model`` on ``host`` with ``n_gpus`` x ``gpu`` (a discrete host; None on a unified-memory machine,
    whose GPU shares the pool), weights and KV cache in ``precision`` (a :class:`Precision`, or a dtype name for
    every weight), one sequence of ``context_len`` tokens (batch 1), ``eff`` the offload efficiency factors
    (default: the shipped ones). Equality and hashing are by identity, as for a deployment."""

    model: ModelSpec
    host: HostSpec
    gpu: GPUSpec | None = None
    n_gpus: int = 1
    precision: Precision | str = "q4_k_m"
    context_len: int = 8192
    eff: OffloadEfficiency = field(default_factory=OffloadEfficiency)

    def __post_init__(self):
        for name, value, kind in (("model", self.model, ModelSpec), ("host", self.host, HostSpec)):
            if not isinstance(value, kind):
                raise ValueError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
        if self.gpu is not None and not isinstance(self.gpu, GPUSpec):
            raise ValueError(f"gpu must be a GPUSpec or None, got {type(self.gpu).__name__}")
        if self.eff is None:
            object.__setattr__(self, "eff", OffloadEfficiency())
        elif not isinstance(self.eff, OffloadEfficiency):
            raise ValueError(f"eff must be an OffloadEfficiency, got {type(self.eff).__name__}")
        object.__setattr__(self, "precision", Precision.of(self.precision))
        model, host = self.model, self.host
        if not model.is_moe:
            raise ValueError(f"{model.name} is dense: expert offload applies to MoE models only")
        if not (is_whole(self.context_len) and 1 <= self.context_len <= 10_000_000):
            raise ValueError(f"context_len must be 1-10,000,000 tokens, got {self.context_len}")
        if not (is_whole(self.n_gpus) and self.n_gpus in (1, 2, 3, 4)):
            raise ValueError(f"a single box holds 1-4 GPUs here, got {self.n_gpus}")
        if host.kind == "unified" and self.gpu is not None:
            raise ValueError(f"{host.name} is a unified-memory machine: it has no separate GPU to pick")
        if host.kind != "unified" and self.gpu is None:
            raise ValueError(f"{host.name} is a CPU host: pick a GPU to go with it")

    @property
    def discrete(self) -> bool:
        """A CPU host with PCIe GPUs (experts may go to host RAM), not one unified pool."""
        return self.gpu is not None

    def with_(self, **changes) -> Box:
        """The same box with some fields replaced (each checked again): another host, one more GPU."""
        return replace(self, **changes)
