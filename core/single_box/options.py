"""What-ifs on one box: decode speed against ``--n-cpu-moe``, every single-box option, and what one upgrade
buys.

Each answer is a list of :class:`~core.single_box.placement.Placement` s from :func:`core.single_box.offload.placement`.
These were part of :mod:`core.single_box.offload`, which re-exports them (``offload.single_box_options`` still works);
because it does, this module imports ``core.single_box.offload`` inside its functions, not at load time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.deployment.specs import GPUSpec, HostSpec, ModelSpec, Precision
from core.single_box.placement import Placement

if TYPE_CHECKING:
    from core.hardware.offload_efficiency import OffloadEfficiency

__all__ = ["single_box_options", "speed_vs_offload", "upgrades"]


def speed_vs_offload(
    model: ModelSpec,
    host: HostSpec,
    precision: Precision | str,
    *,
    gpu: GPUSpec,
    n_gpus: int = 1,
    context_len: int = 8192,
    eff: OffloadEfficiency | None = None,
) -> list[Placement]:
    """One placement per ``--n-cpu-moe`` value at each MoE layer boundary (0 = all on the GPU)."""
    # at call time: core.single_box.offload re-exports this module
    from core.single_box.offload import moe_layer_indices, placement

    values = [0] + [i + 1 for i in moe_layer_indices(model)]
    return [
        placement(model, host, precision, gpu=gpu, n_gpus=n_gpus, n_cpu_moe=n, context_len=context_len, eff=eff)
        for n in values
    ]


def single_box_options(
    model: ModelSpec,
    hosts: list[HostSpec],
    gpus: dict[str, GPUSpec],
    precision: Precision | str,
    *,
    context_len: int = 8192,
    eff: OffloadEfficiency | None = None,
) -> list[Placement]:
    """Every single-box option: each discrete host with 1 and 2 of each single-box card (``GPUSpec.single_box``,
    at its best ``--n-cpu-moe``), and each unified machine."""
    # at call time: core.single_box.offload re-exports this module
    from core.single_box.offload import placement

    out: list[Placement] = []
    for host in hosts:
        if host.kind == "unified":
            out.append(placement(model, host, precision, context_len=context_len, eff=eff))
            continue
        for gid in sorted(g for g, spec in gpus.items() if spec.single_box):
            for n in (1, 2):
                out.append(placement(model, host, precision, gpu=gpus[gid], n_gpus=n, context_len=context_len, eff=eff))
    return out


def upgrades(
    model: ModelSpec,
    pl: Placement,
    hosts: dict[str, HostSpec],
    gpus: dict[str, GPUSpec],
    precision: Precision | str,
    eff: OffloadEfficiency | None = None,
) -> list[dict]:
    """What one change to a discrete box buys: one more GPU of the same kind, and each host with more
    memory bandwidth. Rows: change, placement, decode_speedup (new tokens/s / current)."""
    # at call time: core.single_box.offload re-exports this module
    from core.single_box.offload import placement

    if pl.kind != "discrete":
        return []
    if pl.host_id not in hosts or pl.gpu_id not in gpus:
        raise ValueError(
            f"the placement's host {pl.host_id!r} or GPU {pl.gpu_id!r} is not among the hosts / GPUs given"
        )
    base_host = hosts[pl.host_id]
    out = []
    if pl.n_gpus < 4:
        new = placement(
            model, base_host, precision, gpu=gpus[pl.gpu_id], n_gpus=pl.n_gpus + 1, context_len=pl.context_len, eff=eff
        )
        out.append({"change": f"one more {gpus[pl.gpu_id].name}", "placement": new})
    for h in hosts.values():
        if h.kind != "discrete" or h.id == base_host.id or h.peak_bandwidth_gbps <= base_host.peak_bandwidth_gbps:
            continue
        new = placement(model, h, precision, gpu=gpus[pl.gpu_id], n_gpus=pl.n_gpus, context_len=pl.context_len, eff=eff)
        out.append({"change": f"host: {h.name}", "placement": new})
    for row in out:
        row["decode_speedup"] = row["placement"].decode_tokens_per_s / pl.decode_tokens_per_s
    return out
