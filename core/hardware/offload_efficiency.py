"""How much of a single box's peaks a llama.cpp-style offload achieves (the Single box page's efficiency
factors): stated assumptions, each value with its provenance in ``catalogs/offload_efficiency.yaml``. Hardware data beside the GPUs and hosts it qualifies; :mod:`core.single_box`
uses it."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path

from core._util.checks import load_yaml

__all__ = ["OffloadEfficiency"]


SHIPPED_PATH = Path(__file__).resolve().parents[2] / "catalogs" / "offload_efficiency.yaml"


@functools.lru_cache(maxsize=1)
def _shipped_values() -> dict:
    """The shipped factors' values (``catalogs/offload_efficiency.yaml``: a value and its provenance each;
    :mod:`core.catalog` checks the file strictly when it loads a catalog)."""
    data = load_yaml(SHIPPED_PATH.read_text(encoding="utf-8"))
    factors = data.get("factors") if isinstance(data, dict) else None
    if not isinstance(factors, dict):
        raise ValueError(f"{SHIPPED_PATH}: must be a mapping of factors under 'factors'")
    return {k: v.get("value") for k, v in factors.items() if isinstance(v, dict)}


def _shipped(name: str):
    """A field defaulting to its shipped value (:func:`_shipped_values`)."""

    def default():
        values = _shipped_values()
        if name not in values:
            raise ValueError(f"{SHIPPED_PATH}: field 'factors' lacks {name}")
        return values[name]

    return field(default_factory=default)


@dataclass(frozen=True)
class OffloadEfficiency:
    """Achieved fractions of peak, and fixed memory reserves (assumptions, stated on the page).

    ``host_bandwidth`` 0.40: ktransformers V0.2 decodes DeepSeek-V3 Q4_K_M at 8.73 tok/s on one
    8-channel DDR5-4800 socket (307.2 GB/s peak) with a 4090D; with 12.4 GB of routed experts read per
    token that is 0.40 of peak once the GPU part is taken off (test_offload checks the fit).
    ``gpu_bandwidth`` 0.80 is a typical GEMV fraction of GDDR6X / GDDR7 peak; ``unified_bandwidth`` 0.65 is
    an assumption: no unified-memory measurement is in ``offload_cases.yaml`` yet to fit it on.

    The defaults are the values in ``catalogs/offload_efficiency.yaml`` (one provenance line each), read
    through the default catalog (``Catalog.offload_efficiency``): ``OffloadEfficiency()`` is the shipped set.
    """

    gpu_bandwidth: float = _shipped("gpu_bandwidth")
    host_bandwidth: float = _shipped("host_bandwidth")
    unified_bandwidth: float = _shipped("unified_bandwidth")
    cpu_compute: float = _shipped("cpu_compute")
    gpu_compute: float = _shipped("gpu_compute")
    pcie: float = _shipped("pcie")
    # llama.cpp's CUDA compute buffer and context at ubatch 512
    compute_buffer_gb: float = _shipped("compute_buffer_gb")
    host_reserve_gb: float = _shipped("host_reserve_gb")  # OS, page cache headroom, the runtime
    ubatch_tokens: int = _shipped("ubatch_tokens")  # llama.cpp -ub default

    def __post_init__(self) -> None:
        for name in ("gpu_bandwidth", "host_bandwidth", "unified_bandwidth", "cpu_compute", "gpu_compute", "pcie"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0.001 <= v <= 1):
                raise ValueError(f"{name} must be in [0.001, 1] (a fraction of peak), got {v}")
        for name in ("compute_buffer_gb", "host_reserve_gb"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and 0 <= v <= 100_000):
                raise ValueError(f"{name} must be within 0 and 100,000 GB, got {v}")
        u = self.ubatch_tokens
        if (
            isinstance(u, bool)
            or not isinstance(u, (int, float))
            or not math.isfinite(u)
            or u != int(u)
            or not 1 <= u <= 65_536
        ):
            raise ValueError(f"ubatch_tokens must be a whole number 1-65,536, got {self.ubatch_tokens!r}")
