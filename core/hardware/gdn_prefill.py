"""What a Gated DeltaNet layer (Qwen3.5, Qwen3-Next) costs in prefill beyond its projections (issue 35).

A GDN layer keeps no K/V cache: in prefill it runs a causal depthwise conv over its q/k/v channels and the chunked
gated delta rule, whose FLOPs are small beside the projections but whose kernels are not. NVIDIA aiconfigurator's
measured tables time both per stack: on a B200, 8,192 prompt tokens at 64 value heads per rank take 0.48 ms a layer
under vLLM 0.24.0 (FlashInfer's Blackwell kernel) and 1.07 ms under SGLang 0.5.14 (FLA's Triton kernel); the cost
is mostly per token whatever the heads (about 38 ns under vLLM on a B200), so tensor parallelism barely divides it.
``catalogs/gdn_prefill.yaml`` holds the fit per stack and GPU (``floor_s + tokens x (per_token_s + per_token_head_s x
value heads per rank)`` per layer, ``python -m bench.fit_gdn_prefill``); a GPU without a table takes the reference
GPU's cost scaled by HBM bandwidth, a stack without a fit the fallback stack's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from core._util.checks import amount, file_stamp, load_yaml
from core.hardware.gpu import GPUSpec

__all__ = ["GDN_PREFILL_PATH", "GdnPrefillCost", "gdn_prefill_cost"]

GDN_PREFILL_PATH = Path(__file__).resolve().parents[2] / "catalogs" / "gdn_prefill.yaml"
_FIELDS = ("floor_s", "per_token_s", "per_token_head_s")


@dataclass(frozen=True)
class GdnPrefillCost:
    """Seconds one GDN layer adds to a prefill pass on one GPU: ``floor_s + tokens x (per_token_s + per_token_head_s x
    value heads per rank)`` over the prompt tokens its attention group processes; ``source`` says where from."""

    floor_s: float
    per_token_s: float
    per_token_head_s: float
    source: str

    def layer_s(self, tokens: float, heads: float) -> float:
        return self.floor_s + tokens * (self.per_token_s + self.per_token_head_s * heads)


@functools.lru_cache(maxsize=4)
def _doc(path: Path, mtime_ns: int, size: int):
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"{path.name}: not a readable GDN prefill file ({type(e).__name__})") from None
    try:
        ref, bw = str(doc["reference"]["gpu"]), doc["reference"]["hbm_bytes_per_s"]
        bw = amount("reference hbm_bytes_per_s", bw, 0.0, 1e15, open_lo=True)
        stacks = {
            str(s): (
                str(v["framework"]),
                {
                    str(g): tuple(amount(f"{s} {g} {f}", fit[f], 0.0, 1e-3 if f != "floor_s" else 0.1) for f in _FIELDS)
                    for g, fit in v["gpus"].items()
                },
            )
            for s, v in doc["stacks"].items()
        }
        fallback = str(doc["fallback_stack"])
        where = f"{doc['source']['repository']} @ {str(doc['source']['commit'])[:12]}"
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path.name}: lacks or mistypes {e}") from None
    missing = [s for s, (_, gpus) in stacks.items() if ref not in gpus]
    if fallback not in stacks or missing:
        raise ValueError(f"{path.name}: the fallback stack and every stack need a fit on the reference GPU {ref!r}")
    return stacks, fallback, ref, bw, where


def gdn_prefill_cost(gpu: GPUSpec, stack: str, path: str | Path | None = None) -> GdnPrefillCost:
    """The measured prefill cost of one GDN layer on ``gpu`` under serving ``stack`` (see the module docstring), from
    ``catalogs/gdn_prefill.yaml`` (or ``path``; cached until the file changes)."""
    if not isinstance(gpu, GPUSpec):
        raise ValueError(f"gpu must be a GPUSpec, got {type(gpu).__name__}")
    if not isinstance(stack, str):
        raise ValueError(f"stack must be a text, got {type(stack).__name__}")
    stacks, fallback, ref, bw, where = _doc(*file_stamp(path, GDN_PREFILL_PATH, "GDN prefill file"))
    name = stack if stack in stacks else fallback
    framework, gpus = stacks[name]
    taken = "" if name == stack else f", {stack} has no table: {fallback}'s"
    if gpu.id in gpus:
        return GdnPrefillCost(*gpus[gpu.id], f"measured on {gpu.id}, {framework} ({where}{taken})")
    k = bw / gpu.hbm_bytes_per_s
    floor, per, per_head = gpus[ref]
    return GdnPrefillCost(
        floor * k,
        per * k,
        per_head * k,
        f"{ref}'s measured cost, {framework}, x its HBM bandwidth / {gpu.id}'s ({k:.2f}; {where}{taken})",
    )
