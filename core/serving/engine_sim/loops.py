"""How requests reach the engine (issue 35): a closed loop of clients (as the frontier benchmarks run: vLLM ``bench
serve --max-concurrency``, InferenceX, AIPerf), an open loop of Poisson arrivals at a rate (``--request-rate``),
and two pools (disaggregated prefill and decode) joined by the KV hand-off.

Measurement: requests are numbered as they are sent; the first ``warmup`` are discarded, the next ``requests``
measured, and more are sent (the clients go on, arrivals go on) until every measured one has finished, so none
sees the load drain. Rates count the requests finishing (measured or not) between the first and the last
measured request's arrival, over that span. Default warm-up: two requests per client (closed loop: the start's
burst and its echo); three mean lifetimes of arrivals (open loop, the lifetime as :func:`core.serving`'s
analytical model estimates it), at least a tenth of ``requests`` (half a lifetime from a warm start, see
:func:`simulate_open`). An open loop is "unstable" when the requests in the system (arrived, not finished) grew
over the span by more than a tenth of ``requests``: arrivals outpace the engine, or come too close to its capacity
to settle within the run (more ``requests`` tell which).

Bounds (a ValueError naming the argument otherwise): at most 1,000,000 measured ``requests`` and as many warm-up
ones, rates in [10^-6, 10^9] requests/s, and a run's prompts at most 500,000 token-budget steps of prefill
(requests x mean computed prompt tokens / token budget) and 50,000,000 speculative decode steps to draw.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from core._util.checks import amount, whole
from core.serving.closed_loop import ReplicaCosts
from core.serving.engine_sim.engine import Trace, run_engine
from core.serving.engine_sim.knobs import (
    DEFAULT_KNOBS,
    MAX_DRAWS,
    EngineKnobs,
    Lengths,
    Resolved,
    acceptance_rate,
    emitted_per_step,
    load_list,
    resolved,
)
from core.serving.engine_sim.results import Goodput, SimResult, goodput, miss

__all__ = [
    "FRONTIER",
    "closed_frontier",
    "goodput_rate",
    "open_sweep",
    "simulate_closed",
    "simulate_disaggregated",
    "simulate_open",
]

FRONTIER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
MAX_REQUESTS = 1_000_000  # measured requests of one run, and warm-up ones
MAX_CHUNK_STEPS = 500_000  # token-budget steps of prefill in one run (~7 s of the loop)
MIN_RATE, MAX_RATE = 1e-6, 1e9  # requests/s


def _requests(requests: int, warmup: int | None) -> tuple[int, int | None]:
    n = whole("requests", requests, 1, MAX_REQUESTS)
    return n, None if warmup is None else whole("warmup", warmup, 0, MAX_REQUESTS)


def _rate(rate: float) -> float:
    return amount("rate", rate, MIN_RATE, MAX_RATE)


def _check_work(total: int, lengths: Lengths, res: Resolved) -> None:
    """Refuse a run whose prompts alone take more than :data:`MAX_CHUNK_STEPS` steps of the token budget."""
    steps = total * lengths.mean("input") * (1.0 - res.prefix_hit) / res.budget
    if steps > MAX_CHUNK_STEPS:
        raise ValueError(
            f"requests x mean computed prompt tokens / token_budget must be at most {MAX_CHUNK_STEPS:,} prefill steps "
            f"in one run, got {steps:,.3g} ({total:,} requests, warm-up included, token_budget {res.budget:,}): fewer "
            "requests, shorter prompts or a larger token_budget"
        )


def decode_steps(tokens: np.ndarray, res: Resolved, rng: np.random.Generator) -> np.ndarray:
    """Decode steps each request needs to emit ``tokens`` more tokens (its output less the first), each step
    emitting :func:`core.serving.engine_sim.knobs.emitted_per_step` tokens (one without speculation); at most
    :data:`core.serving.engine_sim.knobs.MAX_DRAWS` steps drawn in all."""
    k, al = res.draft_tokens, res.accepted_length
    if k == 0 or al <= 1.0 or len(tokens) == 0:
        return tokens.astype(np.int64)
    if al >= k + 1:
        return -(-tokens // (k + 1))
    # a block of draws per request: its mean steps + 4 standard deviations (a renewal count: variance
    # tokens x var(E) / E^3); the few it does not cover are drawn again, a block as long as their tokens
    alpha = acceptance_rate(k, al)
    var = sum((2 * j + 1) * alpha**j for j in range(k + 1)) - al**2
    size = np.minimum(tokens, np.ceil(tokens / al + 4 * np.sqrt(tokens * var / al**3)) + 4).astype(np.int64)
    if int(size.sum()) > MAX_DRAWS:
        raise ValueError(
            f"requests x output tokens / accepted_length must be at most {MAX_DRAWS:,} speculative decode steps in one "
            f"run, got about {int(size.sum()):,}: fewer requests or shorter outputs"
        )
    steps, short = _steps_in_blocks(tokens, size, res, rng)
    if short.any():
        steps[short], _ = _steps_in_blocks(tokens[short], tokens[short], res, rng)
    return steps


def _steps_in_blocks(tokens: np.ndarray, size: np.ndarray, res: Resolved, rng: np.random.Generator):
    """Steps to emit ``tokens`` from blocks of ``size`` draws each, and which blocks fell short."""
    cum = np.cumsum(emitted_per_step(res.draft_tokens, res.accepted_length, int(size.sum()), rng), dtype=np.int64)
    start = np.cumsum(size) - size
    base = np.where(start > 0, cum[np.maximum(start - 1, 0)], 0)
    end = np.where(size > 0, cum[np.maximum(start + size - 1, 0)], 0)
    short = (tokens > 0) & (end - base < tokens)
    last = np.searchsorted(cum, base + tokens, side="left")
    return np.where(tokens > 0, last - start + 1, 0).astype(np.int64), short


def _generators(seed: int) -> list[np.random.Generator]:
    """Separate streams for lengths, arrivals and acceptance: one seed, each draw independent of the others."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]


