"""A colocated (aggregated) replica serving a closed loop of clients: what it delivers at each concurrency, as the
benchmarks that draw throughput-vs-interactivity frontiers measure it (vLLM ``bench serve --max-concurrency``,
AIPerf, InferenceX: ``C`` clients, each sending its next request when the last one finishes).

The engine runs chunked prefill (vLLM's and SGLang's default): every step decodes one token of every sequence
in decode and fills the rest of its token budget (``max_num_batched_tokens`` per attention rank) with prompt
chunks. With ``X`` requests per second, each prompt's computed tokens taking ``A`` seconds of prefill work, the
prefill work takes a share ``X A`` of the replica's time and stretches the decode steps:

* ``TPOT = t_decode(n) / (1 - X A)`` for ``n`` sequences in decode, and Little's law ``n = X x output x TPOT``;
* ``TTFT = A + ceil(computed / (budget - n)) x t_decode(n)``: the prompt's own work plus the decode parts of the
  steps it rides;
* the clients: ``C = X (TTFT + output x TPOT)``, solved for ``X``.

With attention DP the ranks meet at every MoE layer, so a step carrying a prompt chunk runs at the busiest rank's
pace (``mixed_step_scale``): the prompt work always, the decode steps in the share that carry a chunk.

When the prompts waiting outgrow the token budget (``n`` reaches ``budget x output / (output + computed)``, where
prefill and decode finish requests at the same rate), every step is full: the replica serves its most, and more
clients only wait longer for their first token. Clients beyond what the KV cache holds at the full context wait
in the engine's queue (Little's law gives their TTFT). Decode step times are the step-time model's
(:func:`core.perf.step_time`) on a grid of batch sizes, interpolated; a prompt token's cost is the model's prefill
step at a full chunk.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass, replace

from core import memory, perf
from core._util.checks import is_number, is_whole, whole
from core.deployment.bundle import Deployment
from core.deployment.specs import Workload
from core.serving.launch.spec import ENGINES, mixed_step_scale
from core.serving.operating_point import replica, unspeculated
from core.speculative import speculative_step_s
from core.speculative.closed_form import served_draft_s

__all__ = [
    "ReplicaCosts",
    "ServingPoint",
    "pareto",
    "replica_costs",
    "serve_closed_loop",
    "serve_decode_pool",
    "serve_disaggregated",
    "serve_saturated",
    "serving_sweep",
]

CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


@dataclass(frozen=True)
class ReplicaCosts:
    """What one replica's steps cost for a workload: the decode step at a grid of batch sizes, a computed prompt
    token's prefill seconds, the token budget per step and the sequences the KV cache holds at the full context."""

    batch: tuple[float, ...]  # sequences in decode in the replica
    decode_step_s: tuple[float, ...]
    prefill_s_per_token: float  # replica seconds per computed prompt token at a full chunk
    budget_tokens: int  # tokens a step may carry (max_num_batched_tokens x attention-DP ranks)
    kv_capacity: int  # sequences the replica's KV cache holds at the full context
    gpus: int  # GPUs of one replica
    draft_tokens: int = 0  # speculative decoding: tokens drafted per step (the step verifies draft + 1 per sequence)
    accepted_length: float = 1.0  # output tokens per sequence per step (1 without speculation)
    ttft_offset_s: float = 0.0  # per request, no GPU time: the deployment's served calibration (front end, queue)
    mixed_step_scale: float = 1.0  # a step carrying prompt work runs this much longer (attention-DP ranks' pacing)

    def __post_init__(self):
        b, t = self.batch, self.decode_step_s
        if not (isinstance(b, tuple) and isinstance(t, tuple) and 1 <= len(b) == len(t) <= 10_000):
            raise ValueError("batch and decode_step_s must be tuples of the same length (1..10,000)")
        if not all(is_number(x) and 0 < x <= 1e9 for x in b) or any(x >= y for x, y in itertools.pairwise(b)):
            raise ValueError("batch must be increasing sequence counts in (0, 1e9]")
        if not all(is_number(x) and 0 < x <= 1e6 for x in t):
            raise ValueError("decode_step_s must be step times in (0, 1e6] seconds")
        if not (is_number(self.prefill_s_per_token) and 0 < self.prefill_s_per_token <= 1e3):
            raise ValueError(f"prefill_s_per_token must be in (0, 1000] s, got {self.prefill_s_per_token!r}")
        for name in ("budget_tokens", "kv_capacity", "gpus"):
            v = getattr(self, name)
            if not (is_whole(v) and 1 <= v <= 10**12):
                raise ValueError(f"{name} must be a whole number in 1..10^12, got {v!r}")
        if not (is_whole(self.draft_tokens) and 0 <= self.draft_tokens <= 64):
            raise ValueError(f"draft_tokens must be a whole number in 0..64, got {self.draft_tokens!r}")
        if not (is_number(self.mixed_step_scale) and 1 <= self.mixed_step_scale <= 10):
            raise ValueError(f"mixed_step_scale must be in [1, 10], got {self.mixed_step_scale!r}")
        if not (is_number(self.accepted_length) and 1 <= self.accepted_length <= self.draft_tokens + 1):
            raise ValueError(
                f"accepted_length must be in [1, draft_tokens + 1 = {self.draft_tokens + 1}], got {self.accepted_length!r}"
            )

    def decode_s(self, n: float) -> float:
        """The decode step of ``n`` sequences: linear between grid points, the ends held flat."""
        b, t = self.batch, self.decode_step_s
        i = bisect.bisect_right(b, n)
        if i == 0:
            return t[0]
        if i == len(b):
            return t[-1]
        return t[i - 1] + (t[i] - t[i - 1]) * (n - b[i - 1]) / (b[i] - b[i - 1])

    def paced_decode_s(self, n: float, steps: float, computed: float) -> float:
        """The decode step of ``n`` sequences, each request ``steps`` decode steps and ``computed`` prompt tokens: ``n /
        steps`` prompts start per step, each over ceil(computed / room) steps; that share (at most all) is paced."""
        if self.mixed_step_scale == 1.0:
            return self.decode_s(n)
        room = max(1.0, self.budget_tokens - n * (self.draft_tokens + 1))
        share = min(1.0, n / steps * math.ceil(computed / room)) if steps > 0 else 1.0
        return self.decode_s(n) * (1.0 + (self.mixed_step_scale - 1.0) * share)

    def prompt_s(self, computed: float) -> float:
        """The replica's seconds for one prompt of ``computed`` tokens, in steps paced at ``mixed_step_scale``."""
        return computed * self.prefill_s_per_token * self.mixed_step_scale


