"""The continuous-batching loop of one replica (issue 35): steps back to back, each decoding the running sequences
and carrying prompt chunks, time advanced in jumps.

The step model, shared with :mod:`core.serving`: a step that decodes ``n`` sequences and prefills ``p`` prompt
tokens costs ``decode_s(n) + p x prefill_s_per_token`` (a prefill-only step ``decode_s(0)``, the grid's first
point, + ``p x`` per token), times the replica's ``mixed_step_scale`` with attention DP (the rank carrying the
chunk paces the others). A sequence's prompt is done at the end of the step carrying its last chunk, which
yields its first token (TTFT); each later step that decodes it emits 1..draft+1 tokens (an "emission": the gap
between two is an inter-token latency, one per streamed chunk as vLLM's ``bench serve`` counts it).

Speed: while no prompt work is pending and nothing can arrive and be admitted, every step is the same
(``decode_s(n)``), so the loop jumps to the next finish (the smallest remaining decode-step count, kept in a heap
over a global decode-step counter: no per-sequence update) or the next arrival. Steps carrying prompt chunks run
one at a time: about two loop turns per request.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

__all__ = ["Trace"]  # run_engine: the loop the public runs of core.serving.engine_sim.loops check and call


@dataclass(frozen=True, eq=False)
class Trace:
    """What one run recorded: per request (by id) its arrival, first-token and finish times (NaN: never reached),
    the ids in finishing order, and every inter-token gap as (end time, seconds, how many sequences)."""

    arrival_t: np.ndarray
    first_t: np.ndarray
    finish_t: np.ndarray
    finished: np.ndarray  # request ids in finishing order
    gap_end_t: np.ndarray
    gap_s: np.ndarray
    gap_count: np.ndarray


def run_engine(
    step_s: list[float],
    per_token_s: float,
    budget: int,
    width: int,
    cap: int,
    prefill_first: bool,
    computed: np.ndarray,
    steps: np.ndarray,
    *,
    arrivals: np.ndarray | None = None,
    clients: int = 0,
    think_s: float = 0.0,
    stop_before: int | None = None,
    first_given: np.ndarray | None = None,
    mixed_scale: float = 1.0,
) -> Trace:
    """Run requests ``0..len(computed)-1`` through the engine.

    ``step_s[n]``: the decode step of ``n`` sequences (n = 0..cap); ``computed[r]``: prompt tokens to prefill (0:
    prefilled elsewhere, its first token at ``first_given[r]``: a decode pool); ``steps[r]``: decode steps after
    the first token. Arrivals: ``arrivals`` (sorted times, open loop) or ``clients`` (closed loop: each sends the
    next request ``think_s`` after its last one finishes; none once every request is sent). Stops when every
    request below ``stop_before`` (default: every request) has finished. ``mixed_scale``: a step carrying prompt
    chunks runs that much longer (attention-DP ranks paced by the one with the chunk; ReplicaCosts.mixed_step_scale).
    """
    n = len(computed)
    comp, nsteps = computed.tolist(), steps.tolist()
    given = first_given.tolist() if first_given is not None else None
    nan = math.nan
    arr_t, first_t, fin_t = [nan] * n, [nan] * n, [nan] * n
    if arrivals is not None:
        pending = deque(zip(arrivals.tolist(), range(n), strict=True))
        issued = n
    else:
        issued = min(clients, n)
        pending = deque((0.0, r) for r in range(issued))
    stop = n if stop_before is None else min(stop_before, n)
    left = stop  # requests below ``stop`` not finished yet
    waiting: deque[int] = deque()
    pre: deque[list[int]] = deque()  # [request, prompt tokens left], admitted, first come first served
    heap: list[tuple[int, int]] = []  # (decode-step count at which it finishes, request)
    fresh: list[float] = []  # first-token times of sequences entering decode since the last decoding step
    g_end: list[float] = []
    g_s: list[float] = []
    g_n: list[int] = []
    order: list[int] = []
    now, dsteps, last_emit = 0.0, 0, 0.0

    def finish(r: int) -> None:
        nonlocal issued, left
        fin_t[r] = now
        order.append(r)
        left -= r < stop
        if issued < n and arrivals is None:
            pending.append((now + think_s, issued))
            issued += 1

    def emit(t1: float, n_dec: int, k: int, dt: float) -> None:
        # the first of k decoding steps ends at t1: sequences that emitted at the last decoding step waited
        # t1 - last_emit, those that entered decode since then t1 - their first token; the k - 1 after: dt each
        old = n_dec - len(fresh)
        for ft in fresh:
            g_end.append(t1)
            g_s.append(t1 - ft)
            g_n.append(1)
        fresh.clear()
        if old:
            g_end.append(t1)
            g_s.append(t1 - last_emit)
            g_n.append(old)
        if k > 1:
            g_end.append(t1)
            g_s.append(dt)
            g_n.append(n_dec * (k - 1))

    while left:
        while pending and pending[0][0] <= now:
            t, r = pending.popleft()
            arr_t[r] = t
            waiting.append(r)
        running = len(heap) + len(pre)
        while waiting and running < cap and comp[waiting[0]] == 0:  # prefilled elsewhere: straight to decode
            r = waiting.popleft()
            running += 1
            first_t[r] = given[r]
            if nsteps[r] == 0:
                finish(r)
                running -= 1
            else:
                heapq.heappush(heap, (dsteps + nsteps[r], r))
                fresh.append(given[r])
        n_dec = len(heap)
        # plan this step's prompt chunks: the partly prefilled first, then admissions while budget and slots last
        room = budget if prefill_first else budget - n_dec * width
        take, done_pre = 0, []
        for item in pre:
            if take >= room:
                break
            t = min(item[1], room - take)
            item[1] -= t
            take += t
            if item[1] == 0:
                done_pre.append(item[0])
        for _ in done_pre:
            pre.popleft()
        while waiting and running < cap and take < room and comp[waiting[0]] > 0:
            r = waiting.popleft()
            running += 1
            t = min(comp[r], room - take)
            take += t
            if t == comp[r]:
                done_pre.append(r)
            else:
                pre.append([r, comp[r] - t])
        if take:  # a step carrying prompt chunks (and, decode first, every running decode)
            decodes = n_dec > 0 and not prefill_first
            dt = ((step_s[n_dec] if decodes else step_s[0]) + take * per_token_s) * mixed_scale
            now += dt
            if decodes:
                dsteps += 1
                emit(now, n_dec, 1, dt)
                last_emit = now
            while heap and heap[0][0] <= dsteps:
                finish(heapq.heappop(heap)[1])
            for r in done_pre:
                first_t[r] = now
                if nsteps[r] == 0:
                    finish(r)
                else:
                    heapq.heappush(heap, (dsteps + nsteps[r], r))
                    if now != last_emit:
                        fresh.append(now)
        elif n_dec:  # decode only: jump to the next finish, or the step after which an arrival can be admitted
            dt = step_s[n_dec]
            k = heap[0][0] - dsteps
            if pending and running < cap:
                k = max(1, min(k, math.ceil((pending[0][0] - now) / dt)))
            t1 = now + dt
            now += k * dt
            dsteps += k
            emit(t1, n_dec, k, dt)
            last_emit = now
            while heap and heap[0][0] <= dsteps:
                finish(heapq.heappop(heap)[1])
        elif pending:  # idle until the next arrival
            now = max(now, pending[0][0])
        else:
            break
    return Trace(
        np.array(arr_t),
        np.array(first_t),
        np.array(fin_t),
        np.array(order, dtype=np.int64),
        np.array(g_end),
        np.array(g_s),
        np.array(g_n, dtype=np.int64),
    )
