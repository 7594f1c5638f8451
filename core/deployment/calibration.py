"""A served calibration (issue 36): how much slower or faster one's own cluster runs the steps than the step-time
model predicts, fitted from benchmark results (:mod:`core.validation.served_fit`) and saved with the scenario.

The step-time model multiplies its decode step times by ``decode_step_scale`` and its prefill step times by
``prefill_step_scale``; at low load TPOT scales by about the first and TTFT by about the second. The bounds
(0.2-5) keep a fit on a mismatched file (another model, another GPU) from turning the planner's numbers into
nonsense: a factor beyond them says the scenario is not the benchmarked deployment.

``ttft_offset_s`` is a per-request time to first token that no step holds: the served front end's tokenisation,
scheduling, the first step's queue, HTTP and stream setup (Qwen3.5-397B FP8 on 4 x B300 under SGLang measured
315-361 ms of mean TTFT for 750-token prompts whose prefill the model puts at 15-23 ms). The serving model adds it to every request's TTFT
(:func:`core.serving.replica_costs` takes it from the deployment's calibration); it occupies no GPU. Bounded to
0-10 s.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import BaseModel, Field, field_validator

from core._util.validated import FROZEN

__all__ = ["MAX_STEP_SCALE", "MAX_TTFT_OFFSET_S", "MIN_STEP_SCALE", "ServedCalibration"]

MIN_STEP_SCALE, MAX_STEP_SCALE = 0.2, 5.0
MAX_TTFT_OFFSET_S = 10.0
_Scale = Annotated[float, Field(ge=MIN_STEP_SCALE, le=MAX_STEP_SCALE, allow_inf_nan=False)]


class ServedCalibration(BaseModel):
    """Multipliers on the step-time model's decode and prefill step times and a per-request TTFT offset (seconds),
    fitted on ``runs`` benchmark runs from ``source`` (file name, tool, date) with a relative RMS error
    ``fit_residual`` of the calibrated predictions over the runs' metrics (0.05: the calibrated model is within
    about 5% of what was measured). A calibration saved before the offset existed loads with 0."""

    model_config = FROZEN

    decode_step_scale: _Scale = 1.0
    prefill_step_scale: _Scale = 1.0
    ttft_offset_s: Annotated[float, Field(ge=0.0, le=MAX_TTFT_OFFSET_S, allow_inf_nan=False)] = 0.0
    source: Annotated[str, Field(min_length=1, max_length=200)]
    runs: Annotated[int, Field(ge=1, le=10_000)]
    fit_residual: Annotated[float, Field(ge=0.0, le=100.0, allow_inf_nan=False)]

    @field_validator("source")
    @classmethod
    def _printable(cls, v: str) -> str:
        if any(unicodedata.category(ch)[0] == "C" for ch in v):
            raise ValueError("source must be one line of printable text (a file name, the tool, the date)")
        return v

    @property
    def label(self) -> str:
        """'calibrated on bench.json (vLLM bench serve, 2 runs): decode x1.27, prefill x0.94, TTFT +0.319 s,
        residual 3%' (the offset said only where there is one)."""
        runs = f"{self.runs:,} run{'s' if self.runs != 1 else ''}"
        offset = f"TTFT +{self.ttft_offset_s:.3f} s, " if self.ttft_offset_s else ""
        return (
            f"calibrated on {self.source} ({runs}): decode ×{self.decode_step_scale:.2f}, "
            f"prefill ×{self.prefill_step_scale:.2f}, {offset}residual {100 * self.fit_residual:.0f}%"
        )

    def step_scale(self, phase: str) -> float:
        """The multiplier on a ``phase`` step ("decode" or "prefill")."""
        if phase == "decode":
            return self.decode_step_scale
        if phase == "prefill":
            return self.prefill_step_scale
        raise ValueError(f"phase must be 'decode' or 'prefill', got {str(phase)[:20]!r}")
