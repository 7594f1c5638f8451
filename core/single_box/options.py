"""What-ifs on one box: decode speed against ``--n-cpu-moe``, every single-box option, and what one upgrade
buys.

Each answer is a list of :class:`~core.single_box.placement.Placement` s from :func:`core.single_box.offload.placement`.
"""

from __future__ import annotations

from core.hardware import GPUSpec, HostSpec
from core.single_box.box import Box
from core.single_box.offload import moe_layer_indices, placement
from core.single_box.placement import Placement

__all__ = ["single_box_options", "speed_vs_offload", "upgrades"]


def _box(box) -> Box:
    if not isinstance(box, Box):
        raise ValueError(f"box must be a Box, got {type(box).__name__}")
    return box


def speed_vs_offload(box: Box) -> list[Placement]:
    """One placement of ``box`` per ``--n-cpu-moe`` value at each MoE layer boundary (0 = all on the GPU)."""
    # at call time: core.single_box.offload re-exports this module

    if not _box(box).discrete:
        raise ValueError(f"{box.host.name} is a unified-memory machine: nothing goes to host RAM (no --n-cpu-moe)")
    return [placement(box, n) for n in [0] + [i + 1 for i in moe_layer_indices(box.model)]]


def single_box_options(box: Box, hosts: list[HostSpec], gpus: dict[str, GPUSpec]) -> list[Placement]:
    """Every single-box option for ``box``'s model, quantisation, context and factors: each discrete host of
    ``hosts`` with 1 and 2 of each single-box card of ``gpus`` (``GPUSpec.single_box``, at its best
    ``--n-cpu-moe``), and each unified machine."""
    # at call time: core.single_box.offload re-exports this module

    _box(box)
    out: list[Placement] = []
    for host in hosts:
        if host.kind == "unified":
            out.append(placement(box.with_(host=host, gpu=None, n_gpus=1)))
            continue
        for gid in sorted(g for g, spec in gpus.items() if spec.single_box):
            for n in (1, 2):
                out.append(placement(box.with_(host=host, gpu=gpus[gid], n_gpus=n)))
    return out


def upgrades(box: Box, hosts: dict[str, HostSpec], n_cpu_moe: int | None = None) -> list[dict]:
    """What one change to a discrete ``box`` (placed with ``n_cpu_moe``, None: its best) buys: one more GPU of the
    same kind, and each host of ``hosts`` with more memory bandwidth. Rows: change, placement, decode_speedup
    (new tokens/s / current)."""
    # at call time: core.single_box.offload re-exports this module

    if not _box(box).discrete:
        return []
    pl = placement(box, n_cpu_moe)
    out = []
    if box.n_gpus < 4:
        out.append({"change": f"one more {box.gpu.name}", "placement": placement(box.with_(n_gpus=box.n_gpus + 1))})
    for h in hosts.values():
        if h.kind != "discrete" or h.id == box.host.id or h.peak_bandwidth_gbps <= box.host.peak_bandwidth_gbps:
            continue
        out.append({"change": f"host: {h.name}", "placement": placement(box.with_(host=h))})
    for row in out:
        row["decode_speedup"] = row["placement"].decode_tokens_per_s / pl.decode_tokens_per_s
    return out
