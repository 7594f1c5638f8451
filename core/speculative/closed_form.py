"""Speculative decoding: closed forms, surfaces, break-even, optimal gamma, batch-aware speedup, simulator.

Notation (Leviathan et al. 2023; Chen et al. 2023; the source texts): a draft proposes ``gamma``
tokens, each accepted independently with probability ``alpha``; the target verifies them in one
forward pass and always emits one more token (the correction or the bonus). ``c`` is the cost of one
draft forward pass relative to one target forward pass.

* tokens per verification step  ``E = (1 - alpha^(gamma+1)) / (1 - alpha)``  (``gamma + 1`` at alpha = 1)
* speedup                         ``S = E / (gamma c + 1)``
* ceiling (gamma -> infinity)     ``1 / (1 - alpha)``

All closed forms broadcast over numpy arrays, so a surface is one call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from core._util.checks import scalar_or_array
from core.deployment.bundle import Deployment

if TYPE_CHECKING:
    from collections.abc import Mapping

    from core.deployment.specs import DraftMethod, SpecDecodeConfig
    from core.model import ModelSpec

__all__ = [
    "ACCEPTANCE_ZONES",
    "ALPHA_GRID",
    "CURVE_GAMMAS",
    "BatchSpeedup",
    "alpha_at_temperature",
    "batch_speedup",
    "blended_alpha",
    "break_even_alpha",
    "ceiling",
    "default_gamma",
    "expected_tokens",
    "optimal_gamma",
    "resolved_alpha_cost",
    "sensitivity",
    "served_draft_s",
    "short_output_speedup",
    "speculative_step_s",
    "speedup",
    "speedup_curves",
    "speedup_surface",
    "suggested_spec",
]

# Acceptance rates the book reports for production drafts: chat 0.65-0.82, code 0.85-0.95 (label, from, to).
ACCEPTANCE_ZONES: tuple[tuple[str, float, float], ...] = (("chat", 0.65, 0.82), ("code", 0.85, 0.95))
ALPHA_GRID = np.round(np.linspace(0.5, 1.0, 51), 2)  # the α axis the speedup charts and surfaces draw
CURVE_GAMMAS: tuple[int, ...] = (3, 5, 8)  # the draft lengths the speedup-vs-α charts draw


def _alpha(alpha) -> np.ndarray:
    a = np.asarray(alpha, dtype=np.float64)
    if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
        raise ValueError("alpha (acceptance rate) must be within 0 and 1")
    return a


def _gamma(gamma) -> np.ndarray:
    g = np.asarray(gamma, dtype=np.float64)
    if np.any(~np.isfinite(g)) or np.any(g < 0) or np.any(g != np.round(g)):
        raise ValueError("gamma (draft tokens per step) must be a whole number >= 0")
    if np.any(g > 1024):
        raise ValueError("gamma must be <= 1024")
    return g


def _cost(c) -> np.ndarray:
    c = np.asarray(c, dtype=np.float64)
    if np.any(~np.isfinite(c)) or np.any(c < 0) or np.any(c > 1e6):
        raise ValueError("c (draft cost relative to the target) must be finite, >= 0 and <= 1,000,000")
    return c


def expected_tokens(alpha, gamma):
    """Expected tokens emitted per verification step, ``(1 - alpha^(gamma+1)) / (1 - alpha)``;
    ``gamma + 1`` at alpha = 1, 1 at alpha = 0 or gamma = 0. Equal to ``sum_{i=0..gamma} alpha^i``."""
    a, g = np.broadcast_arrays(_alpha(alpha), _gamma(gamma))
    near_one = np.abs(1.0 - a) < 1e-9
    safe = np.where(near_one, 0.5, a)
    closed = (1.0 - safe ** (g + 1.0)) / (1.0 - safe)
    return scalar_or_array(np.where(near_one, g + 1.0, closed))


def speedup(alpha, gamma, c):
    """Speedup over plain decoding, ``E / (gamma c + 1)``: a step costs gamma draft passes plus one
    target pass and yields E tokens instead of one."""
    return scalar_or_array(np.asarray(expected_tokens(alpha, gamma)) / (_gamma(gamma) * _cost(c) + 1.0))


def ceiling(alpha):
    """The limit of E as gamma grows, ``1 / (1 - alpha)`` (infinite at alpha = 1)."""
    a = _alpha(alpha)
    with np.errstate(divide="ignore"):
        return scalar_or_array(np.where(a >= 1.0, np.inf, 1.0 / np.where(a >= 1.0, 0.5, 1.0 - a)))


def speedup_surface(alphas, gammas, c) -> np.ndarray:
    """Speedup over the grid ``alphas x gammas`` at draft cost ``c``: shape ``[len(alphas), len(gammas)]``."""
    a = _alpha(alphas).reshape(-1, 1)
    g = _gamma(gammas).reshape(1, -1)
    return np.asarray(speedup(a, g, c))


def break_even_alpha(gamma, c, *, tol: float = 1e-12):
    """The acceptance rate at which speculation stops paying (speedup = 1), by bisection: E grows
    from 1 (alpha = 0) to gamma + 1 (alpha = 1), so the root of ``E(alpha) = gamma c + 1`` is unique.
    0 when c = 0 (any acceptance pays); 1 when c >= 1 (nothing pays, at best it breaks even at
    alpha = 1); NaN for gamma = 0 (no speculation: the speedup is always 1)."""
    g, cost = np.broadcast_arrays(_gamma(gamma), _cost(c))
    target = g * cost + 1.0
    lo = np.zeros_like(target)
    hi = np.ones_like(target)
    for _ in range(60):  # 2^-60: far below any printed precision
        mid = 0.5 * (lo + hi)
        below = np.asarray(expected_tokens(mid, g)) < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
        if np.all(hi - lo < tol):
            break
    root = 0.5 * (lo + hi)
    root = np.where(cost <= 0, 0.0, root)
    root = np.where(cost >= 1, 1.0, root)
    root = np.where(g == 0, np.nan, root)
    return scalar_or_array(root)


def optimal_gamma(alpha, c, max_gamma: int = 16):
    """The gamma in 0..max_gamma that maximises the speedup (0: speculation does not pay).
    Broadcasts over alpha and c."""
    if not isinstance(max_gamma, (int, np.integer)) or max_gamma < 0 or max_gamma > 1024:
        raise ValueError("max_gamma must be a whole number in 0..1024")
    a, cost = np.broadcast_arrays(_alpha(alpha), _cost(c))
    g = np.arange(max_gamma + 1, dtype=np.float64).reshape((-1,) + (1,) * a.ndim)
    s = np.asarray(speedup(a[None, ...], g, cost[None, ...]))
    best = np.argmax(s, axis=0)
    return int(best) if np.ndim(best) == 0 else best


def sensitivity(alpha, gamma, c, *, d_alpha: float = 0.01):
    """How much the speedup moves per +``d_alpha`` of acceptance versus per +1 draft token:
    returns ``(dS for alpha + d_alpha, dS for gamma + 1)``. The chapter's point: alpha matters more."""
    a = _alpha(alpha)
    up = np.minimum(a + d_alpha, 1.0)
    base = np.asarray(speedup(a, gamma, c))
    by_alpha = np.asarray(speedup(up, gamma, c)) - base
    by_gamma = np.asarray(speedup(a, _gamma(gamma) + 1, c)) - base
    return scalar_or_array(by_alpha), scalar_or_array(by_gamma)


