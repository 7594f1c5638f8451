"""A served calibration (issue 36): how much slower or faster one's own cluster runs the steps than the step-time
model predicts, fitted from benchmark results (:mod:`core.validation.served_fit`) and saved with the scenario.

The step-time model multiplies its decode step times by ``decode_step_scale`` and its prefill step times by
``prefill_step_scale``; at low load TPOT scales by about the first and TTFT by about the second. The bounds
(0.2-5) keep a fit on a mismatched file (another model, another GPU) from turning the planner's numbers into
nonsense: a factor beyond them says the scenario is not the benchmarked deployment.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import BaseModel, Field, field_validator

from core._util.validated import FROZEN

__all__ = ["MAX_STEP_SCALE", "MIN_STEP_SCALE", "ServedCalibration"]

MIN_STEP_SCALE, MAX_STEP_SCALE = 0.2, 5.0
_Scale = Annotated[float, Field(ge=MIN_STEP_SCALE, le=MAX_STEP_SCALE, allow_inf_nan=False)]


class ServedCalibration(BaseModel):
    """Multipliers on the step-time model's decode and prefill step times, fitted on ``runs`` benchmark runs from
    ``source`` (file name, tool, date) with a relative RMS error ``fit_residual`` of the calibrated predictions
    over the runs' metrics (0.05: the calibrated model is within about 5% of what was measured)."""

    model_config = FROZEN

    decode_step_scale: _Scale = 1.0
    prefill_step_scale: _Scale = 1.0
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
        """'calibrated on bench.json (vLLM bench serve, 2 runs): decode x1.27, prefill x0.94, residual 3%'."""
        runs = f"{self.runs:,} run{'s' if self.runs != 1 else ''}"
        return (
            f"calibrated on {self.source} ({runs}): decode ×{self.decode_step_scale:.2f}, "
            f"prefill ×{self.prefill_step_scale:.2f}, residual {100 * self.fit_residual:.0f}%"
        )

    def step_scale(self, phase: str) -> float:
        """The multiplier on a ``phase`` step ("decode" or "prefill")."""
        if phase == "decode":
            return self.decode_step_scale
        if phase == "prefill":
            return self.prefill_step_scale
        raise ValueError(f"phase must be 'decode' or 'prefill', got {str(phase)[:20]!r}")