@dataclass(frozen=True)
class ServingPoint:
    """One concurrency on one replica. Rates are per GPU; ``total`` counts every prompt token (cached or not) and output
    token, as the benchmarks' "total token throughput"; ``computed`` prefix-cache hits excluded, as engines count."""

    concurrency: int  # clients per replica
    running: float  # requests the engine holds (KV cache permitting)
    decoding: float  # of them in decode, on average
    requests_per_s: float  # per replica
    ttft_s: float
    tpot_s: float
    output_tokens_per_s_per_gpu: float
    total_tokens_per_s_per_gpu: float
    prefill_share: float  # of the replica's time
    regime: str  # "latency-bound", "token budget full", "KV cache full" or (two pools) "prefill pool full"
    computed_tokens_per_s_per_gpu: float = 0.0  # prompt tokens computed (prefix-cache hits excluded) + output

    @property
    def tokens_per_s_per_user(self) -> float:
        """Interactivity: output tokens per second one client sees while its answer streams."""
        return 1.0 / self.tpot_s


def replica_costs(
    d: Deployment,
    *,
    draft_tokens: int = 0,
    accepted_length: float = 1.0,
    draft_cost: float = 0.0,
    overlap: str = "none",
    batches: tuple[float, ...] | None = None,
) -> ReplicaCosts:
    """The :class:`ReplicaCosts` of one replica of ``d``'s layout (its ``dp`` ignored, its redundant-expert slots
    kept) for ``d``'s workload, memory assumptions and scale-up domain; raises ValueError when not one sequence of
    the workload's full context fits. The KV cache is sized without ``d``'s own speculative config (what is drafted
    is priced here): with speculative decoding (``draft_tokens`` > 0) a decode step verifies ``draft_tokens + 1``
    tokens per sequence and drafts ``draft_tokens`` times at ``draft_cost`` x the plain step (a built-in head such
    as MTP), for ``accepted_length`` output tokens per sequence (as :func:`core.speculative.batch_speedup` prices
    it). ``overlap``: the decode steps' two-batch overlap ("none" or "two_batch"), a decode plan's
    (:attr:`core.serving.plan.Plan.overlap`) to sweep the plan as the layout search scored it. ``batches``: the decode
    step at these batch sizes only (a measurement's own), not 1, 2, 4 .. up to the cache. With attention DP a step
    carrying prompt work pays :func:`core.serving.launch.spec.mixed_step_scale` (``mixed_step_scale``)."""
    if overlap not in ("none", "two_batch"):
        raise ValueError(f"overlap must be none or two_batch, got {overlap!r}")
    per_pass = served_draft_s(d, draft_tokens) if draft_tokens else None  # the stack's fitted draft pass, if any
    d = unspeculated(replica(d))
    workload, a, one, redundant_experts = d.workload, d.assumptions, d.layout, d.redundant_experts
    gpus = one.total_gpus
    cap = int(memory.max_concurrent_sequences(d, workload.context_len))
    if cap < one.attention_dp:
        raise ValueError(f"not one {workload.context_len:,}-token sequence per attention rank fits the KV cache")
    grid = sorted({1.0, float(cap), *(float(b) for b in (2**k for k in range(1, 30)) if b < cap)})
    if batches is not None:
        if not (isinstance(batches, tuple) and batches and all(is_number(b) and 0 < b <= 1e9 for b in batches)):
            raise ValueError(f"batches must be a non-empty tuple of sequence counts in (0, 1e9], got {batches!r}")
        grid = sorted(set(map(float, batches)))

    def step(phase: str, per_gpu: float, ctx: int, cached: int = 0, per_seq: float = 1.0) -> perf.StepTime:
        cfg = perf.StepConfig(
            phase,
            per_gpu,
            ctx,
            overlap=overlap if phase == "decode" else "none",
            redundant_experts=redundant_experts,
            cached_tokens=cached,
            tokens_per_sequence=per_seq,
        )
        return perf.step_time(d, cfg)

    ctx, k = workload.decode_context_len, draft_tokens

    def decode_s(n: float) -> float:
        _, verify, draft = speculative_step_s(
            lambda seqs, per_seq: step("decode", seqs * per_seq / gpus, ctx, per_seq=per_seq).step_s,
            n,
            k,
            draft_cost=draft_cost,
            draft_s=per_pass,
        )
        return verify + draft

    budget = a.max_num_batched_tokens * one.attention_dp
    chunk = step("prefill", budget / gpus, workload.input_len, workload.cached_prompt_tokens)
    per_token = 1.0 / (chunk.tokens_per_s_per_gpu * gpus)
    offset_s = d.calibration.ttft_offset_s if d.calibration is not None else 0.0  # per request, from the calibration
    mixed = mixed_step_scale(d.stack, one.attention_dp) if d.stack in ENGINES else 1.0
    return ReplicaCosts(
        tuple(grid),
        tuple(decode_s(n) for n in grid),
        per_token,
        budget,
        cap,
        gpus,
        k,
        float(accepted_length),
        offset_s,
        mixed,
    )