def _engine(costs: ReplicaCosts, res: Resolved, n: int, computed, steps, **loop) -> Trace:
    cap = min(res.cap, n)
    table = np.interp(np.arange(cap + 1), costs.batch, costs.decode_step_s).tolist()  # decode_s(0..cap)
    engine = (table, costs.prefill_s_per_token, res.budget, res.draft_tokens + 1, cap, res.prefill_first)
    return run_engine(*engine, computed, steps, mixed_scale=costs.mixed_step_scale, **loop)


def _result(mode: str, load: float, tr: Trace, w: int, n: int, inp, out, gpus: int, offset_s: float) -> SimResult:
    """The measured requests ``w..w+n-1`` of a run and its rates over their arrival span (see the module
    docstring); ``offset_s`` (the served calibration's per-request TTFT offset: front end, tokenisation, queue, no
    GPU time) is added to every request's TTFT and end-to-end latency."""
    ids = np.arange(w, w + n)
    arr, first, fin = tr.arrival_t, tr.first_t, tr.finish_t
    t0, t1 = arr[w], arr[w + n - 1]
    o = out[ids]
    done = (fin > t0) & (fin <= t1)  # NaN (unfinished) compares False
    if not t1 > t0:  # every measured request sent at once: the span is theirs, to the last finish
        t1 = float(np.max(fin[ids]))
        done = np.zeros(len(fin), bool)
        done[ids] = True
    keep = (tr.gap_end_t > t0) & (tr.gap_end_t <= t1)
    # the queue's growth over the span: arrived and not finished at its end, less at its start
    sent, ended = np.sort(arr[~np.isnan(arr)]), np.sort(fin[~np.isnan(fin)])

    def in_system(t: float) -> int:
        return int(np.searchsorted(sent, t, "right") - np.searchsorted(ended, t, "right"))

    stable = mode == "closed" or in_system(t1) - in_system(t0) <= 0.1 * n
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(o > 1, (fin[ids] - first[ids]) / np.maximum(o - 1, 1), np.nan)
    return SimResult(
        mode,
        load,
        first[ids] - arr[ids] + offset_s,
        tpot,
        fin[ids] - arr[ids] + offset_s,
        inp[ids],
        o,
        tr.gap_s[keep],
        tr.gap_count[keep],
        int(done.sum()),
        int(out[done].sum()),
        float(t1 - t0),
        gpus,
        stable,
    )