def blended_alpha(weights, alphas) -> float:
    """Traffic-weighted acceptance rate: ``sum w_i alpha_i / sum w_i`` (e.g. 70% code at 0.88 and
    30% chat at 0.72 -> 0.832)."""
    w = np.asarray(weights, dtype=np.float64)
    a = _alpha(alphas)
    if w.shape != a.shape or w.ndim != 1 or w.size == 0:
        raise ValueError("weights and alphas must be 1-D arrays of the same length")
    if np.any(~np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError("weights must be >= 0 and not all zero")
    return float(np.dot(w, a) / w.sum())


def alpha_at_temperature(alpha_greedy, temperature, drop_per_unit: float = 0.125):
    """A stated assumption: acceptance falls linearly with sampling temperature, ``alpha(T) =
    alpha(0) - drop x T`` (the blog post: 10-15 points lower at T = 1 than at T = 0), floored at 0."""
    t = np.asarray(temperature, dtype=np.float64)
    if np.any(~np.isfinite(t)) or np.any(t < 0) or np.any(t > 5):
        raise ValueError("temperature must be within 0 and 5")
    if not np.isfinite(drop_per_unit) or drop_per_unit < 0 or drop_per_unit > 1:
        raise ValueError("drop_per_unit must be within 0 and 1")
    return scalar_or_array(np.clip(_alpha(alpha_greedy) - drop_per_unit * t, 0.0, 1.0))


def short_output_speedup(step_speedup, output_len, setup_steps: float = 1.0):
    """Speedup over a whole output of ``output_len`` tokens when speculation has a fixed set-up cost
    of ``setup_steps`` target decode steps (drafting the prompt, building the tree). The first token
    comes from the prefill either way (TTFT is unchanged), so the other ``L - 1`` are sped up:
    ``(L - 1) / (setup + (L - 1) / S)``; it tends to S for long outputs."""
    s = np.asarray(step_speedup, dtype=np.float64)
    n = np.asarray(output_len, dtype=np.float64)
    if np.any(~np.isfinite(s)) or np.any(s < 1e-6) or np.any(s > 1e6):
        raise ValueError("step_speedup must be within 0.000001 and 1,000,000")
    if np.any(n < 1) or np.any(~np.isfinite(n)) or np.any(n > 1e12):
        raise ValueError("output_len must be within 1 and 1e12 tokens")
    if not np.isfinite(setup_steps) or not 0 <= setup_steps <= 1e12:
        raise ValueError("setup_steps must be within 0 and 1e12")
    rest = n - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(rest <= 0, 1.0, rest / (setup_steps + rest / s))
    return scalar_or_array(out)


# -------------------------------------------------------------------------------------- simulator


@dataclass(frozen=True)
class BatchSpeedup:
    """Speculative speedup as the batch grows (arrays over ``batches``)."""

    batches: np.ndarray
    decode_s: np.ndarray  # one plain decode step over B tokens
    verify_s: np.ndarray  # one verification step over B x (gamma + 1) tokens
    draft_s: np.ndarray  # gamma draft steps
    speedup: np.ndarray  # E x decode / (verify + draft)

    @property
    def crossover_batch(self) -> float | None:
        """The batch from which speculation no longer pays (speedup < 1 from there on), None if it still
        pays at the largest batch. A MoE can dip below 1 at tiny batches (verification touches more
        experts) and recover; that dip is not the crossover (see ``pays``)."""
        ok = self.speedup >= 1.0
        if ok[-1]:
            return None
        last_ok = np.nonzero(ok)[0]
        return float(self.batches[last_ok[-1] + 1]) if last_ok.size else float(self.batches[0])

    @property
    def pays(self) -> np.ndarray:
        return self.speedup >= 1.0


def speculative_step_s(step_s, sequences, gamma: int, *, draft_cost: float = 0.0, draft_s=None):
    """The one price of a speculative decode step (the Speculative page, the serving model and the layouts
    under load all use it): a verification step over ``gamma + 1`` tokens per sequence plus ``gamma`` draft
    passes, ``verify + gamma x draft``. ``step_s(sequences, tokens_per_sequence)`` is the target's step time
    (vectorised or not); a draft pass is ``draft_s`` when given (a separate draft model's own step, already
    per pass) else ``draft_cost`` x the plain step (a built-in head: MTP, EAGLE). Returns
    ``(plain, verify, draft)``, each in seconds, with ``draft`` the gamma passes together."""
    if not callable(step_s):
        raise ValueError(f"step_s must be a function of (sequences, tokens per sequence), not {type(step_s).__name__}")
    g = _gamma(gamma)
    if np.ndim(g) or g > 64:
        raise ValueError(f"gamma (draft tokens per step) must be one whole number in 0..64, got {gamma!r}")
    gamma = int(g)
    draft_cost = float(_cost(draft_cost))
    n = np.asarray(sequences, dtype=np.float64)
    if n.size == 0 or not np.all(np.isfinite(n)) or np.any(n <= 0) or np.any(n > 1e9):
        raise ValueError("sequences must be numbers of sequences in (0, 1,000,000,000]")
    if draft_s is not None:
        d = np.asarray(draft_s, dtype=np.float64)
        if not np.all(np.isfinite(d)) or np.any(d < 0):
            raise ValueError("draft_s (seconds of one draft pass) must be finite and >= 0")
    plain = step_s(sequences, 1.0)
    if gamma == 0:
        return plain, plain, 0.0 * plain
    verify = step_s(sequences, float(gamma + 1))
    draft = gamma * (draft_s if draft_s is not None else draft_cost * plain)
    return plain, verify, draft


def served_draft_s(d: Deployment, gamma: int) -> float | None:
    """Seconds of one draft pass of ``d``'s built-in drafting (MTP, EAGLE-3, DSpark) as its stack's served step prices
    it: ``draft passes x per_draft_s / gamma`` (``d.served_step`` fitted for that drafting mode on published batch-1
    steps, :mod:`core.hardware.served_step`: TensorRT-LLM 0.52 ms per MTP draft, vLLM 1.42 ms per draft pass), or
    None where the deployment has no fitted drafting cost (then a draft pass is ``draft_cost`` x the plain step)."""
    from core.hardware.served_step import draft_passes

    cost, method, g = d.served_step, d.spec.method, int(_gamma(gamma))
    if cost is None or cost.mode == "cuda_graph" or cost.mode != method or g == 0 or d.draft is not None:
        return None
    return draft_passes(method, g) * cost.per_draft_s / g


def batch_speedup(
    d: Deployment,
    batches,
    *,
    alpha: float,
    gamma: int,
    context_len: int,
    draft_cost: float = 0.0,
    accepted_tokens: float | None = None,
) -> BatchSpeedup:
    """Speedup at each batch (sequences in one replica of ``d``) from the calibrated step-time model
    (:func:`core.perf.step_time` on ``d``: its layout, precision, redundant experts and efficiency factors).

    Plain decoding pays one step over B tokens per emitted token; speculation pays one verification step over
    ``B (gamma + 1)`` tokens (the same KV cache, more FLOPs and, for a MoE, more experts touched) plus gamma
    draft steps, for ``E(alpha, gamma)`` tokens (:func:`speculative_step_s`). Every step carries the model's fixed
    costs (kernel floors, the per-layer overhead, communication latency), which is why speculation pays most at
    batch 1 and less as the batch fills the GPUs; once the step is compute-bound verification costs ``gamma + 1``
    times more and the speedup falls below 1. The draft step is the draft model's (``d.draft``) own step on the
    same GPUs when there is one, else ``draft_cost`` times the target's step (a built-in head: MTP, EAGLE).
    ``accepted_tokens``: a measured mean accepted length at ``gamma`` (:mod:`core.speculative.acceptance`) in place
    of ``E(alpha, gamma)``."""
    from core import perf
    from core.deployment.parallel import fitting_tp
    from core.deployment.specs import ParallelLayout

    if not isinstance(d, Deployment):
        raise ValueError(f"d must be a Deployment, got {type(d).__name__}")
    b = np.atleast_1d(np.asarray(batches, dtype=np.float64))
    if b.size == 0 or not np.all(np.isfinite(b)) or np.any(b <= 0) or np.any(b > 1e7):
        raise ValueError("batches must be numbers of sequences in (0, 10,000,000]")
    g = int(_gamma(gamma))

    def steps(dep, tokens, per_sequence):
        gpus = dep.layout.gpus_per_stage * dep.layout.pp
        return np.array(
            [
                perf.step_time(
                    dep,
                    perf.StepConfig(
                        "decode",
                        float(t) * per_sequence / gpus,
                        context_len,
                        tokens_per_sequence=per_sequence,
                        redundant_experts=dep.redundant_experts,
                    ),
                ).step_s
                for t in tokens
            ]
        )

    draft_s, dm, layout = None, d.draft, d.layout
    if dm is not None:
        tp = fitting_tp(dm, layout.attention_tp)
        split = dm.moe is not None and dm.moe.n_routed_experts % tp == 0
        d_layout = (
            ParallelLayout(attention_tp=tp, expert_tp=tp)
            if dm.moe is None
            else ParallelLayout(attention_tp=tp, ep=tp if split else 1, expert_tp=1 if split else tp)
        )
        per_replica = np.ceil(b / max(layout.attention_dp, 1))  # each attention-DP group drafts its own
        # the draft's kernels alone: a draft pass runs inside the target's served step, not as a served step of its own
        own = d.with_(model=dm, layout=d_layout, redundant_experts=0, draft=None, served_step=None)
        draft_s = steps(own, per_replica, 1.0)
    elif (per_pass := served_draft_s(d, g)) is not None:
        draft_s = np.full(b.shape, per_pass)
    base, verify, draft = speculative_step_s(
        lambda n, per_seq: steps(d, n, per_seq),
        b,
        g,
        draft_cost=float(_cost(draft_cost)) if dm is None and draft_s is None else 0.0,
        draft_s=draft_s,
    )
    e = float(expected_tokens(alpha, g))
    if accepted_tokens is not None:  # a measured mean accepted length at this gamma replaces the closed form
        if not (isinstance(accepted_tokens, (int, float)) and 1 <= accepted_tokens <= g + 1):
            raise ValueError(f"accepted_tokens must be in [1, gamma + 1 = {g + 1}], got {accepted_tokens!r}")
        e = float(accepted_tokens)
    return BatchSpeedup(b, base, verify, draft, e * base / (verify + draft))


def resolved_alpha_cost(spec: SpecDecodeConfig, methods: Mapping[str, DraftMethod]) -> tuple[float, float]:
    """(alpha, c) of a speculative config: its own acceptance rate and draft cost where it sets them, else its
    method's catalog defaults (``catalogs/draft_methods.yaml``: every method has an entry). The pages, the
    report and the CLI all take them from here."""
    from core.deployment.specs import SpecDecodeConfig

    if not isinstance(spec, SpecDecodeConfig):
        raise ValueError(f"spec must be a SpecDecodeConfig, got {type(spec).__name__}")
    if not spec.enabled:
        raise ValueError("speculative decoding is off: there is no acceptance rate or draft cost to resolve")
    method = methods.get(spec.method) if hasattr(methods, "get") else None
    if method is None and (spec.acceptance_rate is None or spec.draft_cost is None):
        raise ValueError(
            f"no catalog entry for the speculative method {spec.method!r}: set the acceptance rate and the draft cost"
        )
    alpha = spec.acceptance_rate if spec.acceptance_rate is not None else method.default_alpha
    cost = spec.draft_cost if spec.draft_cost is not None else method.draft_cost_c
    return float(alpha), float(cost)


def default_gamma(method: str, methods: Mapping[str, DraftMethod]) -> int:
    """The draft length a method starts from, everywhere a scenario is built (URL, sidebar, CLI, report): its
    catalog ``default_gamma`` (``catalogs/draft_methods.yaml``; DeepSeek-V3's MTP: 1, its module depth), or
    the config's own default for a method without an entry."""
    from core.deployment.specs import SpecDecodeConfig

    entry = methods.get(method) if hasattr(methods, "get") and isinstance(method, str) else None
    if entry is None:
        return SpecDecodeConfig.model_fields["num_speculative_tokens"].default
    return int(entry.default_gamma)


def suggested_spec(model: ModelSpec, methods: Mapping[str, DraftMethod]) -> SpecDecodeConfig:
    """The draft a page explores when the scenario has speculation off: the model's own MTP module when it has
    one, else EAGLE-3 (the engines' default head), with the method's catalog gamma."""
    from core.deployment.specs import SpecDecodeConfig

    name = "mtp" if getattr(model, "num_mtp_layers", 0) and "mtp" in methods else "eagle3"
    if name not in methods:
        raise ValueError(f"the draft-method catalog has no {name!r} entry")
    return SpecDecodeConfig(method=name, num_speculative_tokens=default_gamma(name, methods))


def speedup_curves(c: float) -> dict[int, np.ndarray]:
    """Speedup over ``ALPHA_GRID`` for each draft length of ``CURVE_GAMMAS`` at draft cost ``c``."""
    return {g: speedup(ALPHA_GRID, g, c) for g in CURVE_GAMMAS}
