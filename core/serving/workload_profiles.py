"""Workload profiles (issue 23): the traffic shapes deployments are planned around, as published distributions.

``catalogs/workloads.yaml`` holds one entry per profile (chat, coding assistant, agentic multi-turn, long
document, batch / offline): prompt and output tokens per request as median / p90 / mean, the fraction of a
prompt a warm prefix cache serves (``prefix_reuse``), the mean requests per session (``turns``), each with its
source and a confidence (``primary``: read in the original paper or dataset; ``secondary``: quoted by someone
else; ``assumption``: chosen, the reasoning in ``notes``).

:meth:`WorkloadProfile.workload` turns a profile into the planner's :class:`core.deployment.specs.Workload` (mean lengths
where published, else the medians: throughput and memory follow the mean). Prefix reuse is carried as data here;
the pages that will price it (prefill work skipped, cache occupied) read it from the profile.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from core._util.checks import file_stamp, read_yaml_list
from core._util.validated import FROZEN, validate_entries
from core.deployment.specs import Workload

__all__ = ["PROFILE_IDS", "WORKLOADS_PATH", "TokenStats", "WorkloadProfile", "load_profiles", "profile"]

WORKLOADS_PATH = Path(__file__).resolve().parents[2] / "catalogs" / "workloads.yaml"
PROFILE_IDS = ("chat", "coding_assistant", "agentic", "long_document", "batch_offline")
_TOKENS = Annotated[int, Field(ge=1, le=10_000_000)]


class TokenStats(BaseModel):
    """Tokens per request: the median, the 90th percentile and the mean (None where unpublished)."""

    model_config = FROZEN

    median: _TOKENS
    p90: _TOKENS
    mean: _TOKENS | None = None

    @model_validator(mode="after")
    def _ordered(self) -> TokenStats:
        if self.p90 < self.median:
            raise ValueError(f"p90 ({self.p90:,}) is below the median ({self.median:,})")
        return self

    @property
    def planning(self) -> int:
        """What a throughput plan uses: the mean where published, else the median."""
        return self.mean if self.mean is not None else self.median


class WorkloadProfile(BaseModel):
    """One traffic shape with its sources (see the module docstring)."""

    model_config = FROZEN

    id: Literal[PROFILE_IDS]  # type: ignore[valid-type]
    name: str = Field(min_length=1, max_length=80)
    description: str = Field(min_length=1, max_length=400)
    input_tokens: TokenStats
    output_tokens: TokenStats
    prefix_reuse: Annotated[float, Field(ge=0.0, le=0.99)]
    turns: Annotated[float, Field(ge=1.0, le=10_000.0)]
    source: str = Field(min_length=1, max_length=4_000)
    confidence: Literal["primary", "secondary", "assumption"]
    notes: str = Field("", max_length=4_000)

    def workload(self, batch: int = 64) -> Workload:
        """The planner's workload of ``batch`` concurrent sequences with this profile's planning lengths and its
        prefix reuse."""
        return Workload(
            batch=batch,
            input_len=self.input_tokens.planning,
            output_len=self.output_tokens.planning,
            prefix_reuse=self.prefix_reuse,
        )

    @property
    def computed_input_tokens(self) -> int:
        """Prompt tokens a request's prefill computes with a warm prefix cache, as the planner counts them for this
        profile's workload (``Workload.computed_prompt_tokens``: the planning input less its rounded cached share)."""
        return self.workload().computed_prompt_tokens


@functools.lru_cache(maxsize=8)
def _load(path: Path, mtime_ns: int, size: int) -> tuple[WorkloadProfile, ...]:  # the file's stamp: an edit reloads
    entries = read_yaml_list(path, "profiles", "workload catalog", sole=True)
    return validate_entries(entries, WorkloadProfile, path.name[:200], "profile")


def load_profiles(path: str | Path | None = None) -> tuple[WorkloadProfile, ...]:
    """Every profile of the workload catalog (default: the repository's ``catalogs/workloads.yaml``), loaded once
    per file version. A malformed file or entry raises ``ValueError`` naming the file, the profile and the field."""
    return _load(*file_stamp(path, WORKLOADS_PATH, "workload catalog"))


def profile(profile_id: str, path: str | Path | None = None) -> WorkloadProfile:
    """The profile ``profile_id`` (one of :data:`PROFILE_IDS`); an unknown id raises ``ValueError``."""
    for p in load_profiles(path):
        if p.id == profile_id:
            return p
    raise ValueError(f"unknown workload profile {str(profile_id)[:40]!r}; one of {', '.join(PROFILE_IDS)}")
