"""Where a model's stored extras live and what reading their rows costs (DeepSeek-V4.1's Engram, Qwen3.8-Flash-
Next's n-gram embedding: a :class:`core.model.LookupTables` extra; any extra whose ``lookups()`` read rows per token
is priced here, through the :class:`core.model.ModelExtra` interface).

A token reads ``rows_per_token`` rows of ``row_bytes`` from each table (V4.1: 2 tables x 24 rows x 264 B = 12,672 B;
Qwen3.8-Flash-Next: 16 x 320 B = 5,120 B). The rows depend only on the token ids, so an engine can issue the reads
when a step's tokens are known; the first layer that consumes a table waits for its rows. Three tiers, as vLLM's
``EngramConfig.table_memory`` offers them:

- ``gpu``: resident rows in HBM, sharded over the attention-TP group (one copy per replica): a gather at HBM speed,
  but ``table_bytes / tp`` of every GPU's memory.
- ``host``: pinned host DRAM, read by the GPU over its host link (PCIe, or NVLink-C2C on Grace parts), one copy per
  node (vLLM shares it between a node's replicas): the design intent and the planner's default. The link and its
  bandwidth are catalog data (``GPUSpec.host_link``, each with its source); a GPU without one (a user's own) is
  taken to sit on PCIe Gen5 x16 at 64 GB/s per direction (:func:`host_link`).
- ``disk``: NVMe, one 4-KiB random read per row (a 264-B row never spans fewer): bounded by the drives' IOPS.

Read time of one step on one GPU: ``latency + bytes / (link bandwidth x efficiency)`` (host; scattered 264-B reads
use a fraction of a link: ``SCATTER_EFF``), ``latency + rows / IOPS per GPU`` (disk), ``bytes / (HBM x 0.5)`` (gpu).
Exposed: the reads start with the step and each table's rows are due at its first consumer layer; the layers
before it (their share of the step's compute) hide that much. All efficiency and drive figures are stated
assumptions, not measurements (no engine publishes per-step Engram timings yet).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core._util.checks import amount
from core.deployment.bundle import Deployment
from core.hardware import GPUSpec
from core.model import ModelSpec

__all__ = [
    "DISK",
    "SCATTER_EFF",
    "TIERS",
    "Fetches",
    "TableTier",
    "TierCost",
    "host_link",
    "lookup_fetches",
    "table_read",
    "tier_costs",
]

TableTier = Literal["gpu", "host", "disk"]
# core.model.TIERS, in words
TIERS: dict[str, str] = {
    "gpu": "GPU memory (HBM), rows sharded over attention TP, one copy per replica",
    "host": "host DRAM (pinned), read over the GPU's host link, one copy per node",
    "disk": "NVMe SSDs, one random 4-KiB read per row",
}
# assumption: scattered reads of a few hundred bytes reach about half of a link's bandwidth (PCIe TLP and
# request overheads; UVA zero-copy gathers)
SCATTER_EFF = 0.5
# assumption: 8 PCIe Gen5 NVMe drives per 8-GPU node, 1.5M random 4-KiB reads/s each, 100 us per read
DISK = {"drives_per_node": 8, "iops_per_drive": 1.5e6, "latency_s": 100e-6}
_HBM_GATHER_EFF = 0.5  # assumption: row gathers from HBM at half its bandwidth
_LATENCY_S = {"gpu": 0.0, "host": 5e-6, "disk": DISK["latency_s"]}  # one step's first row, per tier
# assumption for a GPU whose spec carries no host link (a user's custom GPU): the common x86 server slot
_DEFAULT_HOST_LINK = ("PCIe Gen5 x16", 64.0)


def host_link(gpu: GPUSpec) -> tuple[str, float]:
    """The GPU's link to host memory and its bandwidth per direction (GB/s), as its catalog entry states it
    (``GPUSpec.host_link``: PCIe Gen4 / Gen5 / Gen6 x16 on x86 servers, NVLink-C2C on Grace / Vera superchips, the
    LPDDR5X pool itself on GB10). A GPU without one, such as a user's custom GPU, is assumed to sit on PCIe Gen5
    x16 at 64 GB/s per direction."""
    if gpu.host_link is None:
        return _DEFAULT_HOST_LINK
    return gpu.host_link.name, float(gpu.host_link.gbps_per_direction)


@dataclass(frozen=True)
class TierCost:
    """One tier for a model's tables at one step: where and how much, and the step's read time on one GPU."""

    tier: str
    where: str
    table_bytes: int  # every table, once
    gpu_bytes_per_gpu: float  # HBM the tables take on each GPU (gpu tier; 0 otherwise)
    host_bytes_per_node: float  # host DRAM per node (host tier; 0 otherwise)
    disk_bytes_per_node: float  # NVMe per node (disk tier)
    bytes_per_token: int
    rows_per_token: int
    read_s: float  # fetching one step's rows on one GPU
    exposed_s: float  # what the layers before each table's first consumer do not hide


@dataclass(frozen=True)
class Fetches:
    """One pass's row reads from a model's extras on one GPU (:func:`lookup_fetches`), in fetch order (one link, one
    queue: the rows due first are fetched first): each lookup's consumer layer and the seconds its rows take from
    ``tier``, and the tier's latency (0 when nothing is read). The kernels' accounting carries them
    (:class:`core.perf.kernels.LayerCosts`); :meth:`read` says what a step's compute does not hide."""

    tier: str
    due_layers: tuple[int, ...] = ()
    seconds: tuple[float, ...] = ()
    latency_s: float = 0.0

    def scaled(self, k: float) -> Fetches:
        """The reads of ``k`` such passes' tokens at once (a step's micro-batch of ``k`` overlapped halves)."""
        return Fetches(self.tier, self.due_layers, tuple(k * s for s in self.seconds), self.latency_s)

    def read(self, model: ModelSpec, step_compute_s: float, replayed: float = 1.0) -> tuple[float, float]:
        """(seconds to fetch every row, seconds of it exposed): the reads start with the step and each lookup's rows
        are due at its consumer layer, after the compute of the layers before it (their share of
        ``step_compute_s``; the layers from the model's ``split_layer`` on run ``replayed`` of the tokens)."""
        fetched, exposed, read = 0.0, 0.0, 0.0
        for layer, s in zip(self.due_layers, self.seconds, strict=True):
            fetched += s
            due = step_compute_s * _compute_share_before(model, layer, replayed)
            exposed = max(exposed, fetched - due)
            read = fetched
        if self.latency_s:
            read += self.latency_s
            exposed = max(0.0, exposed + self.latency_s)
        return read, max(0.0, exposed)