def _decoding_at(costs: ReplicaCosts, rate: float, steps: float) -> float:
    """The sequences in decode of a replica finishing ``rate`` requests/s of ``steps`` decode steps each with no
    prompt work in its steps (a decode pool): the root of ``n = rate x steps x t(n)``, at most the cache's."""
    lo, hi = 0.0, float(costs.kv_capacity)
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid < rate * steps * costs.decode_s(mid) else (lo, mid)
    return hi


def serve_closed_loop(costs: ReplicaCosts, workload: Workload, concurrency: int) -> ServingPoint:
    """The replica's steady state with ``concurrency`` clients (see the module docstring)."""
    return _steady(costs, workload, whole("concurrency", concurrency, 1, 10_000_000))


def _steady(
    costs: ReplicaCosts, workload: Workload, c: float, elsewhere_s: float | None = None, running: float | None = None
) -> ServingPoint:
    """:func:`serve_closed_loop` for ``c`` clients (a share of a pool's: not always whole). ``elsewhere_s``: prompts
    prefilled by another pool in that many seconds (no prefill work here). ``running``: :func:`serve_saturated`."""
    computed, al, width = workload.computed_prompt_tokens, costs.accepted_length, costs.draft_tokens + 1
    out = workload.output_len / al  # decode steps per request
    pool = elsewhere_s is not None  # a decode pool: its cache holds the sequences in decode, not those in prefill
    mixed = 1.0 if pool else costs.mixed_step_scale  # prompt work paced always, decode steps in the share carrying it
    a = 0.0 if pool else costs.prompt_s(computed)
    held = float(min(c, costs.kv_capacity))
    # decode sequences at which every step is full: prefill and decode finish requests at the same rate,
    # n / out = (budget - n x width) / computed
    busiest = math.inf if elsewhere_s is not None else costs.budget_tokens * out / (computed + out * width)

    def step_s(n: float) -> float:
        return costs.decode_s(n) if pool else costs.paced_decode_s(n, out, computed)

    def ttft0(n: float) -> float:
        if elsewhere_s is not None:
            return elsewhere_s + costs.ttft_offset_s
        room = costs.budget_tokens - n * width  # each of the prompt's own steps carries a chunk of it: paced in full
        own = math.ceil(computed / room) * costs.decode_s(n) * mixed if room >= 1 else math.inf
        return a + own + costs.ttft_offset_s

    def rate(n: float) -> float:  # requests/s with n sequences in decode: n = x out t(n) / (1 - x a)
        return n / (out * step_s(n) + n * a)

    if running is None:
        # the clients: n in decode plus x x TTFT waiting for a first token (both grow with n): bisect on n.
        # Colocated, a prompt in prefill holds the cache too (n + x TTFT <= what it holds); a decode pool's prompts
        # wait in the prefill pool, so its own sequences fill the cache (n <= what it holds) once enough clients wait
        clients = float(c) if pool else held
        lo, hi = 0.0, held
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mid + rate(mid) * ttft0(mid) < clients else (lo, mid)
        n = lo if lo > 0 else hi
    else:
        n = running
    x = rate(n)
    regime = "latency-bound"
    if n > busiest:  # the budget binds: every step full, prefill and decode finishing requests alike
        n = busiest
        step = (costs.decode_s(n) + (costs.budget_tokens - n * width) * costs.prefill_s_per_token) * mixed
        x, tpot = n / (out * step), step
        regime = "token budget full"
    else:
        tpot = step_s(n) / (1.0 - x * a)
    ttft = ttft0(n) if running is not None else (max(c / x - out * tpot, ttft0(n)) if x > 0 else math.inf)
    tpot /= al  # per output token
    if running is None and ((n >= costs.kv_capacity * (1 - 1e-9)) if pool else c > costs.kv_capacity):
        regime = "KV cache full"
    return ServingPoint(
        math.ceil(c),
        n if pool or running is not None else held,
        n,
        x,
        ttft,
        tpot,
        x * workload.output_len / costs.gpus,
        x * (workload.input_len + workload.output_len) / costs.gpus,
        x * a,
        regime,
        x * (computed + workload.output_len) / costs.gpus,
    )


