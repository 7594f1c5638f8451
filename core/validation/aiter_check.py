"""The planner's MoE kernels on AMD Instinct GPUs against AMD's own measured ones (issue 35).

``catalogs/validation/aiter_moe_check.csv`` holds fused-MoE times from ROCm/aiter's tuned tables (the kernel library
SGLang, vLLM and ATOM call on Instinct GPUs), the rows a planner layout describes, extracted by
``bench/aiter_compare.py`` (which says how rows are chosen). Each row is one MoE layer with every expert on the GPU in
``expert_tp`` slices of its width, ``tokens`` tokens entering it, ``measured_us`` per layer. :func:`load_aiter_check`
reads the rows and times each with the planner (:func:`aiter_case`); :func:`aiter_check_summary` gives the median and
P90 per GPU and phase that the Validation page shows. A check, not a calibration input: the planner's AMD GPUs keep
the H200's fractions of peak (bench/RESULTS.md says why they are not fitted on these rows)."""

from __future__ import annotations

import csv
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DECODE_MAX_TOKENS", "aiter_case", "aiter_check_summary", "load_aiter_check"]

DECODE_MAX_TOKENS = 512  # a row with at most this many tokens is a decode-sized call
_INTS = ("act_bits", "expert_tp", "tokens")
_TEXT = ("source", "commit", "cu_num", "gpu", "model", "experts_dtype")
_MAX_ROWS = 100_000


def aiter_case(row: Mapping[str, Any]) -> dict:
    """The planner case timing one row: ``expert_tp`` GPUs, each holding every expert's slice, ``tokens`` tokens
    entering the layer (seen whole by every expert-TP rank), the stack's (SGLang's) kernel path for the layout,
    weights in the row's dtype (16-bit dense weights beside low-bit experts)."""
    try:
        etp, tokens, dtype = int(row["expert_tp"]), int(row["tokens"]), str(row["experts_dtype"])
        gpu, model = str(row["gpu"]), str(row["model"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"aiter row: needs expert_tp, tokens, experts_dtype, gpu and model ({e})") from None
    if not (1 <= etp <= 64 and 1 <= tokens <= 1_000_000):
        raise ValueError(f"aiter row: expert_tp must be 1-64 and tokens 1-1,000,000, got {etp} and {tokens}")
    return {
        "id": f"aiter-{gpu}-{model}-{dtype}-etp{etp}-t{tokens}"[:200],
        "model": model,
        "gpu": gpu,
        "num_gpus": etp,
        "phase": "moe_layer_decode" if tokens <= DECODE_MAX_TOKENS else "moe_layer_prefill",
        "layout": {"attention_tp": 1, "attention_dp": etp, "ep": 1, "expert_tp": etp, "pp": 1},
        "precision": {
            "weights": dtype if dtype in ("bf16", "fp8") else "bf16",
            "experts": dtype,
            "kv": "bf16",
            "dispatch": "bf16",
            "combine": "bf16",
        },
        "workload": {"tokens_per_gpu": tokens / etp},
        "options": {"overlap": "none", "redundant_experts": 0, "stack": "sglang"},
        "measured": {"metric": "moe_layer_latency_ms"},
    }


def _row(raw: dict, where: str) -> dict:
    row = {k: (raw.get(k) or "").strip() for k in _TEXT}
    if not all(row.values()):
        raise ValueError(f"{where}: needs {', '.join(_TEXT)}")
    try:
        row.update({k: int(raw[k]) for k in _INTS})
        row["measured_us"] = float(raw["measured_us"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{where}: act_bits, expert_tp, tokens and measured_us must be numbers ({e})") from None
    if not 0 < row["measured_us"] < 1e7:
        raise ValueError(f"{where}: measured_us must be a time in microseconds above 0, got {row['measured_us']}")
    return row


def load_aiter_check(path: Path | str) -> list[dict]:
    """The file's rows (``#`` lines are provenance), each with the planner's time (``predicted_us``) and its error
    (``error`` = predicted / measured - 1); [] when the file is absent; ValueError naming the row for a malformed one
    or one the planner cannot time."""
    from core.validation import predict

    try:
        path = Path(path)
        if not path.is_file():
            return []
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, TypeError, ValueError) as e:
        raise ValueError(f"{str(path)[:200]}: not a readable aiter check table ({type(e).__name__})") from None
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    out = []
    for i, raw in enumerate(csv.DictReader(lines), start=2):
        if i > _MAX_ROWS:
            raise ValueError(f"{path.name}: more than {_MAX_ROWS:,} rows")
        row = _row(raw, f"{path.name}: row {i}")
        try:
            predicted_us = predict(aiter_case(row)) * 1e3
        except ValueError as e:
            raise ValueError(f"{path.name}: row {i}: {e}") from None
        out.append({**row, "predicted_us": predicted_us, "error": predicted_us / row["measured_us"] - 1.0})
    return out


def aiter_check_summary(results: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Per GPU and phase (decode: at most :data:`DECODE_MAX_TOKENS` tokens; and all rows), in %: the median signed
    error (above 0 the planner is slower than AMD's kernels) and the median and P90 of |error| (linear percentile,
    as the frontier bands)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for r in results:
        try:
            gpu, tokens, err = str(r["gpu"]), int(r["tokens"]), float(r["error"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"aiter result: needs gpu, tokens and error ({e})") from None
        if not np.isfinite(err):
            raise ValueError(f"aiter result: error must be a finite number, got {err}")
        phase = "decode" if tokens <= DECODE_MAX_TOKENS else "prefill"
        groups.setdefault((gpu, phase), []).append(err)
        groups.setdefault((gpu, "all"), []).append(err)
    return [
        {
            "GPU": gpu,
            "phase": phase,
            "rows": len(errs),
            "median error (%)": 100 * statistics.median(errs),
            "median |error| (%)": 100 * statistics.median(abs(e) for e in errs),
            "P90 |error| (%)": 100 * float(np.percentile([abs(e) for e in errs], 90)),
        }
        for (gpu, phase), errs in sorted(groups.items())
    ]
