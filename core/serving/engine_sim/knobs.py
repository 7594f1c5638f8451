"""The engine's knobs and the request lengths it is fed (issue 35).

:class:`EngineKnobs`: what an engine's launch flags set (vLLM ``--max-num-seqs``, ``--max-num-batched-tokens``,
SGLang's prefill-first scheduling, the prefix cache's hit share, speculative decoding's draft and accepted tokens).
Unset fields (None) take the :class:`core.serving.ReplicaCosts` values, so one step model serves the analytical
and the simulated replica.

:class:`Lengths`: prompt and output tokens per request, either exact (``fixed``: the benchmarks' 1k/1k, 8k/1k) or
drawn from a lognormal fitted to a published median and 90th percentile (``mu = ln(median)``, ``sigma =
ln(p90 / median) / 1.2816``), rounded and clipped to ``[1, max]``; the default max is the fit's 99.9th percentile.
The fit reproduces the median and p90, not the mean: ``mean = median x exp(sigma^2 / 2)``, e.g. the chat profile's
prompts (1,020 / 2,735) give a 1,371-token mean where the trace's is 1,155.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core._util.checks import amount, is_number, is_whole, whole
from core.serving.closed_loop import ReplicaCosts

__all__ = [
    "DEFAULT_KNOBS",
    "MAX_DRAWS",
    "POLICIES",
    "Z90",
    "EngineKnobs",
    "Lengths",
    "Resolved",
    "acceptance_rate",
    "emitted_per_step",
]

POLICIES = ("decode_first", "prefill_first")
MAX_DRAWS = 50_000_000  # speculative decode steps drawn in one run at most (~0.6 GB of draws and their sums)
Z90 = 1.2815515655446004  # the standard normal's 90th percentile
_Z999 = 3.090232306167813  # its 99.9th: the default clip


@dataclass(frozen=True)
class EngineKnobs:
    """One engine's scheduling knobs. ``policy``: ``decode_first`` (vLLM's chunked prefill: every step decodes
    every running sequence, prompt chunks fill the budget left) or ``prefill_first`` (SGLang's default: while a
    prompt waits a step carries prompt chunks only, the decodes stall). ``prefix_hit``: the share of each prompt the
    prefix cache serves (computed tokens = prompt - min(prompt - 1, round(hit x prompt)), as
    :attr:`core.deployment.specs.Workload.computed_prompt_tokens`). ``draft_tokens`` / ``accepted_length``: a decode step
    verifies ``draft_tokens + 1`` tokens per sequence (at the costs' decode step time, which prices that verify) and
    emits 1..draft+1 of them, ``accepted_length`` on average."""

    max_running_requests: int | None = None  # None: as many as the KV cache holds
    token_budget: int | None = None  # tokens per step; None: costs.budget_tokens
    policy: str = "decode_first"
    prefix_hit: float = 0.0
    draft_tokens: int | None = None  # None: costs.draft_tokens
    accepted_length: float | None = None  # None: costs.accepted_length
    seed: int = 0

    def __post_init__(self):
        if self.max_running_requests is not None:
            whole("max_running_requests", self.max_running_requests, 1, 10_000_000)
        if self.token_budget is not None:
            whole("token_budget", self.token_budget, 1, 10**9)
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {str(self.policy)[:40]!r}")
        if not (is_number(self.prefix_hit) and 0.0 <= self.prefix_hit <= 0.99):
            raise ValueError(f"prefix_hit must be a share in [0, 0.99], got {self.prefix_hit!r}")
        if self.draft_tokens is not None:
            whole("draft_tokens", self.draft_tokens, 0, 64)
        if self.accepted_length is not None:
            amount("accepted_length", self.accepted_length, 1.0, 65.0)
        whole("seed", self.seed, 0, 2**63 - 1)

    def resolve(self, costs: ReplicaCosts) -> Resolved:
        """The knobs with the costs' values filled in, checked against each other."""
        if not isinstance(costs, ReplicaCosts):
            raise TypeError(f"costs must be a ReplicaCosts, got {type(costs).__name__}")
        k = costs.draft_tokens if self.draft_tokens is None else self.draft_tokens
        al = costs.accepted_length if self.accepted_length is None else float(self.accepted_length)
        if not 1.0 <= al <= k + 1:
            raise ValueError(f"accepted_length must be in [1, draft_tokens + 1 = {k + 1}], got {al!r}")
        budget = costs.budget_tokens if self.token_budget is None else self.token_budget
        if budget < k + 1:
            raise ValueError(f"token_budget must be at least draft_tokens + 1 = {k + 1} tokens, got {budget!r}")
        most = costs.kv_capacity if self.max_running_requests is None else self.max_running_requests
        # the engine cannot decode more sequences than one step's budget carries (vLLM asks the same of max_num_seqs)
        cap = min(most, costs.kv_capacity, budget // (k + 1))
        return Resolved(cap, budget, k, al, self.policy == "prefill_first", float(self.prefix_hit), self.seed)


@dataclass(frozen=True)
class Resolved:
    """:class:`EngineKnobs` resolved against a replica's costs: ``cap`` running sequences at most (the smallest of
    max_running_requests, the KV cache's sequences and budget // (draft + 1))."""

    cap: int
    budget: int
    draft_tokens: int
    accepted_length: float
    prefill_first: bool
    prefix_hit: float
    seed: int

    def computed(self, prompts: np.ndarray) -> np.ndarray:
        """Prompt tokens prefill computes, the prefix cache's share excluded (the last token always computed)."""
        return prompts - np.minimum(prompts - 1, np.rint(self.prefix_hit * prompts).astype(np.int64))


@dataclass(frozen=True)
class Lengths:
    """Prompt and output tokens per request (see the module docstring). ``fixed``: every request has the medians
    exactly (the p90s must equal them)."""

    input_median: int
    input_p90: int
    output_median: int
    output_p90: int
    fixed: bool = False
    input_max: int | None = None  # clip; None: the fit's 99.9th percentile
    output_max: int | None = None

    def __post_init__(self):
        if not isinstance(self.fixed, bool):
            raise ValueError(f"fixed must be True or False, got {str(self.fixed)[:40]!r}")
        for name in ("input_median", "input_p90", "output_median", "output_p90"):
            whole(name, getattr(self, name), 1, 10_000_000)
        for side in ("input", "output"):
            med, p90 = getattr(self, f"{side}_median"), getattr(self, f"{side}_p90")
            if p90 < med or (self.fixed and p90 != med):
                raise ValueError(f"{side}_p90 must be {'equal to' if self.fixed else 'at least'} {side}_median")
            top = getattr(self, f"{side}_max")
            if top is not None and not (is_whole(top) and med <= top <= 10_000_000):
                raise ValueError(f"{side}_max must be a whole number in {med:,}..10,000,000, got {top!r}")

    @classmethod
    def exact(cls, input_tokens: int, output_tokens: int) -> Lengths:
        """Every request ``input_tokens`` in, ``output_tokens`` out (InferenceX's 1k/1k, 8k/1k)."""
        return cls(input_tokens, input_tokens, output_tokens, output_tokens, fixed=True)

    @classmethod
    def from_profile(cls, profile) -> Lengths:
        """The lognormal fit to a :class:`core.serving.workload_profiles.WorkloadProfile`'s medians and p90s."""
        i, o = profile.input_tokens, profile.output_tokens
        return cls(i.median, i.p90, o.median, o.p90)

    def sigma(self, side: str) -> float:
        """The fitted lognormal's sigma for ``side`` ("input" or "output"): ln(p90 / median) / z(0.9)."""
        return math.log(getattr(self, f"{side}_p90") / getattr(self, f"{side}_median")) / Z90

    def mean(self, side: str) -> float:
        """The fit's mean for ``side``, ``median x exp(sigma^2 / 2)`` (the clip ignored: a slight over-estimate)."""
        med = getattr(self, f"{side}_median")
        return float(med) if self.fixed else med * math.exp(self.sigma(side) ** 2 / 2)

    def clip(self, side: str) -> int:
        """The largest length drawn for ``side``."""
        top = getattr(self, f"{side}_max")
        med = getattr(self, f"{side}_median")
        return top if top is not None else min(10_000_000, math.ceil(med * math.exp(_Z999 * self.sigma(side))))

    def draw(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` (prompt, output) token counts as int64 arrays."""
        out = []
        for side in ("input", "output"):
            med = getattr(self, f"{side}_median")
            if self.fixed:
                out.append(np.full(n, med, dtype=np.int64))
                continue
            x = np.rint(med * np.exp(self.sigma(side) * rng.standard_normal(n)))
            out.append(np.clip(x, 1, self.clip(side)).astype(np.int64))
        return out[0], out[1]


DEFAULT_KNOBS = EngineKnobs()  # the costs' own scheduling, no prefix cache


def acceptance_rate(draft_tokens: int, accepted_length: float) -> float:
    """The per-token acceptance ``alpha`` whose mean tokens per step ``(1 - alpha^(k+1)) / (1 - alpha)`` (the
    i.i.d. acceptance model: drafts accepted in order until the first rejection, plus the verifier's own token) is
    ``accepted_length``; by bisection. ``draft_tokens`` in 0..64, ``accepted_length`` in [1, draft_tokens + 1]."""
    k = whole("draft_tokens", draft_tokens, 0, 64)
    amount("accepted_length", accepted_length, 1.0, k + 1.0)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sum(mid**j for j in range(k + 1)) < accepted_length else (lo, mid)
    return (lo + hi) / 2


def emitted_per_step(draft_tokens: int, accepted_length: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """Tokens one sequence's decode step emits, ``size`` draws (int16): 1 + the drafts accepted in order, the j-th
    reached with probability ``alpha^j`` (:func:`acceptance_rate`; mean ``accepted_length``). One 16-bit uniform
    per step against the thresholds ``alpha^j x 65536`` (alpha rounded to 1/65,536). ``size`` in 0..:data:`MAX_DRAWS`,
    ``rng`` a numpy Generator."""
    k = whole("draft_tokens", draft_tokens, 0, 64)
    amount("accepted_length", accepted_length, 1.0, k + 1.0)
    whole("size", size, 0, MAX_DRAWS)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator (numpy.random.default_rng), got {type(rng).__name__}")
    if k == 0 or accepted_length <= 1.0:
        return np.ones(size, dtype=np.int16)
    if accepted_length >= k + 1:
        return np.full(size, k + 1, dtype=np.int16)
    alpha = acceptance_rate(k, accepted_length)
    u = rng.integers(0, 65536, size, dtype=np.uint16)
    out = np.ones(size, dtype=np.int16)
    for j in range(1, k + 1):
        bar = round(alpha**j * 65536)
        if bar < 1:
            break
        out += u < bar
    return out


# the runs' own checks (core.serving.engine_sim.loops, .sweep): public names outside __all__, as run_engine
def resolved(costs: ReplicaCosts, lengths: Lengths, knobs: EngineKnobs, name: str = "knobs") -> Resolved:
    """``knobs`` against ``costs``, every argument of its type."""
    if not isinstance(lengths, Lengths):
        raise TypeError(f"lengths must be a Lengths, got {type(lengths).__name__}")
    if not isinstance(knobs, EngineKnobs):
        raise TypeError(f"{name} must be an EngineKnobs, got {type(knobs).__name__}")
    return knobs.resolve(costs)


def load_list(name: str, loads) -> list:
    """A sweep's loads: a list, tuple or array of at most 1,000."""
    if not isinstance(loads, (list, tuple, np.ndarray)) or np.ndim(loads) != 1 or len(loads) > 1000:
        raise ValueError(f"{name} must be a list of at most 1,000 loads, got {str(loads)[:40]!r}")
    return list(loads)