def serve_saturated(costs: ReplicaCosts, workload: Workload, running: float) -> ServingPoint:
    """``running`` sequences in decode, a new request taking each finished one's place at once (an offline benchmark,
    ``trtllm-bench``, at the batch it states; not checked against the cache): :func:`serve_closed_loop`'s step model.
    TTFT is a prompt's own work and the steps it rides, no queue."""
    if not (is_number(running) and 1 <= running <= 1e9):
        raise ValueError(f"running must be a number of sequences in [1, 1e9], got {running!r}")
    return _steady(costs, workload, float(running), running=float(running))


def serve_decode_pool(costs: ReplicaCosts, workload: Workload, concurrency: int, ttft_s: float) -> ServingPoint:
    """A decode replica whose prompts another pool prefills in ``ttft_s`` seconds (disaggregated): no prefill work
    here, each client waiting ``ttft_s`` between its requests' arrival and their first decode step."""
    c = whole("concurrency", concurrency, 1, 10_000_000)
    if not (is_number(ttft_s) and 0 <= ttft_s <= 1e6):
        raise ValueError(f"ttft_s must be seconds in [0, 1,000,000], got {ttft_s!r}")
    return _steady(costs, workload, c, float(ttft_s))


def serve_disaggregated(
    decode: ReplicaCosts,
    decode_replicas: int,
    prefill: ReplicaCosts,
    prefill_replicas: int,
    workload: Workload,
    concurrency: int,
) -> ServingPoint:
    """A prefill pool and a decode pool serving ``concurrency`` clients, spread evenly over the decode replicas.
    A prompt takes its computed tokens at the prefill replica's rate (``prefill.prefill_s_per_token``) for its
    first token; the decode replicas then run with no prefill work. When the decode side would finish requests
    faster than the prefill pool computes their prompts, the prefill pool sets the rate and the clients wait for
    it. Rates are per GPU of both pools; ``prefill_share`` is the prefill pool's utilisation."""
    c = whole("concurrency", concurrency, 1, 10_000_000)
    rd, rp = (
        whole("decode_replicas", decode_replicas, 1, 100_000),
        whole("prefill_replicas", prefill_replicas, 1, 100_000),
    )
    per_prompt = workload.computed_prompt_tokens * prefill.prefill_s_per_token
    most = rp / per_prompt  # prompts per second the prefill pool computes
    gpus = rd * decode.gpus + rp * prefill.gpus
    p = _steady(decode, workload, c / rd, per_prompt)
    x = rd * p.requests_per_s
    if x > most:  # prefill-bound: each decode replica finishes the share of prompts the prefill pool lets through
        x, steps = most, workload.output_len / decode.accepted_length
        n = _decoding_at(decode, most / rd, steps)
        p = replace(p, decoding=n, requests_per_s=most / rd, tpot_s=decode.decode_s(n) / decode.accepted_length)
    tpot = p.tpot_s
    ttft = max(c / x - workload.output_len * tpot, per_prompt + decode.ttft_offset_s)
    return ServingPoint(
        c,
        p.running * rd,
        p.decoding * rd,
        x,
        ttft,
        tpot,
        x * workload.output_len / gpus,
        x * (workload.input_len + workload.output_len) / gpus,
        x / most,
        "prefill pool full" if x >= most * (1 - 1e-9) else p.regime,
        x * (workload.computed_prompt_tokens + workload.output_len) / gpus,
    )


