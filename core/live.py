"""Live metrics from a running server: a Prometheus text scrape of vLLM or SGLang, read for its
speculative-decoding acceptance (per-expert loads are read by :func:`core.balance.parse_prometheus_loads`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["SpecObservation", "implied_alpha", "parse_samples", "spec_observation"]

_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)(\s+\S+)?$")
_MAX = 5_000_000


def parse_samples(text: str) -> dict[str, float]:
    """Sum of every sample per metric name (over label sets). Errors name the line."""
    if not isinstance(text, str):
        raise ValueError("the scrape must be text")
    if len(text) > _MAX:
        raise ValueError(f"scrape is {len(text):,} characters; the limit is {_MAX:,}")
    out: dict[str, float] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise ValueError(f"line {n}: not a Prometheus sample ({line[:60]!r})")
        try:
            v = float(m.group("value"))
        except ValueError:
            raise ValueError(f"line {n}: value {m.group('value')[:20]!r} is not a number") from None
        if not math.isfinite(v):
            continue
        out[m.group("name")] = out.get(m.group("name"), 0.0) + v
    return out


@dataclass(frozen=True)
class SpecObservation:
    engine: str
    acceptance_rate: float  # accepted draft tokens / proposed draft tokens
    tokens_per_step: float  # emitted tokens per verification step (accepted + the target's own)
    gamma: float | None  # proposed draft tokens per step, when the scrape says


def spec_observation(text: str) -> SpecObservation:
    """Acceptance from vLLM's ``vllm:spec_decode_num_accepted_tokens_total`` / ``..._num_draft_tokens_total``
    (and ``..._num_drafts_total`` for tokens per step), or SGLang's ``sglang:spec_accept_length``."""
    s = parse_samples(text)
    acc, drafted, drafts = (s.get(f"vllm:spec_decode_num_{k}_total") for k in ("accepted_tokens", "draft_tokens", "drafts"))
    if acc is not None and drafted:
        gamma = drafted / drafts if drafts else None
        per_step = 1.0 + acc / drafts if drafts else None
        rate = acc / drafted
        if per_step is None:
            per_step = 1.0 + rate * (gamma or 0)
        return SpecObservation("vLLM", rate, per_step, gamma)
    if "sglang:spec_accept_length" in s:
        length = s["sglang:spec_accept_length"]
        return SpecObservation("SGLang", float("nan"), length, None)
    raise ValueError("no speculative-decoding metrics found: expected vllm:spec_decode_num_accepted_tokens_total and "
                     "vllm:spec_decode_num_draft_tokens_total (vLLM) or sglang:spec_accept_length (SGLang)")


def implied_alpha(tokens_per_step: float, gamma: float) -> float:
    """The chain acceptance rate alpha whose ``E(alpha, gamma)`` equals the observed tokens per step
    (vLLM's own acceptance rate counts every proposed token, so it understates alpha)."""
    from core import speculative as sd

    g = int(round(gamma))
    if not (1 <= g <= 64):
        raise ValueError("gamma must be 1-64")
    if not (1.0 <= tokens_per_step <= g + 1):
        raise ValueError(f"tokens per step must be within 1 and gamma + 1 = {g + 1}, got {tokens_per_step:.2f}")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if sd.expected_tokens(mid, g) < tokens_per_step:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
