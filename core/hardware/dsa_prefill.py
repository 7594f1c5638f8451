"""What a DSA indexer layer (DeepSeek-V3.2, GLM-5) costs in prefill beyond its FLOPs (issue 35).

On a prompt longer than the indexer's top-k, every layer's indexer scores each token against its causal context in
FP8 and picks the top-k, on every TP rank (its weights are replicated). NVIDIA aiconfigurator's measured SGLang
0.5.14 tables time the whole attention module with the indexer and with its top-k handed in: on B200 the difference
is 1.15 / 2.23 / 4.91 ms per layer at 4,096 / 8,192 / 16,384 prompt tokens, about 0.28 us per token, forty times
what its logits' FLOPs take at FP8 peak. ``catalogs/dsa_prefill.yaml`` holds the fit (``floor_s + per_token_s x
tokens`` per layer, ``python -m bench.fit_dsa_prefill``); a GPU without a measured pair takes the reference GPU's
cost scaled by HBM bandwidth (reference / the GPU's: a memory-paced kernel chain).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from core._util.checks import amount, file_stamp, load_yaml
from core.hardware.gpu import GPUSpec

__all__ = ["DSA_PREFILL_PATH", "IndexerPrefillCost", "indexer_prefill_cost"]

DSA_PREFILL_PATH = Path(__file__).resolve().parents[2] / "catalogs" / "dsa_prefill.yaml"


@dataclass(frozen=True)
class IndexerPrefillCost:
    """Seconds one indexer layer adds to a prefill pass on one GPU: ``floor_s + per_token_s x`` the prompt tokens
    its attention group processes; ``source`` says where the numbers come from."""

    floor_s: float
    per_token_s: float
    source: str

    def layer_s(self, tokens: float) -> float:
        return self.floor_s + self.per_token_s * tokens


@functools.lru_cache(maxsize=4)
def _doc(path: Path, mtime_ns: int, size: int) -> tuple[dict[str, tuple[float, float]], str, str, float]:
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"{path.name}: not a readable DSA prefill file ({type(e).__name__})") from None
    try:
        ref = doc["reference"]
        gpus = {
            str(g): (
                amount(f"{g} floor_s", v["floor_s"], 0.0, 0.1),
                amount(f"{g} per_token_s", v["per_token_s"], 0.0, 1e-3),
            )
            for g, v in doc["gpus"].items()
        }
        bw = amount("reference hbm_bytes_per_s", ref["hbm_bytes_per_s"], 0.0, 1e15, open_lo=True)
        ref_gpu = str(ref["gpu"])
        src = doc["source"]
        where = f"{src['repository']} @ {str(src['commit'])[:12]}, {src['framework']}"
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path.name}: lacks or mistypes {e}") from None
    if ref_gpu not in gpus:
        raise ValueError(f"{path.name}: the reference GPU {ref_gpu!r} needs a fit")
    return gpus, ref_gpu, where, bw


def indexer_prefill_cost(gpu: GPUSpec, path: str | Path | None = None) -> IndexerPrefillCost:
    """The measured prefill cost of one indexer layer on ``gpu`` (see the module docstring), from
    ``catalogs/dsa_prefill.yaml`` (or ``path``; cached until the file changes)."""
    if not isinstance(gpu, GPUSpec):
        raise ValueError(f"gpu must be a GPUSpec, got {type(gpu).__name__}")
    gpus, ref_gpu, where, bw = _doc(*file_stamp(path, DSA_PREFILL_PATH, "DSA prefill file"))
    if gpu.id in gpus:
        floor, per = gpus[gpu.id]
        return IndexerPrefillCost(floor, per, f"measured on {gpu.id} ({where})")
    floor, per = gpus[ref_gpu]
    k = bw / gpu.hbm_bytes_per_s
    return IndexerPrefillCost(
        floor * k, per * k, f"{ref_gpu}'s measured cost x its HBM bandwidth / {gpu.id}'s ({k:.2f}; {where})"
    )
