"""Published single-box measurements against the offload model: predicted vs measured decode and prompt
tokens/s for each case in ``catalogs/offload_cases.yaml`` (the Single box page shows the error on every case)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from core.hardware import GPUSpec, HostSpec
from core.model import ModelSpec
from core.single_box.box import Box
from core.single_box.offload import placement

if TYPE_CHECKING:
    from core.hardware.offload_efficiency import OffloadEfficiency

__all__ = ["validate_cases"]


def validate_cases(
    cases,
    models: dict[str, ModelSpec],
    hosts: dict[str, HostSpec],
    gpus: dict[str, GPUSpec],
    eff: OffloadEfficiency | None = None,
) -> list[dict]:
    """Predicted vs measured decode and prefill tokens/s for each published case (``offload_cases.yaml``).
    Error = predicted / measured - 1."""
    # at call time: core.single_box.offload re-exports this module

    rows = []
    for c in cases:
        if not isinstance(c, Mapping):
            raise ValueError("an offload case must be a mapping (a YAML object)")
        cid = c.get("id", "<no id>")
        if not isinstance(cid, str):
            raise ValueError(f"an offload case's id must be text, got {cid!r}")
        try:
            model, host, gpu = models[c["model"]], hosts[c["host"]], gpus[c["gpu"]]
            meas, raw_n, precision = c["measured"], c["n_cpu_moe"], c["precision"]
        except (KeyError, TypeError) as e:
            raise ValueError(f"offload case {cid}: missing field or unknown id {e}") from None
        if not isinstance(meas, Mapping):
            raise ValueError(f"offload case {cid}: field 'measured' must be a mapping")
        n = model.num_layers if raw_n == "all" else _case_int(cid, "n_cpu_moe", raw_n)
        box = Box(
            model,
            host,
            gpu,
            _case_int(cid, "n_gpus", c.get("n_gpus", 1)),
            precision,
            _case_int(cid, "context_len", c.get("context_len")),
            eff,
        )
        pl = placement(box, n)
        role = c.get("role", "check")
        if not isinstance(role, str):
            raise ValueError(f"offload case {cid}: field 'role' must be text, got {role!r}")
        row = {"case": cid, "role": role, "placement": pl}
        for key, pred in (
            ("decode_tokens_per_s", pl.decode_tokens_per_s),
            ("prefill_tokens_per_s", pl.prefill_tokens_per_s),
        ):
            if key in meas:
                v = meas[key]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
                    raise ValueError(f"offload case {cid}: measured {key} must be a number > 0, got {v!r}")
                if not math.isfinite(pred / float(v)):  # found by the fuzz: a subnormal measurement gave inf
                    raise ValueError(
                        f"offload case {cid}: measured {key} must be a number > 0 large enough for predicted / "
                        f"measured to be finite ({pred:.4g} / {v!r} overflows)"
                    )
                row[key] = (pred, float(v), pred / float(v) - 1)
        rows.append(row)
    return rows


def _case_int(cid, key: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v):
        raise ValueError(f"offload case {cid}: field {key!r} must be a whole number, got {v!r}")
    return int(v)
