"""Live metrics from a running server: a Prometheus text scrape of vLLM or SGLang, read for its
speculative-decoding acceptance (per-expert loads are read by :func:`core.balance.parse_prometheus_loads`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from core._util.prometheus import SAMPLE_LINE

__all__ = ["MAX_GAMMA", "SpecObservation", "implied_alpha", "parse_samples", "spec_observation"]

MAX_GAMMA = 64  # draft tokens per step the planner models (SpecDecodeConfig.num_speculative_tokens)

_LINE = SAMPLE_LINE
_MAX = 5_000_000


def parse_samples(text: str) -> dict[str, float]:
    """Sum of every sample per metric name (over label sets). Errors name the line."""
    return _parse(text)[0]


def _parse(text: str) -> tuple[dict[str, float], dict[str, int]]:
    """(sum, number of finite samples) per metric name."""
    if not isinstance(text, str):
        raise ValueError("the scrape must be text")
    if len(text) > _MAX:
        raise ValueError(f"scrape is {len(text):,} characters; the limit is {_MAX:,}")
    out: dict[str, float] = {}
    count: dict[str, int] = {}
    for n, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):  # a byte-order mark is not text
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
        total = out.get(m.group("name"), 0.0) + v
        if not math.isfinite(total):
            raise ValueError(f"line {n}: the samples of {m.group('name')[:60]} add up beyond the range of a number")
        out[m.group("name")] = total
        count[m.group("name")] = count.get(m.group("name"), 0) + 1
    return out, count


@dataclass(frozen=True)
class SpecObservation:
    engine: str
    acceptance_rate: float  # accepted draft tokens / proposed draft tokens
    tokens_per_step: float  # emitted tokens per verification step (accepted + the target's own)
    gamma: float | None  # proposed draft tokens per step, when the scrape says


def spec_observation(text: str) -> SpecObservation:
    """Acceptance from vLLM's ``vllm:spec_decode_num_accepted_tokens_total`` / ``..._num_draft_tokens_total``
    (and ``..._num_drafts_total`` for tokens per step), summed over label sets, or SGLang's
    ``sglang:spec_accept_length`` gauge, averaged over label sets (one per rank)."""
    s, count = _parse(text)
    acc, drafted, drafts = (
        s.get(f"vllm:spec_decode_num_{k}_total") for k in ("accepted_tokens", "draft_tokens", "drafts")
    )
    if acc is not None and drafted:
        if acc < 0 or drafted < 0 or (drafts or 0) < 0:
            raise ValueError("vLLM's speculative-decoding counters must be >= 0")
        if acc > drafted:
            raise ValueError(f"vLLM reports more accepted tokens ({acc:,.0f}) than drafted ones ({drafted:,.0f})")
        gamma = drafted / drafts if drafts else None
        if gamma is not None and not (math.isfinite(gamma) and 1 <= round(gamma) <= MAX_GAMMA):
            raise ValueError(
                f"vLLM's counters imply {gamma:,.3g} draft tokens per step (num_draft_tokens / num_drafts); "
                f"allowed: 1-{MAX_GAMMA} (rounded to whole tokens), as a step proposes at least one draft token "
                "and the planner models up to 64"
            )
        per_step = 1.0 + acc / drafts if drafts else None
        rate = acc / drafted
        if per_step is None:
            per_step = 1.0 + rate * (gamma or 0)
        if not all(math.isfinite(x) for x in (rate, per_step)):
            raise ValueError("vLLM's speculative-decoding counters are out of range (not finite numbers)")
        return SpecObservation("vLLM", rate, per_step, gamma)
    if "sglang:spec_accept_length" in s:
        # a gauge, one per rank / model label set: their mean, not their sum (counters above add up)
        length = s["sglang:spec_accept_length"] / count["sglang:spec_accept_length"]
        if not 1.0 <= length <= 1e6:
            raise ValueError(
                f"sglang:spec_accept_length is {length:g}; tokens per step are >= 1 (the target's own "
                "token) and at most 1,000,000 (0 means no speculative step was measured yet)"
            )
        return SpecObservation("SGLang", float("nan"), length, None)
    raise ValueError(
        "no speculative-decoding metrics found: expected vllm:spec_decode_num_accepted_tokens_total and "
        "vllm:spec_decode_num_draft_tokens_total (vLLM) or sglang:spec_accept_length (SGLang)"
    )


def implied_alpha(tokens_per_step: float, gamma: float) -> float:
    """The chain acceptance rate alpha whose ``E(alpha, gamma)`` equals the observed tokens per step
    (vLLM's own acceptance rate counts every proposed token, so it understates alpha)."""
    from core.speculative import closed_form as sd

    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not math.isfinite(gamma):
        raise ValueError(f"gamma must be a number 1-{MAX_GAMMA}, got {gamma!r}")
    g = round(gamma)
    if not (1 <= g <= MAX_GAMMA):
        raise ValueError(f"gamma must be 1-{MAX_GAMMA}, got {gamma!r}")
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