def serving_sweep(
    costs: ReplicaCosts, workload: Workload, concurrencies=None, ttft_s: float | None = None
) -> list[ServingPoint]:
    """:func:`serve_closed_loop` (with ``ttft_s``: :func:`serve_decode_pool`) at each concurrency up to the first
    that fills the KV cache (more clients only queue). By default 1, 2, 4, ... as far as the replica's own cache
    reaches, however many sequences it holds (a wide-EP replica's tens of thousands: review 3 M10)."""
    full = _fill_clients(costs, workload, ttft_s)
    points = []
    for c in concurrencies if concurrencies is not None else (*(2**k for k in range(24)), 10_000_000):
        pool = ttft_s is not None
        points.append(serve_decode_pool(costs, workload, c, ttft_s) if pool else serve_closed_loop(costs, workload, c))
        if c >= full:
            break
    return points


def _fill_clients(costs: ReplicaCosts, workload: Workload, ttft_s: float | None = None) -> float:
    """The clients at which the replica's KV cache is full: what it holds colocated; a decode pool whose prompts
    another pool prefills in ``ttft_s`` also has ``x ttft_s`` clients waiting for a first token when its cache holds
    ``kv`` sequences in decode (``x = kv / (steps t(kv))``, Little's law)."""
    kv = float(costs.kv_capacity)
    if ttft_s is None:
        return kv
    steps = workload.output_len / costs.accepted_length
    return kv + kv / (steps * costs.decode_s(kv)) * ttft_s


def pareto(points: list[ServingPoint]) -> list[ServingPoint]:
    """The points no other beats on both output tokens/s per GPU and tokens/s per user, fastest users first."""
    best = sorted(points, key=lambda p: (-p.tokens_per_s_per_user, -p.output_tokens_per_s_per_gpu))
    out, top = [], -math.inf
    for p in best:
        if p.output_tokens_per_s_per_gpu > top:
            out.append(p)
            top = p.output_tokens_per_s_per_gpu
    return out