def simulate_closed(
    costs: ReplicaCosts,
    lengths: Lengths,
    concurrency: int,
    knobs: EngineKnobs = DEFAULT_KNOBS,
    *,
    requests: int = 2000,
    warmup: int | None = None,
    think_s: float = 0.0,
    stagger: bool = False,
) -> SimResult:
    """``concurrency`` clients, each sending its next request ``think_s`` after its last finishes. All start at
    once, as a benchmark does; with equal lengths the requests admitted together finish together and come back
    together, for ever (lockstep: a prompt shares its step with the others of its wave). ``stagger``: each
    client's first request skips a random share of its decode steps instead, so the clients start out of phase
    (the steady state the analytical model :func:`core.serving.serve_closed_loop` describes). A per-request TTFT
    offset in ``costs`` (a served calibration's) delays each request's reaching the engine, as a think time does,
    and is counted in its TTFT."""
    c = whole("concurrency", concurrency, 1, 1_000_000)
    n, w = _requests(requests, warmup)
    w = 2 * c if w is None else w
    think = amount("think_s", think_s, 0.0, 1e6)
    if not isinstance(stagger, bool):
        raise ValueError(f"stagger must be True or False, got {str(stagger)[:40]!r}")
    res = resolved(costs, lengths, knobs)
    g_len, _, g_acc = _generators(res.seed)
    total = w + n + max(c, n // 4)  # clients keep sending while the measured requests finish
    _check_work(w + n, lengths, res)
    inp, out = lengths.draw(total, g_len)
    steps = decode_steps(out - 1, res, g_acc)
    if stagger:
        steps[:c] = np.floor(steps[:c] * g_acc.random(min(c, total))).astype(np.int64)
    off = costs.ttft_offset_s
    tr = _engine(costs, res, total, res.computed(inp), steps, clients=c, think_s=think + off, stop_before=w + n)
    return _result("closed", float(c), tr, w, n, inp, out, costs.gpus, off)


def simulate_open(
    costs: ReplicaCosts,
    lengths: Lengths,
    rate: float,
    knobs: EngineKnobs = DEFAULT_KNOBS,
    *,
    requests: int = 2000,
    warmup: int | None = None,
    warm: bool = False,
) -> SimResult:
    """Poisson arrivals at ``rate`` requests/s, from an empty replica (a benchmark's start) or, ``warm``, from the
    steady state :func:`_open_steady` estimates: its sequences in decode already running at time 0, each part-way
    through its output (a uniform share of its decode steps left; prefilled before the run, counted as warm-up), so
    half a lifetime of arrivals warms the run up instead of three, and a replica holding thousands of sequences
    settles within a run of a few thousand requests. Arrivals go on for one and a half lifetimes after the measured
    ones (at least a quarter of ``requests``, at most ten times), so they finish under the load they arrived in."""
    lam = _rate(rate)
    n, w = _requests(requests, warmup)
    if not isinstance(warm, bool):
        raise ValueError(f"warm must be True or False, got {str(warm)[:40]!r}")
    res = resolved(costs, lengths, knobs)
    steady = _open_steady(costs, res, lengths, lam)
    if w is None:  # arrivals of three lifetimes (half of one, warm), at least a tenth of n, at most five times
        lives = 0.5 if warm else 3.0
        w = n // 10 if steady is None else int(min(5 * n, max(n // 10, math.ceil(lives * lam * steady[1]))))
    m0 = min(res.cap, round(steady[0])) if warm and steady is not None else 0
    tail = n // 4 if steady is None else int(min(10 * n, max(n // 4, math.ceil(1.5 * lam * steady[1]))))
    _check_work(w + n, lengths, res)
    lead = m0 + w  # the first measured request
    total = lead + n + tail
    g_len, g_arr, g_acc = _generators(res.seed)
    inp, out = lengths.draw(total, g_len)
    arrivals = np.concatenate([np.zeros(m0), _open_arrivals(lam, total - m0, g_arr)])
    steps = decode_steps(out - 1, res, g_acc)
    comp = res.computed(inp)
    given = None
    if m0:  # already decoding at 0: no prompt left, a uniform share of the decode steps
        steps[:m0] = np.floor(steps[:m0] * g_acc.random(m0)).astype(np.int64)
        comp[:m0] = 0
        given = np.zeros(total)
    tr = _engine(costs, res, total, comp, steps, arrivals=arrivals, stop_before=lead + n, first_given=given)
    return _result("open", lam, tr, lead, n, inp, out, costs.gpus, costs.ttft_offset_s)


def _open_steady(costs: ReplicaCosts, res: Resolved, lengths: Lengths, rate: float) -> tuple[float, float] | None:
    """The steady state at ``rate`` as the analytical model estimates it: the sequences in decode ``m = rate x
    steps x t(m) / (1 - a)`` (at most the running cap), ``a`` the prompts' share of the time, and a request's
    lifetime ``steps x t(m) / (1 - a)``; None when the prompts alone outrun the replica (no steady state). Steps
    carrying prompt work are paced as the analytical model paces them (:meth:`ReplicaCosts.paced_decode_s`)."""
    steps = max(1.0, (lengths.mean("output") - 1) / res.accepted_length)
    computed = lengths.mean("input") * (1 - res.prefix_hit)
    a = rate * costs.prompt_s(computed)
    if a >= 1:
        return None

    def t(m: float) -> float:
        return costs.paced_decode_s(m, steps, computed)

    lo, hi = 0.0, float(res.cap)
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid < rate * steps * t(mid) / (1 - a) else (lo, mid)
    return hi, steps * t(hi) / (1 - a)


def _open_arrivals(rate: float, total: int, rng: np.random.Generator) -> np.ndarray:
    return np.cumsum(rng.exponential(1.0 / rate, total))


def closed_frontier(
    costs: ReplicaCosts,
    lengths: Lengths,
    concurrencies=FRONTIER,
    knobs: EngineKnobs = DEFAULT_KNOBS,
    *,
    requests: int = 2000,
) -> list[SimResult]:
    """:func:`simulate_closed` at each concurrency (the throughput-vs-interactivity frontier's points)."""
    return [
        simulate_closed(costs, lengths, c, knobs, requests=requests) for c in load_list("concurrencies", concurrencies)
    ]


def open_sweep(
    costs: ReplicaCosts, lengths: Lengths, rates, knobs: EngineKnobs = DEFAULT_KNOBS, *, requests: int = 2000
) -> list[SimResult]:
    """:func:`simulate_open` at each rate."""
    return [simulate_open(costs, lengths, r, knobs, requests=requests) for r in load_list("rates", rates)]


def goodput_rate(
    costs: ReplicaCosts,
    lengths: Lengths,
    ttft_target_s: float,
    tpot_target_s: float,
    quantile: float = 0.99,
    knobs: EngineKnobs = DEFAULT_KNOBS,
    *,
    requests: int = 2000,
    iterations: int = 10,
) -> Goodput:
    """The highest Poisson rate whose ``quantile`` TTFT and TPOT meet both targets, by bisection between a light
    load and the closed loop's most (the engine full of clients); the same seed at every rate."""
    whole("iterations", iterations, 1, 60)
    goodput([], ttft_target_s, tpot_target_s, quantile)  # the targets checked before any run
    res = resolved(costs, lengths, knobs)
    most = simulate_closed(costs, lengths, min(res.cap, 4096), knobs, requests=requests).requests_per_s

    def at(rate: float) -> tuple[SimResult, str | None]:
        r = simulate_open(costs, lengths, rate, knobs, requests=requests)
        return r, miss(r, ttft_target_s, tpot_target_s, quantile)

    best, why = at(most * 0.01)
    if why is not None:
        return Goodput(0.0, 0.0, 0.0, None, "none met")
    top, why = at(most)
    if why is None:
        return Goodput(top.load, top.requests_per_s, top.output_tokens_per_s_per_gpu, top, "capacity")
    hi, binding = most, why
    for _ in range(iterations):
        r, why = at((best.load + hi) / 2)
        if why is None:
            best = r
        else:
            hi, binding = r.load, why
    return Goodput(best.load, best.requests_per_s, best.output_tokens_per_s_per_gpu, best, binding)


def simulate_disaggregated(
    prefill: ReplicaCosts,
    prefill_replicas: int,
    decode: ReplicaCosts,
    decode_replicas: int,
    lengths: Lengths,
    rate: float,
    *,
    prefill_knobs: EngineKnobs = DEFAULT_KNOBS,
    decode_knobs: EngineKnobs = DEFAULT_KNOBS,
    handoff_s: float = 0.0,
    handoff_s_per_token: float = 0.0,
    requests: int = 2000,
    warmup: int | None = None,
) -> SimResult:
    """Poisson arrivals at ``rate`` over a prefill pool and a decode pool, each replica the same engine: a prompt's
    replica (round robin) computes it and yields the first token; its KV moves in ``handoff_s + handoff_s_per_token
    x prompt tokens``; a decode replica (round robin in hand-off order) admits it as a running sequence when a
    slot frees. The seed and prefix-cache share are ``prefill_knobs``'."""
    lam = _rate(rate)
    rp, rd = (
        whole("prefill_replicas", prefill_replicas, 1, 10_000),
        whole("decode_replicas", decode_replicas, 1, 10_000),
    )
    hs, hpt = amount("handoff_s", handoff_s, 0.0, 1e3), amount("handoff_s_per_token", handoff_s_per_token, 0.0, 1.0)
    n, w = _requests(requests, warmup)
    w = n // 10 if w is None else w
    pres = resolved(prefill, lengths, prefill_knobs, "prefill_knobs")
    dres = resolved(decode, lengths, decode_knobs, "decode_knobs")
    g_len, g_arr, g_acc = _generators(pres.seed)
    total = w + n + n // 4
    _check_work(-(-(w + n) // rp), lengths, pres)  # each prefill replica's share
    inp, out = lengths.draw(total, g_len)
    arrivals = _open_arrivals(lam, total, g_arr)
    comp = pres.computed(inp)
    first = np.empty(total)
    whole_prompts = replace(prefill, mixed_step_scale=1.0)  # prompts only, no decode waits: unpaced (as serving's)
    for k in range(rp):  # each prefill replica: its share of the arrivals (round robin), one output token each
        ids = np.arange(k, total, rp)
        first[ids] = _engine(
            whole_prompts, pres, len(ids), comp[ids], np.zeros(len(ids), np.int64), arrivals=arrivals[ids]
        ).first_t
    ready = first + hs + hpt * inp
    steps = decode_steps(out - 1, dres, g_acc)
    finish = np.empty(total)
    gaps = []
    by_ready = np.argsort(ready, kind="stable")
    for k in range(rd):  # each decode replica: its share in hand-off order, first tokens already out
        ids = by_ready[k::rd]
        tr = _engine(
            decode,
            dres,
            len(ids),
            np.zeros(len(ids), np.int64),
            steps[ids],
            arrivals=ready[ids],
            first_given=first[ids],
        )
        finish[ids] = tr.finish_t
        gaps.append((tr.gap_end_t, tr.gap_s, tr.gap_count))
    g_end, g_s, g_n = (np.concatenate(x) for x in zip(*gaps, strict=True))
    joined = Trace(arrivals, first, finish, np.argsort(finish), g_end, g_s, g_n)
    return _result("open", lam, joined, w, n, inp, out, rp * prefill.gpus + rd * decode.gpus, prefill.ttft_offset_s)
