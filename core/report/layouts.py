"""The report's words where the layout search finds nothing, and its minimum-GPU table (layouts review 3 M14):
kept apart from ``build`` so the section builder stays short."""

from __future__ import annotations

from collections import Counter

from core import memory
from core.deployment.bundle import Deployment
from core.deployment.specs import MemoryAssumptions, Workload

__all__: list[str] = []  # build_report's helpers, not a public API

# how a layout the weights do not fit is rejected (core.serving.operating_point.operating_point)
_WEIGHTS_SHORT = "does not fit:"
_ONE_TOKEN = Workload(batch=1, input_len=1, output_len=1)


def no_plan_text(d: Deployment, rejected: list) -> str:
    """Why no layout of ``d``'s cluster has a plan, from the search's ``rejected`` (layout, reason) pairs: when no
    layout holds the weights, memory, with the least weights per GPU any of them puts on a GPU against what is
    usable; else the commonest reasons."""
    if not rejected:
        return "none: no layout of this cluster was tried"
    if all(reason.startswith(_WEIGHTS_SHORT) for _, reason in rejected):
        mems = [memory.per_gpu_memory(d.with_layout(lay), _ONE_TOKEN) for lay, _ in rejected]
        least = min(mems, key=lambda r: r.weights_bytes)
        where = f"these {d.cluster.total_gpus:,} GPUs" if d.cluster is not None else "this cluster"
        return (
            f"none: memory. No layout holds the weights on {where}: at best "
            f"{least.weights_bytes / 1e9:,.1f} GB of weights per GPU against {least.usable_bytes / 1e9:,.1f} GB usable "
            "(the Fit section's table gives the fewest GPUs that hold them)"
        )
    common = Counter(reason for _, reason in rejected).most_common(3)
    return "none fits within the targets on this cluster; most common reasons: " + "; ".join(
        f"{reason} ({n} layout{'s' if n > 1 else ''})" for reason, n in common
    )


def min_gpu_rows(model, gpus: list, own_id: str, assumptions: MemoryAssumptions) -> list[dict]:
    """The minimum-GPU table: the eight GPUs with the most memory and the scenario's own (``own_id``, marked), most
    memory first; each precision's fewest GPUs (:func:`core.memory.min_gpus`), "> 1,024" beyond."""
    top = sorted(gpus, key=lambda g: -g.memory_bytes)[:8]
    if own_id not in {g.id for g in top}:
        top = sorted([*top, *(g for g in gpus if g.id == own_id)], key=lambda g: -g.memory_bytes)
    rows = []
    for g in top:
        row = {"GPU": g.name + (" (this scenario)" if g.id == own_id else "")}
        for label in ("bf16", "fp8", "nvfp4"):
            try:
                row[f"min GPUs {label}"] = memory.min_gpus(model, g, label, assumptions=assumptions, max_gpus=1024)
            except ValueError:
                row[f"min GPUs {label}"] = "> 1,024"
        rows.append(row)
    return rows