def lookup_fetches(d: Deployment, tier: str, tokens_per_gpu: float) -> Fetches:
    """The row reads of ``tokens_per_gpu`` tokens on one GPU of deployment ``d`` from ``tier``, for every lookup of
    the model's extras (``model.lookups``): ``rows / (HBM x 0.5)`` (gpu), ``bytes / (host link x SCATTER_EFF)``
    (host), ``rows / (the node's drive IOPS / its GPUs)`` (disk). Rows are sharded over the attention-TP group
    (vLLM: row-parallel, ceil-padded): each rank fetches the rows it owns of its group's tokens, 1 / tp of them:
    ``tokens_per_gpu`` x rows per token, as ``tokens_per_gpu`` is the group's tokens / tp (the step-time model's
    convention, :mod:`core.perf.kernels`)."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}, got {tier!r}")
    tokens = amount("tokens_per_gpu", tokens_per_gpu, 0.0, 1e9)
    gpu, lookups = d.gpu, d.model.lookups
    gpn = max(1, gpu.gpus_per_node)
    _, gbps = host_link(gpu)
    seconds = []
    for lk in lookups:
        rows = tokens * lk.rows_per_token
        if tier == "gpu":
            s = rows * lk.row_bytes / (gpu.hbm_bytes_per_s * _HBM_GATHER_EFF)
        elif tier == "host":
            s = rows * lk.row_bytes / (gbps * 1e9 * SCATTER_EFF)
        else:
            s = rows / (DISK["drives_per_node"] * DISK["iops_per_drive"] / gpn)
        seconds.append(s)
    latency = _LATENCY_S[tier] if lookups and tokens > 0 else 0.0
    return Fetches(tier, tuple(lk.due_layer for lk in lookups), tuple(seconds), latency)


def table_read(
    d: Deployment, tier: str, tokens_per_gpu: float, step_compute_s: float, replayed: float = 1.0
) -> TierCost:
    """One step's table reads on one GPU of deployment ``d`` from ``tier`` for ``tokens_per_gpu`` tokens
    (:func:`lookup_fetches`), the memory each tier takes (the layout's attention TP shards the HBM copy), and what
    of the reads the compute of the layers before each table's first consumer (their share of ``step_compute_s``)
    does not hide (:meth:`Fetches.read`). ``replayed``: the share of the step's tokens the layers after a causal
    encoder run (:func:`core.perf.replayed_fraction`; those layers' compute shrinks by it, so a table is due later
    in the step)."""
    model, gpu, attention_tp = d.model, d.gpu, d.layout.attention_tp
    fetches = lookup_fetches(d, tier, tokens_per_gpu)
    compute_s = amount("step_compute_s", step_compute_s, 0.0, 1e6)
    replayed = amount("replayed", replayed, 0.0, 1.0)
    read, exposed = fetches.read(model, compute_s, replayed)
    link, gbps = host_link(gpu)
    where = TIERS[tier] + (f" ({link}, {gbps:,.0f} GB/s per direction)" if tier == "host" else "")
    total = model.extra_bytes
    return TierCost(
        tier=tier,
        where=where,
        table_bytes=total,
        gpu_bytes_per_gpu=model.extra_hbm_bytes_per_rank(tier, attention_tp),
        host_bytes_per_node=float(total) if tier == "host" else 0.0,
        disk_bytes_per_node=float(total) if tier == "disk" else 0.0,
        bytes_per_token=sum(lk.rows_per_token * lk.row_bytes for lk in model.lookups),
        rows_per_token=sum(lk.rows_per_token for lk in model.lookups),
        read_s=read,
        exposed_s=exposed,
    )


def _compute_share_before(model: ModelSpec, layer: int, replayed: float) -> float:
    """The share of a step's compute in the layers before ``layer``: layers weigh alike, except those from the
    model's ``split_layer`` on (a causal encoder-decoder's decoder layers), which run ``replayed`` of the tokens."""
    enc = model.split_layer if replayed < 1.0 else model.num_layers
    before = min(layer, enc) + max(0, layer - enc) * replayed
    return before / (enc + (model.num_layers - enc) * replayed)


def tier_costs(d: Deployment, tokens_per_gpu: float, step_compute_s: float) -> tuple[TierCost, ...]:
    """:func:`table_read` for every tier, in the order of :data:`TIERS` (empty for a model whose extras read no
    rows)."""
    if not d.model.lookups:
        return ()
    return tuple(table_read(d, t, tokens_per_gpu, step_compute_s) for t in TIERS)
