"""Fuzzing bad input (issue 13, part 2): property-based tests over every public ``core`` function,
every pydantic model and every parser of user text.

The contract checked everywhere: **any input either gives finite, in-range results or raises
``ValueError`` with a non-empty message** (pydantic's ``ValidationError`` is a ``ValueError``).
``TypeError`` is accepted only when the example passed an argument of the wrong type on purpose
(``WrongType`` below). Anything else is a bug in ``core``: ``ZeroDivisionError``, ``OverflowError``,
``KeyError``, ``IndexError``, ``AttributeError``, ``RecursionError``, ``MemoryError``, a numpy
floating-point warning (turned into ``FloatingPointError`` here), a call that hangs (more than
``HANG_S`` seconds), or a NaN / infinity anywhere in the result (floats, numpy arrays, dataclasses,
pydantic models, dicts, lists, and "nan" / "inf" printed into a string).

Three parts:

1. ``test_public_function``: for each module of ``core`` and each function in its ``__all__``, the
   arguments are drawn from tables of strategies by parameter type (the annotation as ``typing.get_type_hints``
   resolves it: ``BY_TYPE``) and name (``BY_NAME``, ``NUMBERS``) (hostile numbers:
   NaN, +-inf, negative, 0, 1e30, subnormal; hostile ints: 0, negative, 2**63, 10**30; models, GPUs and
   hosts from the real catalog; dtype names from ``core.deployment.specs.DTYPES`` plus garbage; small valid
   ``ParallelLayout`` s). The catalog lookups (``Catalog.model`` ...) and ``Precision.of`` are fuzzed
   too. Expensive simulations get bounded inputs (``OVERRIDES``) and fewer examples (``EXAMPLES``);
   functions that cannot be fuzzed here are in ``SKIP`` with the reason (one: ``store.open_store``).
2. ``test_pydantic_model_construction`` / ``test_input_dataclass_construction``: every pydantic model
   of ``core`` (and every input dataclass with its own validation) built from a valid baseline with
   one to three fields replaced by hostile values: a ``ValidationError`` with a message, or an object
   whose numeric fields (and key derived figures) are finite.
3. Parsers of user text: config.json (``core.hf``), the CSV and Prometheus expert-load
   parsers (``core.balance``), the Prometheus speculative-decoding scrape (``core.speculative.live``), the URL
   config token (``core.hf.decode_config``) and the URL scenario reader (``core.scenario``,
   extending ``test_scenario_url.py`` with non-text values, numeric edge cases and huge values):
   malformed and truncated JSON, 100,000-deep nesting, a 100 MB string, NaN / Infinity / -1 / 1e30 in
   numeric fields, wrong types, unicode garbage and binary bytes must give a ``ValueError`` that says
   what is wrong, quickly, never a crash.

Everything runs derandomized (``derandomize=True``, no example database), so CI sees the same
examples on every run; the whole file takes well under a minute on two cores. While the fuzz runs the
process's address space is capped (``_memory_cap``) so that an input that asks for a giant array
fails with ``MemoryError`` (a bug) instead of taking the machine down.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import importlib
import inspect
import json
import math
import os
import re
import resource
import signal
import time
import types
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from core import balance
from core import hf as hf_config
from core.balance.published import PLACEMENTS, EplbCase, EplbRow, load_eplb_cases
from core.catalog import CATALOG_DIR, Catalog, load_catalog
from core.comms import AllToAllSplit
from core.deployment.bundle import Deployment
from core.deployment.calibration import ServedCalibration
from core.deployment.specs import (
    DraftMethod,
    MemoryAssumptions,
    ParallelLayout,
    Precision,
    Scenario,
    SingleBox,
    SpecDecodeConfig,
    Workload,
)
from core.hardware import ClusterSpec
from core.hardware.collectives import OPS as COLLECTIVE_OPS
from core.hardware.collectives import CollectiveTable
from core.hardware.efficiency import (
    EFFICIENCY_FAMILIES,
    KERNEL_PATHS,
    SERVING_STACKS,
    Efficiency,
    EfficiencyProfile,
    KernelFactors,
    LinkFactors,
    SystemFactors,
)
from core.hardware.gpu import GPUSpec, HostSpec
from core.hardware.offload_efficiency import OffloadEfficiency
from core.hardware.served_step import MODES as SERVED_STEP_MODES
from core.hardware.served_step import ServedStepCost, served_step_cost
from core.hf.fields import Fields
from core.memory import GGUF_BLOCKS
from core.model import ModelSpec
from core.model.dtypes import ACTIVE_CONVENTIONS, DTYPES, GGUF_DTYPES, KV_DTYPES
from core.model.extras import EXTRA_KINDS
from core.model.mixers import MIXER_KINDS
from core.model.mixers.base import Phase
from core.moe import GemmElementBytes
from core.perf import StepConfig
from core.perf.work import Work
from core.scenario import URL_KEYS, layout_from_sizes, scenario_from_params, scenario_to_params
from core.serving import ReplicaCosts, ServingPoint
from core.serving.disagg import Traffic
from core.serving.engine_sim import POLICIES, EngineKnobs, Lengths, SimResult, simulate_closed, simulate_open
from core.serving.frontier import CaseModel, PoolSpec, load_frontier_cases, load_frontier_points, model_case
from core.serving.launch import ENGINES, KV_CACHE_DTYPES, ROLES, SPECULATIVE_METHODS, LaunchSpec
from core.serving.layout import Plan
from core.serving.workload_profiles import load_profiles
from core.single_box import offload
from core.single_box.box import Box
from core.single_box.placement import Placement
from core.speculative import live
from core.speculative.acceptance import CONFIDENCES as ACCEPTANCE_CONFIDENCES
from core.speculative.acceptance import METHODS as ACCEPTANCE_METHODS
from core.speculative.acceptance import AcceptanceCurve, load_curves
from core.validation import CaseResult

CAT = load_catalog()
MODELS = [CAT.models[k] for k in sorted(CAT.models)]
GPUS = [CAT.gpus[k] for k in sorted(CAT.gpus)]
HOSTS = [CAT.hosts[k] for k in sorted(CAT.hosts)]


def _core_modules() -> tuple[str, ...]:
    """Every public module of ``core`` (packages' modules too; not the ``_private`` helpers, which the
    public functions call), as names relative to ``core``: a new module is fuzzed without being listed."""
    import pkgutil

    import core

    names = (info.name.removeprefix("core.") for info in pkgutil.walk_packages(core.__path__, "core."))
    return tuple(sorted(n for n in names if not any(part.startswith("_") for part in n.split("."))))


MODULES = _core_modules()

HANG_S = 10.0  # one call longer than this is a hang (the slowest legitimate call here takes ~1 s)
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=list(HealthCheck),
)

# Functions that cannot be fuzzed here, with the reason. Keep it short.
SKIP = {
    "store.sqlite.open_store": "opens (and may create) a database file or connects to a PostgreSQL URL; covered by "
    "test_store.py / test_store_postgres.py",
    "hf.registry.reader": "a decorator that registers a config reader when a family module is imported; calling it "
    "would add a reader to the live registry (family_of and every reader are fuzzed)",
}

# Documented, deliberate non-finite values (each pinned by an existing test, or documented in the
# function's docstring and read by a page): the function may return exactly this kind of value,
# nothing else non-finite. Changing them would change what pages show; they stay.
SENTINELS = {
    "speculative.closed_form.ceiling": ("+inf", "1 / (1 - alpha) is infinite at alpha = 1 (test_speculative)"),
    "speculative.closed_form.break_even_alpha": ("nan", "gamma = 0 has no break-even: NaN (test_speculative)"),
    "moe.intensity.batch_for_expert_intensity": (
        "+inf",
        "a target beyond the saturation intensity (test_roofline_moe)",
    ),
    "moe.intensity.batch_for_dense_intensity": ("+inf", "a target beyond the saturation intensity"),
    "speculative.live.spec_observation": (
        "nan",
        "SGLang reports no per-token acceptance: NaN (test_live, 4_Speculative)",
    ),
    "roofline.gpu_arrays": ("nan", "NaN peak where the GPU lacks the dtype natively (its docstring; 2_Intensity)"),
    "roofline.attainable_tflops": ("nan", "propagates gpu_arrays' NaN peak (its docstring)"),
    "serving.slo.load_point": (
        "+inf",
        "a rate beyond what the replica serves: every latency infinite, stable False (test_slo)",
    ),
    "serving.slo.rate_sweep": ("+inf", "as load_point, at a rate bisection left at the edge of stability"),
    "serving.slo.goodput": ("+inf", "as load_point: the LoadPoint it reports"),
}


# ------------------------------------------------------------------------------------ the contract


class Hang(AssertionError):
    """A call ran longer than HANG_S."""


@contextmanager
def _deadline(seconds: float):
    def _raise(signum, frame):
        raise Hang(f"call did not finish within {seconds:g} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(autouse=True, scope="module")
def _memory_cap():
    """Cap the address space at what the process uses now + 6 GB while this module runs, so that a
    runaway allocation raises MemoryError (a failed test) instead of exhausting the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    except (OSError, StopIteration):
        yield
        return
    cap = vm + 6 * 2**30
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        _BIG.clear()  # the 100 MB test string


@dataclass(frozen=True)
class WrongType:
    """An argument of the wrong type, on purpose: TypeError is an accepted answer for it."""

    value: Any

    def __repr__(self) -> str:
        return f"WrongType({self.value!r})"


@dataclass(frozen=True)
class Lazy:
    """An argument built at call time (its constructor may itself refuse with ValueError)."""

    build: Callable[[], Any]
    label: str

    def __repr__(self) -> str:
        return self.label


def _resolve(x):
    if isinstance(x, WrongType):
        return x.value
    if isinstance(x, Lazy):
        return x.build()
    return x


_NONFINITE_TEXT = re.compile(r"(?<![\w.])-?(nan|inf)(?![\w])")


def assert_finite(obj, where: str = "result", allow: str | None = None, _depth: int = 0, *, text: bool = True) -> None:
    """Every float in ``obj`` is finite, recursively; ``allow`` ("nan" / "+inf") admits one sentinel.
    With ``text``, strings must not print "nan" / "inf" either (figures formatted for a page)."""
    if _depth > 12 or obj is None or isinstance(obj, (bool, np.bool_, int, np.integer, enum.Enum, range, type)):
        return
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        if math.isfinite(x) or (allow == "nan" and math.isnan(x)) or (allow == "+inf" and x == math.inf):
            return
        raise AssertionError(f"{where} is {x!r}")
    if isinstance(obj, complex):
        raise AssertionError(f"{where} is complex: {obj!r}")
    if isinstance(obj, str):
        if text and not allow:
            assert _NONFINITE_TEXT.search(obj) is None, f"{where} prints a non-finite number: {obj[:200]!r}"
        return
    if isinstance(obj, (bytes, bytearray)):
        return
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fc":
            bad = ~np.isfinite(obj)
            if allow == "nan":
                bad &= ~np.isnan(obj)
            elif allow == "+inf":
                bad &= ~(np.isposinf(obj))
            assert not bad.any(), f"{where} has non-finite entries: {obj[bad][:5]!r}"
        elif obj.dtype.kind == "O":
            for i, v in enumerate(obj.ravel()[:1000]):
                assert_finite(v, f"{where}[{i}]", allow, _depth + 1, text=text)
        return
    if isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            assert_finite(getattr(obj, name), f"{where}.{name}", allow, _depth + 1, text=text)
        return
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            assert_finite(getattr(obj, f.name), f"{where}.{f.name}", allow, _depth + 1, text=text)
        return
    if isinstance(obj, Mapping):
        for k, v in list(obj.items())[:2000]:
            assert_finite(k, f"{where} key", allow, _depth + 1, text=False)  # keys are labels, maybe the caller's
            assert_finite(v, f"{where}[{k!r}]", allow, _depth + 1, text=text)
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(list(obj)[:2000]):
            assert_finite(v, f"{where}[{i}]", allow, _depth + 1, text=text)
        return


# modules whose strings are figures formatted for a page (the others echo user text, e.g. a warning that
# quotes the bad URL value "nan", which is right)
TEXT_CHECKED = (
    "report.",
    "memory.",
    "serving.layout.",
    "single_box.",
    "serving.disagg.",
    "moe.",
    "model.",
)


def call_contract(name: str, fn: Callable, args: list, kwargs: dict, *, allow: str | None = None):
    """Call ``fn``; returns its result (checked finite) or None when it refused with ValueError."""
    wrong = any(isinstance(a, WrongType) for a in [*args, *kwargs.values()])
    # a string the caller passed in may come back quoted (an id, a label, a warning): "nan" there is an echo
    echo = any(_NONFINITE_TEXT.search(x) for x in _strings([*args, *kwargs.values()]))
    try:
        with _deadline(HANG_S), np.errstate(divide="raise", over="raise", invalid="raise"), warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            a = [_resolve(x) for x in args]
            kw = {k: _resolve(v) for k, v in kwargs.items()}
            out = fn(*a, **kw)
    except ValueError as e:
        assert str(e).strip(), f"{name} raised {type(e).__name__} without a message"
        return None
    except TypeError as e:
        if wrong:
            return None
        raise AssertionError(f"{name} raised TypeError for well-typed arguments: {e}") from e
    assert_finite(out, f"{name}(...)", allow, text=name.startswith(TEXT_CHECKED) and not echo)
    return out


def _strings(obj, depth: int = 0):
    """Every string inside the (unresolved) arguments: str, containers, pydantic models."""
    if depth > 5:
        return
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from _strings(k, depth + 1)
            yield from _strings(v, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v, depth + 1)
    elif isinstance(obj, BaseModel):
        for n in type(obj).model_fields:
            yield from _strings(getattr(obj, n), depth + 1)


# ------------------------------------------------------------------------------------- strategies

NAN, INF = float("nan"), float("inf")
HOSTILE_FLOATS = (NAN, INF, -INF, -1.0, 0.0, -0.0, 1e30, -1e30, 1e308, 5e-324, 1e-300)
HOSTILE_INTS = (0, -1, -(2**31), 2**31, 2**63, 10**18, 10**30)
GARBAGE_TEXT = ("", " ", "nan", "inf", "-1", "1e30", "FP8", "fp7", "x" * 300, "\x00", "é\u202e\ud7ff", "😀")


def fl(lo: float, hi: float, *, wrong: bool = True) -> st.SearchStrategy:
    """A float in the sane range [lo, hi] (half the time), or a hostile one; rarely a wrong type."""
    sane = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    parts = [sane, sane, sane, st.sampled_from(HOSTILE_FLOATS), st.floats()]
    if wrong:
        parts.append(st.sampled_from([None, "1", b"1"]).map(WrongType))
    return st.one_of(parts)


def it(lo: int, hi: int, *, wrong: bool = True) -> st.SearchStrategy:
    """An int in the sane range [lo, hi] (half the time), or a hostile one; rarely a wrong type."""
    sane = st.integers(lo, hi)
    parts = [sane, sane, sane, st.sampled_from(HOSTILE_INTS), st.integers()]
    if wrong:
        parts.append(st.sampled_from([None, "8", 2.5]).map(WrongType))
    return st.one_of(parts)


def arr(elem: st.SearchStrategy, *, max_len: int = 6, two_d: bool = True) -> st.SearchStrategy:
    """1-D / 2-D numpy arrays and plain lists of ``elem`` (empty included)."""
    one = st.lists(elem, min_size=0, max_size=max_len)
    parts = [one, one.map(lambda xs: np.asarray(xs, dtype=np.float64))]
    if two_d:
        parts.append(
            st.integers(1, 3)
            .flatmap(lambda r: st.lists(st.lists(elem, min_size=4, max_size=4), min_size=r, max_size=r))
            .map(lambda xs: np.asarray(xs, dtype=np.float64))
        )
    return st.one_of(parts)


def num_or_arr(elem: st.SearchStrategy) -> st.SearchStrategy:
    """A scalar (most of the time) or a small array of them: the vectorised formulas take both."""
    plain = elem.filter(lambda x: not isinstance(x, WrongType))
    return st.one_of(elem, elem, arr(plain, two_d=False))


def text(max_size: int = 40) -> st.SearchStrategy:
    return st.one_of(st.text(max_size=max_size), st.sampled_from(GARBAGE_TEXT))


def choice(valid, garbage=GARBAGE_TEXT) -> st.SearchStrategy:
    return st.one_of(st.sampled_from(list(valid)), st.sampled_from(list(valid)), st.sampled_from(list(garbage)))


def _catalog_entry(table: str, key: str) -> Lazy:
    return Lazy(lambda: getattr(CAT, table)[key], f"{table}:{key}")


# top-level arguments print as "models:deepseek-v3" in a failing example, not as the whole spec
models = st.sampled_from(sorted(CAT.models)).map(lambda k: _catalog_entry("models", k))
gpus = st.sampled_from(sorted(CAT.gpus)).map(lambda k: _catalog_entry("gpus", k))
hosts = st.sampled_from(sorted(CAT.hosts)).map(lambda k: _catalog_entry("hosts", k))
gpu_objs = st.sampled_from(GPUS)  # inside lists and dicts
host_objs = st.sampled_from(HOSTS)
dtypes = choice([*DTYPES, "fp4"])
kv_dtypes = choice(KV_DTYPES)


@st.composite
def layouts(draw) -> ParallelLayout:
    """A valid layout with small sizes (1-8 GPUs per stage, 1-4 stages, 1-4 replicas)."""
    tp, adp = draw(st.sampled_from([1, 2, 4, 8])), draw(st.sampled_from([1, 2, 4, 8]))
    stage = tp * adp
    etp = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16, 32, 64) if stage % d == 0]))
    return ParallelLayout(
        attention_tp=tp,
        attention_dp=adp,
        ep=stage // etp,
        expert_tp=etp,
        pp=draw(st.integers(1, 4)),
        dp=draw(st.integers(1, 4)),
    )


@st.composite
def precision_objs(draw) -> Precision:
    ex = draw(st.one_of(st.none(), st.sampled_from(DTYPES)))
    return Precision(
        weights=draw(st.sampled_from(DTYPES)),
        routed_experts=ex,
        kv_cache=draw(st.sampled_from(KV_DTYPES)),
        dispatch=draw(st.sampled_from(["bf16", "fp8", "nvfp4"])),
    )


precisions = st.one_of(dtypes, precision_objs())
workloads = st.builds(
    Workload,
    batch=st.one_of(st.integers(1, 256), st.sampled_from([1, 1_000_000])),
    input_len=st.one_of(st.integers(1, 32_768), st.sampled_from([1, 10_000_000])),
    output_len=st.one_of(st.integers(1, 4096), st.sampled_from([1, 10_000_000])),
)
assumptions = st.one_of(
    st.none(),
    st.builds(
        MemoryAssumptions,
        gpu_memory_utilization=st.one_of(st.floats(0.05, 1.0), st.sampled_from([1e-9, 1.0])),
        runtime_reserve_gb=st.one_of(st.floats(0, 10), st.sampled_from([0.0, 1000.0])),
        max_num_batched_tokens=st.one_of(st.integers(1, 65_536), st.sampled_from([1, 10_000_000])),
        activation_factor=st.one_of(st.floats(0, 64), st.sampled_from([0.0, 1000.0])),
        redundant_experts=st.one_of(st.integers(0, 64), st.sampled_from([0, 100_000])),
    ),
)


@st.composite
def specs(draw) -> SpecDecodeConfig:
    method = draw(
        st.sampled_from(
            ["none", "draft_model", "medusa", "eagle", "eagle3", "p_eagle", "mtp", "ngram", "lookahead", "suffix"]
        )
    )
    return SpecDecodeConfig(
        method=method,
        draft_model_id=draw(st.sampled_from([*sorted(CAT.models), "no-such-model"]))
        if method == "draft_model"
        else None,
        draft_weights=draw(st.one_of(st.none(), st.sampled_from(DTYPES))),
        num_speculative_tokens=draw(st.one_of(st.integers(1, 8), st.just(64))),
        acceptance_rate=draw(st.one_of(st.none(), st.floats(0, 1))),
        draft_cost=draw(st.one_of(st.none(), st.floats(0, 10))),
    )


clusters = st.builds(
    ClusterSpec, gpu=gpu_objs, num_nodes=st.integers(1, 2), gpus_per_node=st.sampled_from([1, 2, 4, 8])
)


@st.composite
def scenarios(draw) -> Scenario:
    nodes, gpn = draw(st.integers(1, 2)), draw(st.sampled_from([1, 2, 4, 8]))
    layout = None
    if draw(st.booleans()):
        tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if gpn % t == 0]))
        layout = layout_from_sizes(nodes * gpn, tp, 1, 1, nodes)
    return Scenario(
        model_id=draw(st.one_of(st.sampled_from(sorted(CAT.models)), st.just("no-such-model"))),
        gpu_id=draw(st.one_of(st.sampled_from(sorted(CAT.gpus)), st.just("no-such-gpu"))),
        num_nodes=nodes,
        gpus_per_node=gpn,
        precision=draw(precision_objs()),
        workload=draw(workloads),
        layout=layout,
        spec=draw(specs()),
        memory=draw(assumptions) or MemoryAssumptions(),
        box=draw(
            st.one_of(
                st.none(),
                st.builds(
                    SingleBox,
                    host_id=st.sampled_from(sorted(CAT.hosts)),
                    gpu_id=st.sampled_from([None, "rtx-4090", "rtx-5090"]),
                    n_gpus=st.integers(1, 4),
                    quant=st.sampled_from(DTYPES),
                ),
            )
        ),
    )


replica_costs = st.sampled_from(
    [
        ReplicaCosts((1.0,), (0.01,), 1e-6, 8192, 1, 1),
        ReplicaCosts((1.0, 64.0), (0.01, 0.03), 2e-5, 2048, 64, 8),
        ReplicaCosts((1.0, 2.0, 4096.0), (0.01, 0.011, 0.9), 1e-9, 10**6, 4096, 72),
        ReplicaCosts((1.0, 64.0), (0.01, 0.03), 2e-5, 2048, 64, 8, mixed_step_scale=1.54),  # attention-DP pacing
    ]
)
serving_points = st.builds(
    ServingPoint,
    it(1, 10**4),
    *(st.floats(0, 1e4) for _ in range(4)),
    st.floats(1e-4, 10),
    st.floats(0, 1e5),
    st.floats(0, 1e6),
    st.floats(0, 1),
    st.just("latency-bound"),
)
traffics = st.builds(
    lambda r, i, o, t1, t2: Lazy(lambda: Traffic(r, i, o, t1, t2), f"Traffic({r!r}, {i!r}, {o!r}, {t1!r}, {t2!r})"),
    fl(1, 1e4, wrong=False),
    it(1, 32_768, wrong=False),
    it(1, 4096, wrong=False),
    fl(0.1, 10, wrong=False),
    fl(0.01, 1, wrong=False),
)
step_configs = st.builds(
    lambda ph, t, c, ov, ck, r, im: Lazy(
        lambda: StepConfig(ph, t, c, ov, ck, r, im), f"StepConfig({ph!r}, {t!r}, {c!r}, {ov!r}, {ck!r}, {r!r}, {im!r})"
    ),
    choice(["decode", "prefill"]),
    fl(1, 4096, wrong=False),
    it(1, 65_536, wrong=False),
    st.sampled_from(["none", "two_batch"]),
    st.sampled_from([None, "low_latency", "normal"]),
    it(0, 64, wrong=False),
    fl(1, 4, wrong=False),
)
kernel_factors = st.builds(
    lambda a, b, c: Lazy(
        lambda: KernelFactors(compute_eff=a, mem_eff=b, floor_us=c), f"KernelFactors({a!r}, {b!r}, {c!r})"
    ),
    fl(0.05, 1.2, wrong=False),
    fl(0.05, 1.2, wrong=False),
    fl(0, 100, wrong=False),
)
link_factors = st.builds(
    lambda a, b, c: Lazy(
        lambda: LinkFactors(scale_up_eff=a, scale_out_eff=b, latency_us=c), f"LinkFactors({a!r}, {b!r}, {c!r})"
    ),
    fl(0.05, 1.5, wrong=False),
    fl(0.05, 1.5, wrong=False),
    fl(0, 100, wrong=False),
)
offload_effs = st.one_of(
    st.none(),
    st.builds(
        lambda vals: Lazy(lambda: OffloadEfficiency(*vals), f"OffloadEfficiency{tuple(vals)!r}"),
        st.tuples(
            *[fl(0.05, 1, wrong=False)] * 6, fl(0, 4, wrong=False), fl(0, 16, wrong=False), it(1, 4096, wrong=False)
        ),
    ),
)
efficiencies = st.tuples(st.sampled_from(sorted(CAT.gpus)), st.sampled_from(sorted(SERVING_STACKS))).map(
    lambda gs: Lazy(lambda: CAT.efficiency_for(*gs), f"CAT.efficiency_for{gs!r}")
)


def _deployment(model_id: str, gpu_id: str, layout, prec, stack: str, domain):
    """A deployment of the drawn parts; where the layout does not suit the model, the same on one GPU (every
    model runs there)."""
    m, g, eff = CAT.models[model_id], CAT.gpus[gpu_id], CAT.efficiency_for(gpu_id, stack)
    try:
        return Deployment(m, g, layout, prec, eff, domain_gpus=domain)
    except ValueError:
        return Deployment(m, g, ParallelLayout(), prec, eff, domain_gpus=domain)


deployments = st.builds(
    lambda *a: Lazy(lambda: _deployment(*a), f"Deployment{a!r}"),
    st.sampled_from(sorted(CAT.models)),
    st.sampled_from(sorted(CAT.gpus)),
    layouts(),
    precision_objs(),
    st.sampled_from(sorted(SERVING_STACKS)),
    st.one_of(st.none(), st.sampled_from([1, 8, 72])),
)


def _search_deployment(model_id: str, cluster: ClusterSpec, prec, wl, a, stack: str):
    """What the layout search starts from: a model on a small cluster, its layout left to the search."""
    eff = CAT.efficiency_for(cluster.gpu.id, stack)
    a = a or MemoryAssumptions()
    return Deployment(
        CAT.models[model_id], cluster.gpu, ParallelLayout(), prec, eff, cluster=cluster, workload=wl, assumptions=a
    )


# the layout search's deployments (core.serving.layout, disagg): with a cluster of 1-16 GPUs
search_deployments = st.builds(
    lambda *a: Lazy(lambda: _search_deployment(*a), f"search{a!r}"),
    st.sampled_from(sorted(CAT.models)),
    clusters,
    precision_objs(),
    workloads,
    assumptions,
    st.sampled_from(sorted(SERVING_STACKS)),
)
collective_tables = st.one_of(
    st.none(), st.sampled_from(sorted(CAT.collectives)).map(lambda g: _catalog_entry("collectives", g))
)


@st.composite
def boxes(draw):
    """A single box of catalog parts (a dense model or a context out of range refuse when it is built)."""
    m, h = draw(st.sampled_from(MODELS)), draw(host_objs)
    p = draw(st.sampled_from(["q4_k_m", "q8_0", "bf16", "fp8", "iq1_s"]))
    g = None if h.kind == "unified" else draw(st.sampled_from([CAT.gpus["rtx-4090"], CAT.gpus["rtx-5090"]]))
    n, ctx, eff = draw(st.integers(1, 2)), draw(st.sampled_from([1, 8192, 131_072, 10**8])), draw(offload_effs)
    return Lazy(
        lambda: Box(m, h, g, n, p, ctx, _resolve(eff)), f"Box({m.id}, {h.id}, {g and g.id}, {n}, {p}, {ctx}, {eff})"
    )


@st.composite
def placements(draw):
    box = draw(boxes())
    return Lazy(lambda: offload.placement(_resolve(box)), f"placement({box!r})")


@st.composite
def plan_lists(draw):
    out = []
    for _ in range(draw(st.integers(0, 3))):
        out.append(
            Plan(
                layout=draw(layouts()),
                phase=draw(st.sampled_from(["decode", "prefill"])),
                redundant_experts=0,
                tokens_per_gpu=draw(st.floats(1, 1e4)),
                step_s=draw(st.floats(1e-4, 1)),
                tokens_per_s_per_gpu=draw(st.floats(1, 1e5)),
                headroom_gb=draw(st.floats(-10, 100)),
            )
        )
    return out


# launch commands: hub ids, and ids that must never reach a shell ("-rf", quotes, ";", "$(...)", newlines)
LAUNCH_MODEL_IDS = ("deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-235B-A22B", "openai/gpt-oss-120b", "./local/model-1.5")
BAD_MODEL_IDS = ("a b", "x;rm -rf ~", "it's", '"q"', "$(id)", "a`b`", "a\nb", "-rf", "--help", "/" * 201)


@st.composite
def launch_specs(draw):
    """A LaunchSpec from a small valid layout with drawn limits (a few hostile), built at call time; rarely not
    a spec at all."""
    if draw(st.integers(0, 19)) == 0:
        return WrongType(draw(st.sampled_from([None, "vllm", {"model_id": "x"}])))
    lay = draw(layouts())
    method = draw(st.sampled_from([None, *SPECULATIVE_METHODS]))
    kw = dict(
        model_id=draw(choice(LAUNCH_MODEL_IDS, BAD_MODEL_IDS)),
        **{f: getattr(lay, f) for f in ("attention_tp", "attention_dp", "ep", "expert_tp", "pp", "dp")},
        gpus_per_node=draw(st.sampled_from([1, 2, 4, 8, 16, 0, -8])),
        redundant_experts=draw(st.sampled_from([0, 8, 32, -1])),
        max_batched_tokens=draw(st.sampled_from([1, 256, 8192, 10**7, 0, 2**63])),
        max_num_seqs=draw(st.sampled_from([1, 64, 256, 0])),
        kv_cache_dtype=draw(choice(KV_CACHE_DTYPES)),
        speculative=method,
        num_speculative_tokens=draw(st.sampled_from([1, 3, 32] if method else [0, 0, 2])),
        two_batch_overlap=draw(st.booleans()),
        role=draw(choice(ROLES)),
        is_moe=draw(st.booleans()),
    )
    return Lazy(lambda: LaunchSpec(**kw), f"LaunchSpec(**{kw!r})")


def _leaves(obj, path=()):
    """Paths to every leaf of a JSON-like object (dict keys / list indexes)."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list) and obj:
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    yield path


HOSTILE_JSON = (
    NAN,
    INF,
    -INF,
    -1,
    0,
    1e30,
    -1e30,
    10**13,
    10**30,
    2**63,
    0.5,
    1.5,
    True,
    None,
    "",
    "7",
    [],
    {},
    [1, 2],
    {"a": 1},
    "x" * 1000,
    -0.0,
    3,
)


# hostile replacements of the same kind as the value they replace (the most likely to pass a type check
# and reach the arithmetic); any HOSTILE_JSON value (wrong types included) a quarter of the time
LIKE_INT = (0, -1, -(2**31), 1, 2, 3, 7, 10**6, 10**9, 10**12, 10**12 + 1, 10**30, 2**63, 1.5, 1e30, NAN, INF)
LIKE_FLOAT = (0.0, -0.0, -1.0, 5e-324, 1e-300, 1e30, 1e308, NAN, INF, -INF, 10**30)
LIKE_STR = ("", " ", "nan", "inf", "-1", "1e30", "x" * 10_000, "é\u202e\x00😀", "none", "null")
LIKE_BOOL = (None, 0, 1, "true", "false", 2)
LIKE_SEQ = ((), (-1,), (10**6,), (0, -5, 3), tuple(range(200)), (-(10**12),) * 4, (NAN,), ("a",), ((1,),))


@st.composite
def hostile_like(draw, original, anything=None):
    """A hostile value of ``original``'s kind, or (a quarter of the time) anything from ``anything``."""
    anything = anything or HOSTILE_JSON
    if draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(anything))
    if isinstance(original, bool):
        return draw(st.sampled_from(LIKE_BOOL))
    if isinstance(original, int):
        return draw(st.sampled_from(LIKE_INT))
    if isinstance(original, float):
        return draw(st.sampled_from(LIKE_FLOAT))
    if isinstance(original, str):
        return draw(st.sampled_from(LIKE_STR))
    if isinstance(original, (tuple, list)):
        seq = draw(st.sampled_from(LIKE_SEQ))
        return list(seq) if isinstance(original, list) else seq
    return draw(st.sampled_from(anything))


@st.composite
def mutated(draw, base, n_max: int = 2, anything=None):
    """A deep copy of the JSON-like ``base`` with one to ``n_max`` leaves replaced or deleted."""
    obj = copy.deepcopy(base)
    paths = [p for p in _leaves(obj) if p]
    for _ in range(draw(st.integers(1, n_max))):
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = obj
        try:
            for k in path[:-1]:
                parent = parent[k]
            if draw(st.integers(0, 7)) == 0 and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = draw(hostile_like(parent[path[-1]], anything))
        except (KeyError, IndexError, TypeError):
            pass
    return obj


def _config(model_id):
    return json.loads((CATALOG_DIR / "models" / model_id / "config.json").read_text())


CONFIGS = {m: _config(m) for m in sorted(CAT.models)}
VISION = [c.get("vision_config") for c in CONFIGS.values() if isinstance(c.get("vision_config"), dict)]
QUANT = [c["quantization_config"] for c in CONFIGS.values() if isinstance(c.get("quantization_config"), dict)]
VALIDATION_CASES = [dict(c) for c in CAT.validation_cases]
OFFLOAD_CASES = [dict(c) for c in CAT.offload_cases]

configs = st.sampled_from(sorted(CONFIGS)).flatmap(lambda k: st.one_of(st.just(CONFIGS[k]), mutated(CONFIGS[k])))
vision_configs = st.sampled_from(VISION).flatmap(lambda v: st.one_of(st.just(v), mutated(v)))
quant_configs = st.sampled_from(QUANT).flatmap(
    lambda v: st.one_of(st.just(v), mutated(v), st.just({"quantization": v}))
)
cases = st.sampled_from(VALIDATION_CASES).flatmap(lambda c: st.one_of(st.just(c), mutated(c)))
offload_cases = st.sampled_from(OFFLOAD_CASES).flatmap(lambda c: st.one_of(st.just(c), mutated(c)))
case_results = st.lists(
    st.tuples(
        st.text(max_size=5),
        st.sampled_from(["dispatch_latency_us", "x"]),
        st.sampled_from(["system", "alltoall_normal"]),
        st.sampled_from(["h200", "x"]),
        fl(1, 1e4, wrong=False),
        fl(1, 1e4, wrong=False),
        st.one_of(st.none(), fl(1, 1e4, wrong=False)),
    ),
    max_size=4,
).map(lambda rows: Lazy(lambda: [CaseResult(*r) for r in rows], f"[CaseResult(*r) for r in {rows!r}]"))


def _a_validation_error():
    try:
        Workload(batch=0)
    except ValidationError as e:
        return e


url_values = st.one_of(
    text(300),
    st.lists(text(20), max_size=3),
    st.none(),
    st.integers(),
    st.floats(),
    st.binary(max_size=20),
    st.sampled_from(
        [
            "nan",
            "inf",
            "-inf",
            "1e400",
            "-0",
            "0x10",
            "1_000",
            " 8 ",
            "８",
            "٣",
            "9" * 5000,
            "1e-400",
            "2.5",
            "+8",
            "00008",
            "8.0",
        ]
    ),
)
url_params = st.dictionaries(st.sampled_from([*URL_KEYS, "junk"]), url_values, max_size=12)


@st.composite
def eplb_outputs(draw):
    """phy2log / logcnt from a real EPLB run, or hostile integer arrays."""
    if draw(st.booleans()):
        w = np.asarray(draw(st.lists(st.lists(st.floats(0, 100), min_size=8, max_size=8), min_size=1, max_size=2)))
        phy2log, _, logcnt = balance.rebalance_experts(w, 8, 1, 1, draw(st.sampled_from([1, 2, 4, 8])))
        return phy2log, logcnt
    ints = st.lists(st.one_of(st.integers(-3, 10), st.sampled_from([2**40, -(2**40)])), min_size=0, max_size=8)
    return np.asarray(draw(ints), dtype=np.int64), np.asarray(draw(ints), dtype=np.int64)


# ------------------------------------------------------------------ the strategy of a parameter

NO_HINT = inspect.Parameter.empty  # an unannotated parameter
_NONE = type(None)


def _optional(hint) -> bool:
    """The annotation allows None (``X | None``)."""
    return _NONE in typing.get_args(hint)


def _parts(hint) -> set:
    """The annotation and the types it is built from (``int | None`` -> {int | None, int, None})."""
    return {hint, *typing.get_args(hint)}


def _first(hint):
    """A union's first member (``int | float`` -> int); any other annotation itself."""
    args = typing.get_args(hint)
    return args[0] if args and isinstance(hint, types.UnionType) else hint


_EFF_PROFILES = st.sampled_from([Lazy(lambda: CAT.efficiency, "CAT.efficiency"), {}])
_RANGES = st.builds(range, st.integers(-5, 100), st.integers(-5, 200))
_CAT = st.just(Lazy(lambda: CAT, "CAT"))

# Strategies by parameter type (as typing.get_type_hints resolves the annotation): the catalog's objects, the
# scenario's parts, the step model's inputs.
BY_TYPE: dict[Any, st.SearchStrategy] = {
    Deployment: deployments,
    dict[str, ModelSpec]: st.just(Lazy(lambda: CAT.models, "CAT.models")),
    ModelSpec: models,
    ModelSpec | None: st.one_of(st.none(), models),
    Mapping[str, ModelSpec] | None: st.one_of(st.none(), models),
    GPUSpec: gpus,
    GPUSpec | None: st.one_of(st.none(), gpus),
    GPUSpec | str: st.one_of(gpus, choice(sorted(CAT.gpus))),
    list[GPUSpec]: st.lists(gpu_objs, max_size=3),
    dict[str, GPUSpec]: st.one_of(
        st.just(Lazy(lambda: CAT.gpus, "CAT.gpus")),
        st.lists(gpu_objs, max_size=3).map(lambda gs: {g.id: g for g in gs}),
    ),
    HostSpec: hosts,
    list[HostSpec]: st.lists(host_objs, max_size=3),
    dict[str, HostSpec]: st.just(Lazy(lambda: CAT.hosts, "CAT.hosts")),
    ParallelLayout: layouts(),
    Precision: precision_objs(),
    Precision | str: precisions,
    Precision | str | None: precisions,
    dict[str, Precision | str]: st.dictionaries(text(8), precisions, max_size=3),
    Workload: workloads,
    Workload | None: st.one_of(st.none(), workloads),
    MemoryAssumptions: assumptions,
    MemoryAssumptions | None: assumptions,
    Mapping[str, DraftMethod]: st.sampled_from([Lazy(lambda: CAT.draft_methods, "CAT.draft_methods"), {}]),
    SpecDecodeConfig: specs(),
    SpecDecodeConfig | None: st.one_of(st.none(), specs()),
    ClusterSpec: clusters,
    Scenario: scenarios(),
    Catalog: _CAT,
    Catalog | None: st.one_of(st.none(), _CAT),
    Traffic: traffics,
    StepConfig: step_configs,
    Efficiency: efficiencies,
    Efficiency | None: st.one_of(st.none(), efficiencies),
    KernelFactors: kernel_factors,
    KernelFactors | None: st.one_of(st.none(), kernel_factors),
    Efficiency | KernelFactors: st.one_of(efficiencies, kernel_factors),
    CollectiveTable: collective_tables,
    CollectiveTable | None: collective_tables,
    OffloadEfficiency: offload_effs,
    OffloadEfficiency | None: offload_effs,
    LinkFactors: link_factors,
    GemmElementBytes | None: st.one_of(
        st.none(),
        st.builds(
            GemmElementBytes,
            fl(0.5, 4, wrong=False),
            fl(0.5, 4, wrong=False),
            fl(0.5, 4, wrong=False),
            choice(["bf16", "fp8", "fp4", "int8"]),
        ),
    ),
    AllToAllSplit: st.builds(AllToAllSplit, fl(0, 1e9, wrong=False), fl(0, 1e9, wrong=False), fl(0, 1e9, wrong=False)),
    Placement: placements(),
    Box: boxes(),
    list[Plan]: plan_lists(),
    Plan: plan_lists().filter(bool).map(lambda ps: ps[0]) | st.just(WrongType("not a plan")),
    ReplicaCosts: replica_costs,
    list[ServingPoint]: st.lists(serving_points, max_size=5),
    list[CaseResult]: case_results,
    Mapping[str, EfficiencyProfile]: _EFF_PROFILES,
    Mapping[str, EfficiencyProfile] | None: st.one_of(st.none(), _EFF_PROFILES),
    Phase: choice(["decode", "prefill"]),
    range: _RANGES,
    range | None: st.one_of(st.none(), _RANGES),
    Work: st.builds(
        Work,
        fl(0, 1e15, wrong=False),
        fl(0, 1e12, wrong=False),
        fl(0, 1e12, wrong=False),
        fl(1e9, 1e16, wrong=False),
        choice(["dense_gemm", "attention_decode", "grouped_gemm_prefill"]),
    ),
    # frontier_gaps: the two quick cases modelled, or nothing (modelled when first drawn)
    Sequence[CaseModel]: st.deferred(
        lambda: st.lists(
            st.sampled_from([model_case(c, CAT) for c in ("qwen3.5-397b-b200", "kimi-k2.6-b200-agentic-dcp")]),
            max_size=2,
        )
    ),
    # a family reader fed every catalog config, mutated: the right family or not
    Fields: configs.map(lambda c: Fields(c, c.get("model_type") if isinstance(c.get("model_type"), str) else "fuzz")),
}

# Where a type says too little (a str, a mapping, no annotation), the parameter's name: value a strategy, or
# (qualname, hint) -> strategy where it depends on the function or the annotation.
BY_NAME: dict[str, st.SearchStrategy | Callable[[str, Any], st.SearchStrategy]] = {
    "precision": precisions,
    "assumptions": assumptions,
    "stack": choice(sorted(SERVING_STACKS)),
    "op": choice(COLLECTIVE_OPS),
    "concurrencies": st.lists(it(1, 10**5), max_size=6).map(tuple),
    "profiles": lambda q, h: st.one_of(st.none(), _EFF_PROFILES) if h is NO_HINT or _optional(h) else _EFF_PROFILES,
    "overrides": st.one_of(
        st.none(),
        st.fixed_dictionaries({"allreduce": link_factors}),
        st.fixed_dictionaries({"dense_gemm": kernel_factors}),
    ),
    "phase": choice(["decode", "prefill"]),
    "routing_groups": st.one_of(st.none(), st.tuples(it(1, 16), it(1, 16))),
    "dtype": dtypes,
    "weight_dtype": dtypes,
    "kv_dtype": kv_dtypes,
    "block_type": choice([*GGUF_DTYPES, *GGUF_BLOCKS]),
    "convention": st.one_of(st.none(), choice(ACTIVE_CONVENTIONS)),
    "gpu_id": choice(sorted(CAT.gpus)),
    "model_id": choice(["imported-x", "custom-0123456789"]),
    "family": choice(EFFICIENCY_FAMILIES),
    "kind": choice(["low_latency", "normal"]),
    "kernel": choice(["low_latency", "normal"]),
    "metric": st.one_of(st.none(), text(20)),
    "text": st.one_of(text(200), st.binary(max_size=50).map(WrongType)),
    "token": st.one_of(text(200), st.binary(max_size=50).map(WrongType)),
    "name": st.one_of(st.none(), text(200), st.sampled_from([1, b"x", ["a"]]).map(WrongType)),
    "err": st.sampled_from([ValueError("bad value"), _a_validation_error()]),
    "config": configs,
    "cfg": configs,
    "vc": vision_configs,
    "quant_config": quant_configs,
    "meta": st.one_of(st.none(), st.just({}), st.just({"config_source": "fuzz"})),
    "case": cases,
    "cases": lambda q, h: st.lists(
        offload_cases if q.startswith(("offload.", "offload_cases.")) else cases, max_size=3
    ),
    "params": url_params,
    "extra_model_ids": st.lists(text(20), max_size=3).map(tuple),
    "most": st.integers(0, 50),  # url_keys.key_warnings: how many keys a warning names
    "progress": st.none(),
    # validated.validate_entries: a catalog file's list, valid or junk
    "entries": st.lists(st.one_of(st.dictionaries(text(8), text(8), max_size=3), text(8), it(0, 5)), max_size=4),
    # load_catalog: the real catalog, missing / unreadable / not-a-directory paths
    "path": st.sampled_from([None, str(CATALOG_DIR), "/nonexistent/catalog", __file__, "x" * 5000, "bad\x00name"]),
}
BY_NAME["points_path"] = BY_NAME["path"]

# an unannotated parameter with one of these names takes the catalog object it names
BY_NAME_UNANNOTATED: dict[str, st.SearchStrategy] = {
    "model": models,
    "draft_model": st.one_of(st.none(), models),
    "gpu": gpus,
    "layout": layouts(),
}

# the plain types, after the names (a str named dtype is a dtype)
BY_PLAIN_TYPE: dict[Any, st.SearchStrategy] = {
    bool: st.booleans(),
    str: text(),
    str | None: st.one_of(st.none(), text()),
}

# the names a core module imports only for type checking, so that typing.get_type_hints resolves them
_HINT_NAMES = {
    t.__name__: t
    for t in (
        ModelSpec,
        Catalog,
        CollectiveTable,
        OffloadEfficiency,
        SpecDecodeConfig,
        CaseResult,
        Deployment,
        DraftMethod,
    )
} | {"Mapping": Mapping}


@functools.cache
def _hints(fn: Callable) -> dict[str, Any]:
    return typing.get_type_hints(fn, localns=_HINT_NAMES)


def param_strategy(qualname: str, p: inspect.Parameter, fn_params: Mapping[str, inspect.Parameter]):
    """The strategy for one parameter: a per-function override, else by its type (``BY_TYPE``), its name
    (``BY_NAME``), a plain type (``BY_PLAIN_TYPE``), a number by name (``NUMBERS``); a ``KeyError`` if none."""
    name = p.name
    over = OVERRIDES.get(f"{qualname}.{name}")
    if over is not None:
        return over
    try:
        hint = _hints(FUNCTIONS[qualname]).get(name, NO_HINT)
    except NameError as e:
        raise KeyError(f"cannot resolve {qualname}'s annotations ({e}); add the type to _HINT_NAMES") from e
    if hint in BY_TYPE:
        return BY_TYPE[hint]
    if typing.get_origin(hint) is type:  # a pydantic model class (validated.bounds): the scenario's, or garbage
        return st.sampled_from([Workload, ClusterSpec, MemoryAssumptions, Scenario, int])
    if hint is NO_HINT and name in BY_NAME_UNANNOTATED:
        return BY_NAME_UNANNOTATED[name]
    if name in BY_NAME:
        by_name = BY_NAME[name]
        return by_name if isinstance(by_name, st.SearchStrategy) else by_name(qualname, hint)
    if hint in BY_PLAIN_TYPE:
        return BY_PLAIN_TYPE[hint]
    if name in NUMBERS:
        return NUMBERS[name](hint)
    shown = "?" if hint is NO_HINT else (hint.__name__ if isinstance(hint, type) else hint)
    raise KeyError(f"no strategy for {qualname}({name}: {shown}); add one to the table")


def _f(lo, hi):
    """Float parameter (vectorised when it has no annotation)."""
    return lambda hint: fl(lo, hi) if hint in (float, float | None) or int in _parts(hint) else num_or_arr(fl(lo, hi))


def _i(lo, hi):
    """Int parameter (an int or None where the annotation allows it)."""
    return lambda hint: (
        st.one_of(st.none(), it(lo, hi))
        if _optional(hint)
        else (it(lo, hi) if _first(hint) is int else num_or_arr(it(lo, hi)))
    )


def _a(lo, hi, two_d=True):
    """Array parameter: loads, fractions, distributions."""
    return lambda ann: st.one_of(
        arr(st.one_of(st.floats(lo, hi), st.sampled_from(HOSTILE_FLOATS)), two_d=two_d),
        arr(st.floats(lo, hi), two_d=two_d),
    )


NUMBERS: dict[str, Callable[[Any], st.SearchStrategy]] = {
    # floats (sane range)
    **{
        k: _f(0.5, 4)
        for k in ("act_bytes", "weight_bytes", "out_bytes", "dispatch_bytes", "combine_bytes", "bytes_per_elem")
    },
    **{k: _f(0, 1) for k in ("alpha", "alpha_greedy", "hot_share", "interference", "drop_per_unit")},
    **{k: _f(1, 1e4) for k in ("bw_gbps", "link_gbps", "scale_up_gbps", "scale_out_gbps", "rates")},
    **{
        k: _f(0, 1e12)
        for k in (
            "bytes_moved",
            "nbytes",
            "bytes_per_gpu",
            "bytes_per_s",
            "flops",
            "assignments_per_gpu",
            "total_assignments",
        )
    },
    **{k: _f(0.1, 1.5) for k in ("efficiency", "scale_up_eff", "scale_out_eff")},
    **{k: _f(0.5, 5) for k in ("speedup", "step_speedup", "decode_speedup")},
    "c": _f(0, 2),
    "draft_cost": _f(0, 2),
    "capacity_factor": _f(0.5, 4),
    "capacity_factors": _f(0.5, 4),
    "concentration": _f(1e-3, 1e3),
    "d_alpha": _f(1e-4, 0.1),
    "imbalance_ratio": _f(1, 10),
    "intensity": _f(0, 1e4),
    "target_intensity": _f(0, 1e4),
    "latency_s": _f(0, 1e-3),
    "price_per_gpu_hour": _f(0, 10),
    "setup_steps": _f(0, 10),
    "skew": _f(0, 3),
    "temperature": _f(0, 2),
    "tokens_per_gpu": _f(1, 1e4),
    "step_compute_s": _f(0, 10),
    "replayed": _f(0, 1),
    "t_attn": _f(0, 1e4),
    "rate": _f(0, 1e3),
    "quantile": _f(0, 1),
    "ttft_s": _f(0, 100),
    "ttft_target_s": _f(0, 100),
    "tpot_target_s": _f(0, 1),
    "points": _i(1, 50),
    "lone_s": _f(0, 100),
    "capacity_per_s": _f(0, 1e3),
    "rate_per_s": _f(0, 1e3),
    "accepted_length": _f(1, 3),
    "draft_tokens": _i(0, 4),
    "kv_budget_bytes_per_gpu": _f(0, 1e12),
    "host_gb_per_node": _f(0, 1e5),
    "store_gb_per_gpu": _f(0, 1e6),
    "attention_tp": _i(0, 16),
    "tokens_per_s": _f(1, 1e6),
    "tokens_per_expert": _f(0, 1e4),
    "tokens_per_sequence": _f(1, 16),
    "imbalance": _f(1, 10),
    "bw_bytes": _f(1e9, 1e13),
    "tol": _f(1e-12, 1e-3),
    "update_speed": _f(1e-4, 0.1),
    "hbm_tbps": _f(0.1, 10),
    "peak_tflops": _f(1, 1e4),
    "target_s": lambda ann: st.one_of(st.none(), fl(1e-3, 10)),
    "tokens": _f(1, 1e5),
    "sequences": _f(1, 1e3),
    "running": _f(0, 1e4),  # serve_saturated: sequences in decode (below 1 refused)
    "s": lambda ann: fl(0, 3),
    "gpus": lambda ann: fl(1, 1000),
    "alphas": _a(0, 1, two_d=False),
    "gammas": lambda ann: arr(it(0, 16, wrong=False), two_d=False),
    "weights": _a(0, 10, two_d=False),
    "batches": lambda ann: arr(it(1, 4096, wrong=False), two_d=False),
    "context_lens": lambda ann: num_or_arr(it(1, 1_000_000)),
    "ctx": lambda ann: num_or_arr(it(1, 1_000_000)),
    "cap": _f(1, 1e6),  # a sliding window or top-k budget (mixers.base.mean_min)
    "chunk": _f(1, 1e6),  # a chunked-attention chunk (mixers.base.mean_chunked)
    "output_len": _f(1, 1e4),
    # the EPLB / balance arrays
    **{
        k: _a(0, 100) for k in ("loads", "load_fractions", "fractions", "probabilities", "weight", "gpu_loads_by_layer")
    },
    "p": _a(0, 1, two_d=False),
    "q": _a(0, 1, two_d=False),
    "probs": _a(0, 1, two_d=False),
    # ints (sane range)
    **{
        k: _i(1, 64)
        for k in (
            "dp",
            "ep",
            "etp",
            "dcp",
            "concurrency",
            "decode_replicas",
            "prefill_replicas",
            "pp",
            "tp",
            "total_gpus",
            "ranks",
            "num_gpus",
            "num_nodes",
            "num_groups",
            "num_packs",
            "num_physical",
            "num_replicas",
            "n_gpus",
            "links",
            "max_tp",
            "max_plans",
            "num_heads",
            "attention_dp",
            "expert_tp",
            "domain",
        )
    },
    "batch": _i(1, 1024),
    "bins": _i(1, 256),
    "block": _i(1, 256),
    "d_model": _i(1, 16384),
    "text_hidden": _i(1, 16384),
    "domain_gpus": _i(1, 72),
    "gpus_per_node": _i(1, 16),
    "input_len": _i(1, 1_000_000),
    "layers": _i(1, 8),
    "max_bytes": _i(1, 10**6),
    "max_gamma": _i(0, 32),
    "max_gpus": _i(1, 4096),
    "n_cpu_moe": _i(0, 100),
    "n_experts": _i(1, 512),
    "n_groups": _i(1, 16),
    "topk_groups": _i(1, 16),
    "n_hot": _i(1, 16),
    "num_layers": _i(1, 200),
    "offloaded_layers": _i(0, 100),
    "redundant": _i(0, 64),
    "redundant_experts": _i(0, 64),
    "seed": _i(0, 2**32),
    "n_speeds": _i(0, 20),
    "steps": _i(1, 100),
    "top_k": _i(1, 16),
    "tokens_per_step": _i(1, 10),
    "gamma": _i(1, 16),
    "context_len": lambda hint: (
        fl(1, 1e6) if hint is float else (it(1, 1_000_000) if hint is int else num_or_arr(it(1, 1_000_000)))
    ),
    "m": lambda ann: num_or_arr(it(1, 65_536)),
    "k": lambda ann: num_or_arr(it(1, 65_536)),
    "n": lambda ann: num_or_arr(it(1, 65_536)),
}

# Per-function overrides ("module.function.param"): bounded inputs for the expensive simulations and
# arguments whose meaning depends on the function.
OVERRIDES: dict[str, st.SearchStrategy] = {
    # the two cases that model in a blink, or junk ids
    "serving.frontier.model_case.case": st.one_of(
        st.sampled_from(["qwen3.5-397b-b200", "kimi-k2.6-b200-agentic-dcp"]), text(20)
    ),
    # a what-if calibration (bench.frontier --prefill-scale), none, or the wrong type
    "serving.frontier.model_case.calibration": st.one_of(
        st.none(),
        st.floats(min_value=0.2, max_value=5.0).map(
            lambda k: ServedCalibration(prefill_step_scale=k, source="what-if", runs=1, fit_residual=0.0)
        ),
        st.just(WrongType(2.0)),
    ),
    "serving.operating_point.per_gpu_text.amount": fl(0, 1e9),
    # a deployment, or one with a separate draft model (dense or MoE) whose own step prices the drafts
    "speculative.closed_form.batch_speedup.d": st.one_of(
        deployments,
        st.builds(
            lambda dep, draft: Lazy(lambda: _resolve(dep).with_(draft=CAT.models[draft]), f"{dep!r} + draft {draft}"),
            deployments,
            st.sampled_from(["llama-3-8b", "qwen3-0.6b", "qwen3-30b-a3b"]),
        ),
    ),
    "balance.cost.imbalance_cost.plan": st.one_of(
        st.builds(
            lambda s, red: Lazy(
                lambda: balance.placement_plan(balance.zipf_loads(64, s, seed=1)[None, :], 8, 1, 8, red),
                f"placement_plan(zipf(64, {s}), 8, red={red})",
            ),
            st.sampled_from([0.0, 0.8, 2.0]),
            st.sampled_from([0, 8]),
        ),
        st.just(WrongType("not a plan")),
    ),
    "balance.cost.mean_gpu_imbalance.gpu_loads": st.one_of(
        st.lists(st.lists(fl(0, 1e6, wrong=False), min_size=1, max_size=4), min_size=1, max_size=3),
        st.sampled_from([[], [[0, 0]], [[1, -1]], [[float("nan")]], "x"]),
    ),
    "balance.cost.max_fitting_redundant.limit": st.one_of(st.none(), it(0, 512)),
    "balance.cost.cold_expert_memory.fractions": st.one_of(
        st.sampled_from([[[1.0] * 8], [[0.0] * 8], [[1.0, -1.0]], "x", [[float("nan")] * 8]]),
        st.lists(st.lists(fl(0, 10, wrong=False), min_size=8, max_size=8), min_size=1, max_size=2),
    ),
    "balance.cost.cold_expert_memory.share": fl(0.01, 0.99),
    "serving.operating_point.time_categories.parts": st.dictionaries(
        st.sampled_from(["routed_experts", "dispatch", "allreduce", "pp_send", "layer_overhead", "junk"]),
        fl(0, 10, wrong=False),
        max_size=4,
    ),
    "balance.metrics.bias_balancing.n_experts": st.one_of(st.integers(1, 64), st.sampled_from([0, -1, 10**6])),
    "balance.metrics.bias_balancing.steps": st.one_of(st.integers(1, 20), st.sampled_from([0, -1, 10**6, 2**63])),
    "balance.metrics.bias_balancing.tokens_per_step": st.one_of(st.integers(1, 128), st.sampled_from([0, -1, 10**7])),
    "speculative.sim.simulate.steps": st.one_of(st.integers(1, 2000), st.sampled_from([0, -1, 10**8, 2**63])),
    "speculative.sim.simulate.p": st.one_of(_a(0, 1, two_d=False)(""), st.just([0.5, 0.5]), st.just([1.0, 0.0, 0.0])),
    "speculative.sim.simulate.q": st.one_of(_a(0, 1, two_d=False)(""), st.just([0.25, 0.75]), st.just([0.0, 1.0, 0.0])),
    "balance.metrics.gpu_loads.phy2log": st.none(),  # filled with logcnt from one EPLB run in _draw_args
    "balance.metrics.gpu_loads.logcnt": st.none(),
    "validation.calibration.leave_one_out.cases": st.lists(cases, max_size=2),
    "validation.calibration.leave_one_out.only": st.one_of(st.none(), text(20), st.lists(text(20), max_size=2)),
    "validation.calibration.calibrate.cases": st.lists(cases, max_size=3),
    "serving.disagg.break_even_rate.rates": st.lists(fl(1, 1e4, wrong=False), max_size=3),
    "serving.disagg.size_pools.plans": st.none(),
    **{
        f"serving.{f}.d": search_deployments
        for f in (
            "layout.recommend",
            "layout.recommend_with_rejections",
            "layout.enumerate_layouts",
            "layout.decision_rule",
            "disagg.size_pools",
            "disagg.break_even_rate",
        )
    },
    "memory.min_gpus.max_gpus": st.one_of(st.integers(1, 4096), st.sampled_from([0, -1, 65_536, 10**9, 10**30])),
    "memory.min_gpus_table.max_gpus": st.one_of(st.integers(1, 4096), st.sampled_from([0, -1, 10**9, 10**30])),
    "speculative.live.implied_alpha.gamma": fl(1, 64),
    "speculative.live.implied_alpha.tokens_per_step": fl(1, 65),
    "single_box.offload.offloaded_moe_layers.n_cpu_moe": it(0, 100, wrong=False),
    "hardware.collectives.collective_s.n": it(1, 128),
    "hardware.served_step.served_step_cost.mode": choice([*SERVED_STEP_MODES, "eager", "dp_attention"]),
    "hardware.served_step.draft_passes.method": choice(["none", *SERVED_STEP_MODES[1:]]),
    "hardware.served_step.step_overhead_s.cost": st.one_of(
        st.sampled_from(
            [
                Lazy(lambda: served_step_cost("trtllm", "mtp"), "served_step_cost('trtllm', 'mtp')"),
                Lazy(lambda: served_step_cost("vllm"), "served_step_cost('vllm')"),
                Lazy(lambda: served_step_cost("sglang"), "served_step_cost('sglang')"),
            ]
        ),
        st.just(WrongType("not a cost")),
    ),
    "hardware.served_step.step_overhead_s.draft_passes": it(0, 8),
    "hardware.served_step.step_overhead_s.vendor": st.sampled_from(["nvidia", "amd", "other", "", "x" * 80, 3, None]),
    "hardware.served_step.indexer_layers.kinds": st.sampled_from(
        [None, ("mla",), ("gqa", "mla"), (), ("nope",), ["mla"], "mla", 3]
    ),
    "validation.comparison.load_comparison.path": st.sampled_from(
        [CATALOG_DIR / "validation" / "aic_comparison.csv", "/nonexistent.csv", __file__, "x" * 5000, "bad\x00name"]
    ),
    "validation.aiter_check.load_aiter_check.path": st.sampled_from(
        [CATALOG_DIR / "validation" / "aiter_moe_check.csv", "/nonexistent.csv", __file__, "x" * 5000, "bad\x00name"]
    ),
    "validation.aiter_check.aiter_case.row": st.fixed_dictionaries(
        {
            "gpu": st.sampled_from(["mi355x", "mi300x", "h200", "nope", 3]),
            "model": st.sampled_from(["deepseek-v3", "qwen3-235b-a22b", "kimi-k2", "nope"]),
            "experts_dtype": st.sampled_from(["bf16", "fp8", "mxfp4", "int4", "nope"]),
            "expert_tp": st.one_of(it(-2, 80), st.just("x")),
            "tokens": st.one_of(it(-1, 40000), st.just(None)),
        }
    ),
    "validation.aiter_check.aiter_check_summary.results": st.lists(
        st.fixed_dictionaries(
            {
                "gpu": st.sampled_from(["mi355x", "mi300x"]),
                "tokens": st.one_of(it(1, 40000), st.just("x")),
                "error": st.one_of(fl(-1, 10, wrong=False), st.just(float("nan")), st.just(None)),
            }
        ),
        max_size=6,
    ),
    "validation.comparison.comparison_summary.rows": st.lists(
        st.fixed_dictionaries(
            {
                "phase": st.sampled_from(["decode", "prefill", "other"]),
                "group": st.sampled_from(["attention_tp", "dp_ep", "blackwell", "one_gpu", "new"]),
                "aic_ms": fl(1e-3, 1e6, wrong=False),
                "aic_balanced_ms": st.one_of(st.none(), fl(1e-3, 1e6, wrong=False)),
                "planner_ms": fl(1e-3, 1e6, wrong=False),
                "ratio": fl(1e-3, 1e3, wrong=False),
            }
        ),
        max_size=6,
    ),
    "hardware.collectives.allreduce_curves.group_sizes": st.lists(it(1, 128, wrong=False), min_size=1, max_size=3).map(
        tuple
    ),
    "hardware.collectives.allreduce_curves.sizes_bytes": st.lists(fl(1, 1e10, wrong=False), min_size=1, max_size=4).map(
        tuple
    ),
    "perf.layer_comm.collective.n": it(1, 128),
    "hardware.collectives.load_collectives.path": st.sampled_from(
        [CATALOG_DIR / "hardware.collectives.csv", "/nonexistent/collectives.csv", __file__, "x" * 5000, "bad\x00name"]
    ),
    **{
        f"{f}.path": choice([None, *KERNEL_PATHS])
        for f in ("perf.kernels.grouped_gemm_s", "perf.layer_comm.moe_comm_s")
    },
    "serving.launch.launch_command.spec": launch_specs(),
    "serving.launch.launch_command.engine": choice(ENGINES),
    "serving.launch.launch_commands.spec": launch_specs(),
    "serving.launch.spec_from_plan.model_id": st.one_of(
        choice(LAUNCH_MODEL_IDS, BAD_MODEL_IDS), st.just(WrongType(None))
    ),
    "serving.launch.spec_from_plan.max_batched_tokens": it(1, 65_536),
    "serving.plan_commands.plan_commands.max_batched_tokens": it(1, 65_536),
    "serving.launch.spec_from_plan.max_num_seqs": it(1, 4096),
    "serving.launch.spec_from_plan.num_speculative_tokens": it(0, 8),
    "serving.launch.spec_from_plan.kv_cache_dtype": choice(KV_CACHE_DTYPES),
    "serving.launch.spec_from_plan.speculative": st.one_of(st.none(), choice(SPECULATIVE_METHODS)),
    "serving.launch.spec_from_plan.role": choice(ROLES),
}

# core.speculative.acceptance (issue 20): measured acceptance curves. Curves are catalog entries, chains built from per-position
# acceptances (gaps and plateaus included), arbitrary or hostile length tables (mostly refused), or not curves at all.
ACCEPTANCE_CURVES = load_curves()
EPLB_CASES = load_eplb_cases()


@st.composite
def acceptance_tables(draw):
    """``{k: mean accepted length}``: a valid chain, arbitrary lengths, or hostile keys and values."""
    kind = draw(st.integers(0, 2))
    ks = draw(st.lists(st.integers(1, 8), min_size=0, max_size=8, unique=True))
    if kind == 0:
        reach, total, chain = 1.0, 1.0, {}
        for k, a in enumerate(draw(st.lists(st.floats(0, 1), min_size=8, max_size=8)), start=1):
            reach *= a
            total += reach
            chain[k] = total
        return {k: chain[k] for k in ks}
    if kind == 1:
        return {k: draw(fl(1, 9, wrong=False)) for k in ks}
    keys = st.one_of(st.integers(-2, 70), st.sampled_from([True, 2**63, 10**30, "1", 1.5, None]))
    values = st.one_of(fl(1, 9, wrong=False), st.sampled_from(["2", None, 10**400, [1.5], True]))
    return draw(st.dictionaries(keys, values, max_size=4))


@st.composite
def acceptance_curves(draw):
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return WrongType(draw(st.sampled_from([None, "mtp", {1: 1.5}])))
    if kind <= 2:
        return draw(st.sampled_from(ACCEPTANCE_CURVES))
    table = draw(acceptance_tables())
    method = draw(st.sampled_from(ACCEPTANCE_METHODS))
    depth = draw(st.sampled_from([None, 1, 2])) if method == "mtp" else None
    return Lazy(
        lambda: AcceptanceCurve("fuzz", method, None, table, "fuzz", "derived from published", depth, id="fuzz"),
        f"AcceptanceCurve(method={method!r}, accepted_length={table!r})",
    )


OVERRIDES.update(
    {
        "speculative.acceptance.per_position_acceptance.curve": acceptance_curves(),
        "speculative.measured.measured_speedups.curve": st.one_of(
            st.sampled_from(ACCEPTANCE_CURVES[:3]), st.just(WrongType({"k": 1}))
        ),
        "speculative.closed_form.batch_speedup.accepted_tokens": st.one_of(st.none(), fl(1, 3)),
        # a step-time function as the pages pass one (seconds from sequences and tokens per sequence), or garbage
        "speculative.closed_form.speculative_step_s.step_s": st.one_of(
            st.just(lambda n, per_seq: 0.01 + 1e-4 * np.asarray(n) * per_seq), st.just(WrongType(None))
        ),
        "speculative.closed_form.speculative_step_s.sequences": st.one_of(
            fl(1, 1e4, wrong=False), st.just(np.array([1.0, 64.0]))
        ),
        "speculative.closed_form.speculative_step_s.draft_s": st.one_of(st.none(), fl(0, 1, wrong=False)),
        "speculative.measured.best_measured.curves": st.one_of(
            st.lists(st.sampled_from(ACCEPTANCE_CURVES[:3]), min_size=0, max_size=2), st.just([WrongType({"k": 1})])
        ),
        "model.ffn.ffn_gemm_shapes.width_in": it(1, 100_000),
        "model.ffn.ffn_gemm_shapes.intermediate": it(1, 100_000),
        "model.ffn.ffn_gemm_shapes.ffn_matrices": it(2, 3),
        "speculative.acceptance.accepted_length.curve": acceptance_curves(),
        "speculative.acceptance.accepted_length.k": it(0, 10),
        "speculative.acceptance.constant_alpha_length.k": it(0, 64),
        "speculative.acceptance.curves_for.model_id": choice(sorted({c.model_id for c in ACCEPTANCE_CURVES})),
        "speculative.acceptance.curves_for.method": choice(ACCEPTANCE_METHODS),
        "speculative.acceptance.curves_for.curves": st.one_of(
            st.none(),
            st.just(ACCEPTANCE_CURVES),
            st.lists(st.sampled_from(ACCEPTANCE_CURVES), max_size=4),
            st.sampled_from([WrongType(5), "mtp", [1, 2], {"a": 1}]),
        ),
        "balance.published.load_eplb_cases.path": st.sampled_from(
            [
                None,
                CATALOG_DIR / "eplb_measurements.yaml",
                CATALOG_DIR,
                CATALOG_DIR / "engines.yaml",
                CATALOG_DIR / "speculative.acceptance.yaml",
                "/nonexistent/eplb.yaml",
                "x" * 5000,
                "bad\x00name",
            ]
        ),
        "balance.published.compare_case.case": st.one_of(st.sampled_from(EPLB_CASES), st.just(WrongType({"id": "x"}))),
        "speculative.acceptance.load_curves.path": st.sampled_from(
            [
                None,
                CATALOG_DIR / "speculative.acceptance.yaml",
                CATALOG_DIR,
                CATALOG_DIR / "engines.yaml",
                "/nonexistent/acceptance.yaml",
                "x" * 5000,
                "bad\x00name",
            ]
        ),
    }
)

# core.store.auth (issue 21): sign-in settings from the environment, request headers, st.user dicts
_AUTH_ENV_KEYS = st.sampled_from(["PLANNER_AUTH", "PLANNER_AUTH_HEADER", "PLANNER_EDITORS", "PLANNER_READERS", "X"])
_AUTH_ENV_VALUES = st.one_of(choice(["none", "header", "oidc", "*", "a, b", "X-User"]), st.just(WrongType(3)))
_AUTH_ENVS = st.dictionaries(_AUTH_ENV_KEYS, _AUTH_ENV_VALUES, max_size=4)
_HEADER_DICTS = st.dictionaries(choice(["X-Forwarded-User", "x-forwarded-email", "Host"]), text(400), max_size=3)


def _auth_config(env: dict) -> Lazy:
    from core.store.auth import auth_config

    return Lazy(lambda: auth_config(env), f"auth_config({env!r})")


OVERRIDES.update(
    {
        "store.auth.auth_config.env": st.one_of(_AUTH_ENVS, st.just(WrongType(["PLANNER_AUTH"]))),
        "store.auth.identify.config": st.one_of(
            _AUTH_ENVS.map(_auth_config),
            st.just(WrongType("header")),
        ),
        "store.auth.identify.headers": st.one_of(st.none(), _HEADER_DICTS, st.just(WrongType("X-Forwarded-User: a"))),
        "store.auth.identify.user": st.one_of(
            st.none(),
            st.fixed_dictionaries({"is_logged_in": st.sampled_from([True, False, "true"]), "email": text(400)}),
        ),
    }
)

# core.serving.engine_sim (issue 35): the engine simulator on small runs. Lengths are built at call time (their
# constructor refuses junk), short enough that a run of a few hundred requests takes milliseconds; knobs are the
# defaults, drawn ones or junk; requests, clients and replicas are few (hostile counts are refused before any run).
_SIM = "serving.engine_sim"
_PROFILES = {p.id: p for p in load_profiles()}


def _lazy_lengths(args: tuple, exact: bool = False) -> Lazy:
    make = (lambda: Lengths.exact(*args)) if exact else (lambda: Lengths(*args))
    return Lazy(make, f"Lengths{'.exact' if exact else ''}{args!r}")


def _mostly(valid: st.SearchStrategy, junk: st.SearchStrategy) -> st.SearchStrategy:
    """Four draws in five valid: a run needs every argument valid to get past its checks (st.one_of would pick
    each distinct branch alike)."""
    return st.integers(0, 4).flatmap(lambda i: junk if i == 0 else valid)


sim_lengths = _mostly(
    st.one_of(
        st.tuples(st.integers(1, 4096), st.integers(1, 1024)).map(lambda a: _lazy_lengths(a, exact=True)),
        st.tuples(st.integers(1, 2048), st.integers(1, 4), st.integers(1, 512), st.integers(1, 4)).map(
            lambda a: _lazy_lengths((a[0], a[0] * a[1], a[2], a[2] * a[3]))  # a lognormal fit: median, p90
        ),
        st.sampled_from(sorted(_PROFILES)).map(
            lambda k: Lazy(lambda: Lengths.from_profile(_PROFILES[k]), f"Lengths.from_profile({k!r})")
        ),
    ),
    st.one_of(
        st.tuples(*(st.sampled_from([0, -1, 10**30, 2.5, NAN, 10, 5]) for _ in range(4))).map(_lazy_lengths),
        st.just(WrongType((1000, 100))),
    ),
)


def _lazy_knobs(kw: dict) -> Lazy:
    return Lazy(lambda: EngineKnobs(**kw), f"EngineKnobs(**{kw!r})")


sim_knobs = _mostly(
    st.one_of(
        st.just(EngineKnobs()),
        st.fixed_dictionaries(
            {},
            optional={
                "max_running_requests": st.one_of(st.none(), st.integers(1, 64)),
                "token_budget": st.one_of(st.none(), st.integers(256, 65_536)),
                "policy": st.sampled_from(POLICIES),
                "prefix_hit": st.floats(0, 0.99),
                "seed": st.integers(0, 2**32),
            },
        )
        .flatmap(  # speculation: a draft of 1-4 tokens, 1 to draft + 1 of them emitted a step, or the costs' own
            lambda kw: st.one_of(
                st.just(kw),
                st.integers(1, 4).flatmap(
                    lambda k: st.floats(1, k + 1).map(lambda al: {**kw, "draft_tokens": k, "accepted_length": al})
                ),
            )
        )
        .map(_lazy_knobs),
    ),
    st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "max_running_requests": st.sampled_from([0, -1, 2**63]),
                "token_budget": st.sampled_from([0, 2.5, 10**30]),
                "policy": st.sampled_from(GARBAGE_TEXT),
                "prefix_hit": st.sampled_from([NAN, -0.1, 1.0]),
                "draft_tokens": st.sampled_from([-1, 65]),
                "accepted_length": st.sampled_from([NAN, INF, 0.5, 100.0]),
                "seed": st.sampled_from([-1, 2**64, 1.5]),
            },
        ).map(_lazy_knobs),
        st.just(WrongType("decode_first")),
    ),
)
_COUNT_JUNK = st.sampled_from([0, -1, 2**31, 2**63, 10**30])
sim_requests = _mostly(st.integers(1, 200), st.one_of(_COUNT_JUNK, st.just(WrongType(2.5))))
sim_rate = _mostly(st.floats(0.01, 200), st.one_of(st.sampled_from(HOSTILE_FLOATS), st.just(WrongType("1"))))
_SMALL = ReplicaCosts((1.0, 64.0), (0.01, 0.03), 2e-5, 2048, 64, 8)  # fuzz's middle replica_costs


@functools.cache
def _sim_result(kind: int) -> SimResult:
    """A run to judge: a light open loop, one beyond capacity (unstable), one-token outputs (TPOT NaN), a closed loop."""
    return {
        0: lambda: simulate_open(_SMALL, Lengths.exact(512, 64), 1.0, requests=40),
        1: lambda: simulate_open(_SMALL, Lengths.exact(512, 64), 500.0, requests=40),
        2: lambda: simulate_open(_SMALL, Lengths.exact(512, 1), 1.0, requests=40),
        3: lambda: simulate_closed(_SMALL, Lengths(256, 1024, 16, 128), 8, requests=40),
    }[kind]()


sim_results = st.sampled_from(range(4)).map(_sim_result)
for _f_name in (
    "loops.simulate_closed",
    "loops.simulate_open",
    "loops.closed_frontier",
    "loops.open_sweep",
    "loops.goodput_rate",
    "sweep.open_capacity",
    "sweep.load_sweep",
    "sweep.sweep_goodput",
):
    OVERRIDES[f"{_SIM}.{_f_name}.lengths"] = sim_lengths
    OVERRIDES[f"{_SIM}.{_f_name}.knobs"] = sim_knobs
    OVERRIDES[f"{_SIM}.{_f_name}.requests"] = sim_requests
for _f_name in ("loops.simulate_open", "loops.simulate_disaggregated"):
    OVERRIDES[f"{_SIM}.{_f_name}.rate"] = sim_rate
_TARGETS = {
    "ttft_target_s": _mostly(st.floats(0.01, 10), st.one_of(st.sampled_from(HOSTILE_FLOATS), st.just(WrongType("3")))),
    "tpot_target_s": _mostly(st.floats(1e-3, 1), st.one_of(st.sampled_from(HOSTILE_FLOATS), st.just(WrongType("3")))),
    "quantile": _mostly(st.floats(0.01, 0.99), st.sampled_from([0.0, 1.0, NAN, -1.0, 99.0])),
}
for _f_name in ("loops.goodput_rate", "results.goodput", "results.miss", "sweep.sweep_goodput"):
    OVERRIDES.update({f"{_SIM}.{_f_name}.{k}": v for k, v in _TARGETS.items()})
OVERRIDES.update(
    {
        f"{_SIM}.knobs.emitted_per_step.size": _mostly(st.integers(0, 10_000), _COUNT_JUNK),
        **{
            f"{_SIM}.knobs.{f}.{name}": _mostly(valid, junk)
            for f in ("emitted_per_step", "acceptance_rate")
            for name, valid, junk in (
                ("draft_tokens", st.integers(1, 4), st.sampled_from([-1, 65, 2**63, 1.5])),
                ("accepted_length", st.floats(1, 2), st.sampled_from([*HOSTILE_FLOATS, 10.0])),
            )
        },
        f"{_SIM}.knobs.emitted_per_step.rng": _mostly(
            st.integers(0, 2**32).map(np.random.default_rng), st.just(WrongType(0))
        ),
        f"{_SIM}.loops.simulate_closed.concurrency": _mostly(st.integers(1, 64), _COUNT_JUNK),
        f"{_SIM}.loops.simulate_closed.warmup": _mostly(st.one_of(st.none(), st.integers(0, 200)), _COUNT_JUNK),
        f"{_SIM}.loops.simulate_closed.think_s": _mostly(st.floats(0, 10), st.sampled_from(HOSTILE_FLOATS)),
        f"{_SIM}.loops.simulate_open.warmup": _mostly(st.one_of(st.none(), st.integers(0, 200)), _COUNT_JUNK),
        f"{_SIM}.loops.closed_frontier.concurrencies": _mostly(
            st.lists(st.integers(1, 32), max_size=3), st.sampled_from([[0], [2**63], [1.5], WrongType(8)])
        ),
        f"{_SIM}.loops.open_sweep.rates": _mostly(
            st.lists(st.floats(0.01, 100), max_size=3), st.sampled_from([[NAN], [-1.0], [1e300], WrongType(1.0)])
        ),
        f"{_SIM}.loops.goodput_rate.iterations": _mostly(st.integers(1, 4), _COUNT_JUNK),
        f"{_SIM}.loops.simulate_disaggregated.lengths": sim_lengths,
        f"{_SIM}.loops.simulate_disaggregated.prefill_knobs": sim_knobs,
        f"{_SIM}.loops.simulate_disaggregated.decode_knobs": sim_knobs,
        f"{_SIM}.loops.simulate_disaggregated.prefill_replicas": _mostly(st.integers(1, 8), _COUNT_JUNK),
        f"{_SIM}.loops.simulate_disaggregated.decode_replicas": _mostly(st.integers(1, 8), _COUNT_JUNK),
        f"{_SIM}.loops.simulate_disaggregated.handoff_s": _mostly(st.floats(0, 1), st.sampled_from(HOSTILE_FLOATS)),
        f"{_SIM}.loops.simulate_disaggregated.handoff_s_per_token": _mostly(
            st.floats(0, 1e-3), st.sampled_from(HOSTILE_FLOATS)
        ),
        f"{_SIM}.loops.simulate_disaggregated.requests": sim_requests,
        f"{_SIM}.loops.simulate_disaggregated.warmup": _mostly(st.one_of(st.none(), st.integers(0, 200)), _COUNT_JUNK),
        f"{_SIM}.results.goodput.results": _mostly(
            st.lists(sim_results, max_size=4), st.sampled_from([[WrongType("a run")], WrongType(None)])
        ),
        f"{_SIM}.results.miss.result": st.one_of(sim_results, st.just(WrongType(None))),
        f"{_SIM}.results.weighted_quantile.values": _mostly(
            st.lists(st.floats(0, 10), min_size=3, max_size=3).map(np.array), _a(0, 10, two_d=True)("")
        ),
        f"{_SIM}.results.weighted_quantile.weights": _mostly(
            st.lists(st.integers(0, 64), min_size=3, max_size=3).map(np.array),
            st.one_of(_a(0, 64, two_d=False)(""), st.just([1e300, 1e300, 1.0]), st.just([-1.0])),
        ),
        f"{_SIM}.results.weighted_quantile.q": _mostly(st.floats(0, 1), st.sampled_from(HOSTILE_FLOATS)),
        f"{_SIM}.sweep.load_sweep.shares": _mostly(
            st.lists(st.floats(0.01, 1.5), max_size=3), st.sampled_from([[0.5, "x"], [NAN], [0.0], WrongType(0.5)])
        ),
        f"{_SIM}.sweep.sweep_goodput.sweep": _mostly(st.lists(sim_results, max_size=3), st.just(WrongType(None))),
        f"{_SIM}.sweep.sweep_goodput.iterations": _mostly(st.integers(0, 2), _COUNT_JUNK),
    }
)
# the simulations' non-finite values, each documented where it is made
SENTINELS.update(
    {
        f"{_SIM}.loops.{f}": (
            "nan",
            "a one-token output has no TPOT: NaN in SimResult.tpot_s, skipped by its percentiles",
        )
        for f in ("simulate_closed", "simulate_open", "closed_frontier", "open_sweep", "simulate_disaggregated")
    }
)
SENTINELS[f"{_SIM}.sweep.load_sweep"] = ("nan", "as simulate_open: the SimResults of the sweep")
SENTINELS[f"{_SIM}.sweep.sweep_goodput"] = ("nan", "as simulate_open: the SimResult it reports")
SENTINELS[f"{_SIM}.loops.goodput_rate"] = ("nan", "as simulate_open: the SimResult it reports")
SENTINELS[f"{_SIM}.results.goodput"] = ("nan", "as simulate_open: the SimResult it reports")
SENTINELS[f"{_SIM}.results.weighted_quantile"] = ("nan", "no values, or no weight: NaN (its docstring)")

# Examples per function (default DEFAULT_EXAMPLES): fewer for the slow ones.
DEFAULT_EXAMPLES = 50
EXAMPLES = {
    "balance.metrics.bias_balancing": 12,
    "validation.calibration.calibrate": 6,
    "validation.calibration.leave_one_out": 4,
    "report.build.build_report": 15,
    "serving.layout.recommend": 15,
    "speculative.measured.measured_speedups": 10,
    "balance.published.compare_case": 3,
    "speculative.measured.recommend_gamma": 10,
    "speculative.measured.best_measured": 10,
    "serving.operating_point.operating_point": 15,
    "serving.layout.recommend_with_rejections": 15,
    "serving.disagg.size_pools": 15,
    "serving.disagg.break_even_rate": 10,
    "memory.budget.min_gpus_table": 15,
    "single_box.options.single_box_options": 15,
    # the engine simulator: each call a run (or, for the sweeps and goodput_rate, several) of up to 2,000 requests
    f"{_SIM}.loops.simulate_closed": 20,
    f"{_SIM}.loops.simulate_open": 20,
    f"{_SIM}.loops.simulate_disaggregated": 15,
    f"{_SIM}.loops.open_sweep": 8,
    f"{_SIM}.loops.closed_frontier": 5,
    f"{_SIM}.loops.goodput_rate": 5,
    f"{_SIM}.sweep.load_sweep": 8,
    f"{_SIM}.sweep.sweep_goodput": 10,
}


def _examples(n: int) -> int:
    """``FUZZ_SCALE=10 pytest tests/unit/test_fuzz.py`` runs ten times the examples (a deeper local search;
    still deterministic). CI runs the default scale."""
    return max(1, int(n * float(os.environ.get("FUZZ_SCALE", "1"))))


def _public_functions() -> list[tuple[str, Callable]]:
    out = []
    for mod_name in MODULES:
        mod = importlib.import_module(f"core.{mod_name}")
        for n in mod.__all__:
            obj = getattr(mod, n)
            if inspect.isfunction(obj) and obj.__module__ == mod.__name__:
                out.append((f"{mod_name}.{n}", obj))
    # lookups every page uses on the catalog (unknown id -> ValueError listing close ids)
    for meth in ("model", "gpu", "host", "interconnect", "draft_method"):
        out.append((f"catalog.Catalog.{meth}", getattr(CAT, meth)))
    out.append(("deployment.specs.Precision.of", Precision.of))
    return out


FUNCTIONS = dict(_public_functions())


def test_every_public_function_is_fuzzed_or_skipped():
    """A new public function needs a strategy for each parameter (or a SKIP entry with a reason)."""
    missing = []
    for qualname, fn in FUNCTIONS.items():
        if qualname in SKIP:
            continue
        params = inspect.signature(fn).parameters
        for p in params.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            try:
                param_strategy(qualname, p, params)
            except KeyError as e:
                missing.append(str(e))
    assert not missing, missing
    assert set(SKIP) <= set(FUNCTIONS)


def test_a_parameter_without_a_strategy_is_named(monkeypatch):
    """The table answers by the resolved type (a string annotation included); a type it has no entry for, under
    a name it does not know either, is a KeyError naming the function, the parameter and the type."""

    def fake(model: ModelSpec, widget: complex, kv_dtype: str, flag: bool) -> None: ...

    monkeypatch.setitem(FUNCTIONS, "fake.fake", fake)
    params = inspect.signature(fake).parameters
    assert param_strategy("fake.fake", params["model"], params) is models
    assert param_strategy("fake.fake", params["kv_dtype"], params) is kv_dtypes  # the name before the plain str
    assert param_strategy("fake.fake", params["flag"], params) is BY_PLAIN_TYPE[bool]
    with pytest.raises(KeyError, match=r"no strategy for fake\.fake\(widget: complex\)"):
        param_strategy("fake.fake", params["widget"], params)


def _draw_args(data, qualname: str, fn: Callable) -> tuple[list, dict]:
    params = inspect.signature(fn).parameters
    args, kwargs = [], {}
    for p in params.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is not p.empty and data.draw(st.booleans(), label=f"{p.name} default?"):
            continue  # exercise the default half of the time
        v = data.draw(param_strategy(qualname, p, params), label=p.name)
        if p.kind is p.KEYWORD_ONLY or p.default is not p.empty:
            kwargs[p.name] = v
        else:
            args.append(v)
    if qualname == "balance.metrics.gpu_loads":
        args[1], args[2] = data.draw(eplb_outputs(), label="phy2log, logcnt")
    return args, kwargs


@pytest.mark.parametrize("qualname", [q for q in FUNCTIONS if q not in SKIP])
def test_public_function(qualname):
    """Any drawn input: a finite result, or ValueError with a message (TypeError for a wrong type)."""
    fn = FUNCTIONS[qualname]
    allow = SENTINELS.get(qualname, (None,))[0]

    @settings(FUZZ, max_examples=_examples(EXAMPLES.get(qualname, DEFAULT_EXAMPLES)))
    @given(st.data())
    def run(data):
        args, kwargs = _draw_args(data, qualname, fn)
        call_contract(qualname, fn, args, kwargs, allow=allow)

    run()


# ------------------------------------------------------------------ 2. models and input dataclasses

HUGE_TEXT = "x" * 1_000_000
HOSTILE_FIELD = (
    NAN,
    INF,
    -INF,
    -1,
    0,
    -0.0,
    1.5,
    1e30,
    -1e30,
    10**30,
    2**63,
    5e-324,
    True,
    None,
    "",
    "nan",
    "inf",
    "1e30",
    "-1",
    HUGE_TEXT,
    "é\u202e\x00😀",
    b"\xff\xfe",
    [],
    {},
    [1, 2],
    [NAN],
    {"a": 1},
    {"bf16": NAN},
    (1, 2),
    object(),
    (-1,),
    (10**6,),
    (0, -5, 3),
    tuple(range(200)),
    (-(10**12),) * 4,  # layer-index / per-layer tuples out of range
)


def _pydantic_models() -> dict[str, type[BaseModel]]:
    found = {}
    for mod_name in MODULES:
        mod = importlib.import_module(f"core.{mod_name}")
        for obj in vars(mod).values():
            if inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__.startswith("core."):
                found[obj.__name__] = obj
    # the mixer bases (Mixer, LinearMixer, V4Attention: no kind of their own) are interfaces, not something a
    # config or a user builds: their kinds are fuzzed
    kinds = set(MIXER_KINDS.values()) | set(EXTRA_KINDS.values())  # the extras' base (ModelExtra) likewise
    bases = {base for kind in kinds for base in kind.__mro__[1:]} - kinds
    return {k: v for k, v in found.items() if v not in bases}


PYDANTIC_MODELS = _pydantic_models()


def _kind_examples() -> list:
    """Models that a mixer kind's own test file offers (``EXAMPLES`` in ``tests/unit/test_mixer_*.py``), so a
    kind no catalog model uses yet is fuzzed too, and a new kind stays its file, its reader and its test."""
    from pathlib import Path

    out = []
    for path in sorted(Path(__file__).parent.glob("test_mixer_*.py")):
        out += list(getattr(importlib.import_module(f"tests.unit.{path.stem}"), "EXAMPLES", ()))
    return out


# valid instances each model's hostile variants start from
BASELINES: dict[str, list[BaseModel]] = {
    "MoESpec": [m.moe for m in MODELS if m.moe is not None][:8],
    "HostTable": [t for m in MODELS for e in m.extras for t in getattr(e, "tables", ())][:4],
    **{kind.__name__: [e for m in MODELS for e in m.extras if type(e) is kind][:4] for kind in EXTRA_KINDS.values()},
    **{
        kind.__name__: [g.mixer for m in MODELS + _kind_examples() for g in m.mixers if type(g.mixer) is kind][:8]
        for kind in MIXER_KINDS.values()
    },
    "Indexer": [g.mixer.indexer for m in MODELS for g in m.mixers if getattr(g.mixer, "indexer", None)][:4],
    "MixerGroup": [g for m in MODELS[:8] for g in m.mixers],
    "PublishedCounts": [m.published for m in MODELS][:8],
    "ModelSpec": MODELS,
    "GPUSpec": GPUS,
    "HostLink": list({g.host_link.name: g.host_link for g in GPUS if g.host_link is not None}.values()),
    "TokenStats": [p.input_tokens for p in load_profiles()] + [p.output_tokens for p in load_profiles()],
    "WorkloadProfile": list(load_profiles()),
    "FrontierPoint": list(load_frontier_points().values())[:6],
    "FrontierCase": list(load_frontier_cases())[:3],
    "Deployment": [d for c in load_frontier_cases() for d in c.deployments][:4],
    "PoolSpec": [PoolSpec(tp=8, ep=8, dcp=8), PoolSpec(dp_attention=8, ep=8, replicas=4)],
    "Speculation": [c.speculative for c in load_frontier_cases() if c.speculative is not None][:1],
    "ClusterSpec": [
        ClusterSpec(gpu=CAT.gpus["h200"], num_nodes=2),
        ClusterSpec(gpu=CAT.gpus["gb200"], gpus_per_node=4),
    ],
    "Precision": [Precision(), Precision(weights="fp8", routed_experts="int4", kv_cache="fp8", dispatch="fp8")],
    "Workload": [Workload()],
    "ParallelLayout": [ParallelLayout(attention_tp=2, attention_dp=4, ep=8)],
    "SpecDecodeConfig": [
        SpecDecodeConfig(method="eagle", acceptance_rate=0.7, draft_cost=0.1),
        SpecDecodeConfig(method="draft_model", draft_model_id="qwen3-0.6b"),
    ],
    "DraftMethod": list(CAT.draft_methods.values()),
    "MemoryAssumptions": [MemoryAssumptions(redundant_experts=32)],
    "SingleBox": [SingleBox(n_cpu_moe=3)],
    "Scenario": [
        Scenario(),
        Scenario(layout=ParallelLayout(attention_tp=8, ep=8), spec=SpecDecodeConfig(method="mtp")),
    ],
    "HostSpec": HOSTS,
    "InterconnectSpec": list(CAT.interconnects.values()),
    "KernelFactors": [KernelFactors()],
    "LinkFactors": [LinkFactors()],
    "SystemFactors": [SystemFactors()],
    "EfficiencyProfile": list(CAT.efficiency.values()),
}


def _derived(obj: BaseModel):
    """The figures pages compute from a freshly validated object (they must be finite too)."""
    from core import memory
    from core.model import params

    if isinstance(obj, PYDANTIC_MODELS["ModelSpec"]):
        for field in ("dense_layers", "ffn_free_layers"):
            assert all(0 <= i < obj.num_layers for i in getattr(obj, field)), (
                f"{field} out of range: {getattr(obj, field)}"
            )
        grouped = sorted(i for g in obj.mixers for i in g.layers)
        assert grouped == list(range(obj.num_layers)), "every layer must be in exactly one mixer group"
        assert obj.num_moe_layers <= obj.num_layers
        return [
            params.total_params(obj),
            params.active_params(obj),
            obj.num_moe_layers,
            memory.kv_bytes_per_token(obj, "bf16"),
            memory.weights_bytes(obj, "bf16"),
            memory.kv_bytes_per_sequence(obj, 4096, "bf16"),
            memory.decode_read_bytes_per_sequence(obj, 4096),
        ]
    if isinstance(obj, tuple(MIXER_KINDS.values())):
        return [
            obj.params(4096),
            obj.params_per_rank(4096, 8),
            float(obj.cache_bytes(4096.0, "bf16")),
            obj.state_bytes(),
            obj.decode_read_bytes_per_rank(4096.0, "fp8", 2),
            float(obj.score_flops_per_token(4096, 4, "decode")),
        ]
    if isinstance(obj, PYDANTIC_MODELS["GPUSpec"]):
        return [
            obj.memory_bytes,
            obj.memory_gb,
            obj.hbm_bytes_per_s,
            obj.ridge_point_flop_per_byte("bf16" if obj.supports("bf16") else "fp16"),
        ]
    if isinstance(obj, PYDANTIC_MODELS["HostSpec"]):
        return [obj.peak_bandwidth_gbps, obj.memory_bytes]
    if isinstance(obj, PYDANTIC_MODELS["ClusterSpec"]):
        return [obj.total_gpus, obj.scale_up_domain_gpus, obj.hbm_total_gb]
    if isinstance(obj, (Scenario, ParallelLayout)):
        return [obj.total_gpus]
    if isinstance(obj, Workload):
        return [obj.context_len]
    return []


def test_every_pydantic_model_has_a_baseline():
    assert set(PYDANTIC_MODELS) == set(BASELINES), "add a valid baseline for each new pydantic model"
    empty = [name for name, objs in BASELINES.items() if not objs]
    assert not empty, f"no valid instance of {empty}: a new mixer kind's test file exports EXAMPLES (models using it)"


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_pydantic_model_construction(name):
    """A valid object with one to three fields (nested ones included) set to hostile values: a
    ValidationError (a ValueError) whose message names the problem, or a valid object whose numeric
    fields and derived figures are finite; never another exception."""
    cls = PYDANTIC_MODELS[name]

    @settings(FUZZ, max_examples=_examples({"ModelSpec": 500, "GPUSpec": 100, "Scenario": 100}.get(name, 40)))
    @given(st.sampled_from(BASELINES[name]).flatmap(lambda b: _hostile_variant(b.model_dump())))
    def run(fields):
        try:
            with _deadline(HANG_S):
                obj = cls.model_validate(fields)
        except ValidationError as e:
            from core._util.validated import describe_validation_error

            assert str(e).strip() and describe_validation_error(e).strip()
            return
        assert_finite(obj, name, text=False)
        try:
            with _deadline(HANG_S), np.errstate(divide="raise", over="raise", invalid="raise"):
                derived = _derived(obj)
        except ValueError as e:
            assert str(e).strip()
            return
        assert_finite(derived, f"{name} derived figures", text=False)
        assert all(x >= 0 for x in derived), f"{name} derived figures {derived} include a negative one"

    run()


@st.composite
def _hostile_variant(draw, base: dict) -> dict:
    """``base`` (a model_dump) with one to three leaves replaced by hostile values or deleted."""
    obj = draw(mutated(base, n_max=3, anything=HOSTILE_FIELD))
    if draw(st.integers(0, 9)) == 0:
        obj[draw(st.sampled_from(["unknown_field", "__class__", ""]))] = 1  # extra="forbid"
    return obj


# input dataclasses that validate themselves in __post_init__ (the result containers do not need to)
REPLICA_COSTS = dict(
    batch=st.sampled_from([(1.0,), (1.0, 64.0), (1.0, 2.0, 4096.0), (0.5, 1.0), (2.0, 1.0), [1.0], (math.nan,)]),
    decode_step_s=st.sampled_from([(0.01,), (0.01, 0.05), (0.01, 0.02, 0.9), (0.0, 1.0), (-1.0,), (math.inf,)]),
    prefill_s_per_token=st.one_of(fl(1e-9, 1e-3), st.sampled_from([0.0, -1.0, math.nan])),
    budget_tokens=st.one_of(it(1, 10**6), st.sampled_from([0, 1.5])),
    kv_capacity=st.one_of(it(1, 10**5), st.sampled_from([0, -3])),
    gpus=st.one_of(it(1, 1024), st.sampled_from([0, None])),
    draft_tokens=st.one_of(it(0, 4), st.sampled_from([-1, 65, 1.5])),
    accepted_length=st.one_of(st.floats(1, 5), st.sampled_from([0.5, math.nan, math.inf])),
)
INPUT_DATACLASSES = {
    "serving.closed_loop.ReplicaCosts": (ReplicaCosts, REPLICA_COSTS),
    "serving.disagg.Traffic": (
        Traffic,
        dict(
            requests_per_min=fl(1, 1e4),
            input_len=it(1, 10**6),
            output_len=it(1, 10**6),
            ttft_s=fl(0.1, 10),
            tpot_s=fl(0.01, 1),
        ),
    ),
    "perf.step_config.StepConfig": (
        StepConfig,
        dict(
            phase=choice(["decode", "prefill"]),
            tokens_per_gpu=fl(1, 1e4),
            context_len=it(1, 10**6),
            overlap=choice(["none", "two_batch"]),
            comm_kernel=st.one_of(st.none(), choice(["low_latency", "normal"])),
            redundant_experts=it(0, 64),
            imbalance=fl(1, 4),
            tokens_per_sequence=fl(1, 8),
            kernel_path=st.one_of(st.none(), choice(KERNEL_PATHS)),
        ),
    ),
    "hardware.offload_efficiency.OffloadEfficiency": (
        OffloadEfficiency,
        dict(
            gpu_bandwidth=fl(0.01, 1),
            host_bandwidth=fl(0.01, 1),
            unified_bandwidth=fl(0.01, 1),
            cpu_compute=fl(0.01, 1),
            gpu_compute=fl(0.01, 1),
            pcie=fl(0.01, 1),
            compute_buffer_gb=fl(0, 8),
            host_reserve_gb=fl(0, 64),
            ubatch_tokens=it(1, 4096),
        ),
    ),
    "deployment.bundle.Deployment": (
        Deployment,
        dict(
            model=models,
            gpu=gpus,
            layout=layouts(),
            precision=precisions,
            efficiency=efficiencies,
            cluster=st.one_of(st.none(), clusters),
            domain_gpus=st.one_of(st.none(), it(1, 144)),
            redundant_experts=st.one_of(st.none(), it(0, 64)),
        ),
    ),
    "serving.launch.spec.LaunchSpec": (
        LaunchSpec,
        dict(
            model_id=st.one_of(choice(LAUNCH_MODEL_IDS, BAD_MODEL_IDS), text(40)),
            attention_tp=it(1, 8),
            attention_dp=it(1, 8),
            ep=it(1, 8),
            expert_tp=it(1, 8),
            pp=it(1, 4),
            dp=it(1, 4),
            gpus_per_node=it(1, 16),
            redundant_experts=it(0, 64),
            max_batched_tokens=it(1, 65_536),
            max_num_seqs=it(1, 4096),
            kv_cache_dtype=choice(KV_CACHE_DTYPES),
            speculative=st.one_of(st.none(), choice(SPECULATIVE_METHODS)),
            num_speculative_tokens=it(0, 8),
            two_batch_overlap=st.one_of(st.booleans(), st.sampled_from([0, 1, "true", None])),
            role=choice(ROLES),
            is_moe=st.one_of(st.booleans(), st.sampled_from([0, 1, "false", None])),
        ),
    ),
    "validation.case_work.CaseResult": (
        CaseResult,
        dict(
            id=text(10),
            metric=text(10),
            family=text(10),
            gpu=text(10),
            measured=fl(1, 1e4),
            predicted=fl(0, 1e4),
            loo_predicted=st.one_of(st.none(), fl(0, 1e4)),
        ),
    ),
}

INPUT_DATACLASSES["speculative.acceptance.AcceptanceCurve"] = (
    AcceptanceCurve,
    dict(
        model_id=st.one_of(text(30), st.sampled_from(["deepseek-v4-pro", "kimi-k2.5"])),
        method=choice(ACCEPTANCE_METHODS),
        thinking=st.sampled_from([None, True, False, 1, "yes"]),
        accepted_length=st.one_of(acceptance_tables(), st.sampled_from([None, [1.5], "1: 1.5", {}])),
        source=st.one_of(st.just("a source"), text(20)),
        confidence=choice(ACCEPTANCE_CONFIDENCES),
        module_depth=st.one_of(st.none(), it(1, 4)),
        notes=text(20),
        id=text(20),
        catalog_model=st.sampled_from([True, False, None, 1]),
        engine=text(10),
        published_beyond=st.one_of(st.just({}), acceptance_tables()),
    ),
)


EPLB_ROW = dict(
    label=text(20),
    placement=st.one_of(choice(PLACEMENTS), st.sampled_from(["perfect", 3, None])),
    redundant=st.one_of(it(0, 256), st.sampled_from([-1, 1.5, 10**30, None])),
    value=st.one_of(fl(0.01, 1e6), st.sampled_from([0.0, -1.0, math.nan, math.inf, "7", None])),
)
INPUT_DATACLASSES["balance.published.EplbRow"] = (EplbRow, EPLB_ROW)
INPUT_DATACLASSES["balance.published.EplbCase"] = (
    EplbCase,
    dict(
        id=text(20),
        source=text(20),
        model=st.sampled_from(["deepseek-v3", "deepseek-v4-pro", "x"]),
        gpu=st.sampled_from(["h100-sxm", "mi355x", "x"]),
        stack=st.sampled_from(["sglang", "vllm", "x"]),
        precision=st.sampled_from(["fp8", "bf16", "x"]),
        ep=st.one_of(it(1, 64), st.sampled_from([0, -8, 2.5, None])),
        nodes=st.one_of(it(1, 8), st.sampled_from([0, None])),
        tokens_per_gpu=st.one_of(fl(1, 1e5), st.sampled_from([0.0, math.nan, math.inf, -5.0, "16384"])),
        context_len=st.one_of(it(1, 10**5), st.sampled_from([0, -1, 1.5, None])),
        unit=text(10),
        baseline=st.one_of(st.sampled_from([EPLB_CASES[0].baseline]), st.sampled_from([None, "row"])),
        rows=st.one_of(st.just(EPLB_CASES[0].rows), st.sampled_from([(), ("row",), None])),
        zipf_s=st.one_of(fl(0, 3), st.sampled_from([math.nan, -1.0, 11.0, "1"])),
    ),
)

INPUT_DATACLASSES["serving.engine_sim.knobs.EngineKnobs"] = (
    EngineKnobs,
    dict(
        max_running_requests=st.one_of(st.none(), it(1, 10_000)),
        token_budget=st.one_of(st.none(), it(1, 10**6)),
        policy=choice(POLICIES),
        prefix_hit=fl(0, 0.99),
        draft_tokens=st.one_of(st.none(), it(0, 64)),
        accepted_length=st.one_of(st.none(), fl(1, 65)),
        seed=it(0, 2**63 - 1),
    ),
)
_TOKENS = st.one_of(it(1, 10_000_000), st.sampled_from([1.5, NAN, "10"]))
INPUT_DATACLASSES["serving.engine_sim.knobs.Lengths"] = (
    Lengths,
    dict(
        input_median=_TOKENS,
        input_p90=_TOKENS,
        output_median=_TOKENS,
        output_p90=_TOKENS,
        fixed=st.one_of(st.booleans(), st.sampled_from([0, 1, "true", None])),
        input_max=st.one_of(st.none(), _TOKENS),
        output_max=st.one_of(st.none(), _TOKENS),
    ),
)

INPUT_DATACLASSES["hardware.served_step.ServedStepCost"] = (
    ServedStepCost,
    dict(
        fixed_s=fl(0, 0.01),
        per_layer_s=fl(0, 1e-3),
        source=text(),
        engine=choice(sorted(SERVING_STACKS)),
        version=text(),
        date=text(),
        per_draft_s=fl(0, 0.01),
        mode=choice(SERVED_STEP_MODES),
        indexer_mixers=st.sampled_from([None, ("mla",), ("gqa", "mla"), ("nope",), ["mla"], "mla"]),
    ),
)
INPUT_DATACLASSES["single_box.box.Box"] = (
    Box,
    dict(
        model=st.one_of(models, st.just(WrongType("a model"))),
        host=hosts,
        gpu=st.one_of(st.none(), gpus),
        n_gpus=it(1, 4),
        precision=precisions,
        context_len=it(1, 10**7),
        eff=offload_effs,
    ),
)


def test_every_validating_dataclass_is_fuzzed():
    found = set()
    for mod_name in MODULES:
        mod = importlib.import_module(f"core.{mod_name}")
        for n in mod.__all__:
            obj = getattr(mod, n)
            if (
                inspect.isclass(obj)
                and dataclasses.is_dataclass(obj)
                and "__post_init__" in vars(obj)
                and obj.__module__ == mod.__name__
            ):  # where it is defined, not where it is re-exported
                found.add(f"{mod_name}.{n}")
    assert found == set(INPUT_DATACLASSES)


@pytest.mark.parametrize("name", sorted(INPUT_DATACLASSES))
def test_input_dataclass_construction(name):
    """Hostile field values: ValueError with a message (TypeError for a wrong type), or an object
    whose numeric fields are all finite."""
    cls, fields = INPUT_DATACLASSES[name]

    @settings(FUZZ, max_examples=_examples(60))
    @given(st.fixed_dictionaries(fields))
    def run(kwargs):
        call_contract(name, cls, [], kwargs)

    run()


@pytest.mark.parametrize("field", ["dense_layers", "ffn_free_layers"])
@pytest.mark.parametrize("bad", [-1, 10**6])
def test_model_layer_indexes_must_exist(field, bad):
    """Found by the fuzz: a layer index outside 0..num_layers-1 must be refused, not silently counted
    (ffn_free_layers=(1000,) on a 32-layer MoE used to drop a MoE layer from every count)."""
    base = CAT.models["mixtral-8x7b"].model_dump()
    base[field] = (bad,)
    with pytest.raises(ValidationError, match=field):
        PYDANTIC_MODELS["ModelSpec"].model_validate(base)


@pytest.mark.parametrize(
    "layers,message",
    [
        ((0, 1, 2, 10**6), "outside 0..31"),
        ((-1, 0, 1), "outside 0..31"),
        ((0, 1), "layers \\[2, 3, 4, 5, 6\\] are in no group"),
    ],
)
def test_every_layer_has_exactly_one_mixer(layers, message):
    """A mixer group naming a layer that does not exist, or leaving one without a mixer, is refused."""
    base = CAT.models["mixtral-8x7b"].model_dump()
    base["mixers"] = [{**base["mixers"][0], "layers": layers}]
    with pytest.raises(ValidationError, match=message):
        PYDANTIC_MODELS["ModelSpec"].model_validate(base)
    two = CAT.models["mixtral-8x7b"].model_dump()
    two["mixers"] = [two["mixers"][0], {**two["mixers"][0], "layers": (5,)}]
    with pytest.raises(ValidationError, match="layer 5 is in two mixer groups"):
        PYDANTIC_MODELS["ModelSpec"].model_validate(two)


# ------------------------------------------------------------------------ 3. parsers of user text

# one 100 MB string for every parser (built once, lazily: 100 MB of memory only while these tests run)
_BIG: list[str] = []


def big_text() -> str:
    if not _BIG:
        _BIG.append("1," * 50_000_000)
    return _BIG[0]


def assert_refuses(fn, *args, match: str = "", seconds: float = 2.0):
    """``fn(*args)`` raises ValueError with a message (matching ``match``) within ``seconds``."""
    t0 = time.perf_counter()
    with _deadline(HANG_S), pytest.raises(ValueError) as e:
        fn(*args)
    elapsed = time.perf_counter() - t0
    assert str(e.value).strip()
    assert re.search(match, str(e.value), re.I), f"{str(e.value)[:200]!r} does not match {match!r}"
    assert elapsed < seconds, f"{getattr(fn, '__name__', fn)} took {elapsed:.1f} s to refuse"
    return str(e.value)


def _check_model(result):
    """A config parser's success: a ModelSpec (and its normalised text) whose figures are finite."""
    from core import memory
    from core.model import params

    m, normalised = result
    assert isinstance(normalised, str) and m.id.startswith("custom-")
    assert_finite(m, "model", text=False)
    assert_finite([params.total_params(m), params.active_params(m), memory.kv_bytes_per_token(m, "bf16")], "figures")


CONFIG_TEXTS = {m: json.dumps(c) for m, c in CONFIGS.items()}


@st.composite
def config_texts(draw):
    """Hostile config.json text: truncated or mutated real configs (NaN / Infinity / -1 / 1e30 / huge ints
    / wrong types in any field), JSON that is not an object, random unicode and random bytes."""
    kind = draw(st.integers(0, 7))
    base = CONFIG_TEXTS[draw(st.sampled_from(sorted(CONFIG_TEXTS)))]
    if kind == 0:  # truncated
        return base[: draw(st.integers(0, len(base) - 1))]
    if kind in (1, 2, 3):  # mutated, NaN and Infinity written as JavaScript literals
        return json.dumps(draw(mutated(json.loads(base), n_max=3)), allow_nan=True)
    if kind == 4:  # a numeric field replaced by a literal json cannot hold in a float / an int, or a list / object
        keys = ["hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads"]
        keys += ["num_experts", "moe_topk", "n_routed_experts", "first_k_dense_replace", "v_head_dim"]  # issue 21
        key = draw(st.sampled_from(keys))
        lits = ["1e400", "-1e400", "NaN", "-Infinity", "9" * 5000, "0x10", "1_000", "+1", ".5"]
        lits += ["[[1]]", "[8]", "[]", '{"a": 1}', "5001", "1667"]  # issue 21: lists, objects, past the page limits
        lit = draw(st.sampled_from(lits))
        return re.sub(rf'"{key}": [^,}}]+', f'"{key}": {lit}', base, count=1)
    if kind == 5:
        return draw(
            st.sampled_from(
                [
                    "[]",
                    "null",
                    "1",
                    '"x"',
                    "{}",
                    '{"model_type": null}',
                    '{"model_type": []}',
                    '{"model_type": "mixtral", "text_config": 5}',
                    "\ufeff{}",
                    "{,}",
                    "{'a': 1}",
                ]
            )
        )
    if kind == 6:
        return draw(st.text(max_size=200))
    return WrongType(draw(st.binary(max_size=200))) if draw(st.booleans()) else draw(st.binary(max_size=200))


@settings(FUZZ, max_examples=_examples(300))
@given(config_texts())
def test_config_json_importer_never_crashes(text):
    """model_from_config_text (what the Catalog page's import calls): any text or bytes gives a
    ValueError saying what is wrong, or a valid model with finite figures."""
    text = text.value if isinstance(text, WrongType) else text
    out = call_contract("hf.model_from_config_text", hf_config.model_from_config_text, [text], {})
    if out is not None:
        _check_model(out)


@pytest.mark.parametrize(
    "text, match",
    [
        ("[" * 100_000 + "]" * 100_000, "nested"),
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested"),
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, "nested"),
        ("[" * 100_000, "nested|not valid JSON"),
        ('{"a": ' + "[" * 30 + "]" * 30 + "}", "nested more than"),
        ('{"hidden_size": ' + "9" * 5000 + "}", "number"),
        ('{"hidden_size": NaN}', "NaN"),
        ("", "empty"),
        ("\x00\x01\x02", "not valid JSON"),
        (b"\xff\xfe\x00{", "UTF-8"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_config_json_structural_attacks_are_refused_quickly(text, match):
    """Deep nesting (100,000 levels) gives 'nested too deeply', never a RecursionError; a number of
    5,000 digits, NaN, empty text, binary junk and a non-object each get a message."""
    assert_refuses(hf_config.model_from_config_text, text, match=match)
    assert_refuses(hf_config.parse_config_text, text, match=match)


def test_config_json_size_limit():
    """A 100 MB paste (text or bytes) is refused at once with its size and the limit."""
    big = big_text()
    msg = assert_refuses(hf_config.parse_config_text, big, match="limit")
    assert "100,000,000" in msg and f"{hf_config.MAX_CONFIG_BYTES:,}" in msg
    assert_refuses(hf_config.parse_config_text, big.encode(), match="limit", seconds=3)
    assert_refuses(hf_config.model_from_config_text, big, match="limit")
    assert_refuses(hf_config.encode_config, big, match="too large")
    assert_refuses(hf_config.decode_config, big, match="too long")


@pytest.mark.parametrize(
    "key",
    [
        "num_hidden_layers",
        "first_k_dense_replace",
        "n_routed_experts",
        "num_experts",
        "moe_layer_freq",
        "hidden_size",
        "vocab_size",
        "sliding_window",
    ],
)
@pytest.mark.parametrize(
    "model_id",
    ["deepseek-v3", "qwen3-30b-a3b", "qwen3.5-397b-a17b", "kimi-k3", "minimax-m3", "gemma-4-26b-a4b", "mixtral-8x7b"],
)
def test_config_json_huge_counts_are_refused_quickly(model_id, key):
    """Found by the fuzz: num_hidden_layers = 10**12 built a 10**12-long layer list before any check
    (a hang), first_k_dense_replace = 10**12 a 10**12-long tuple (MemoryError)."""
    cfg = copy.deepcopy(CONFIGS[model_id])

    def put(o):
        if isinstance(o, dict):
            for k in o:
                if k == key:
                    o[k] = 10**12
                else:
                    put(o[k])

    put(cfg)
    t0 = time.perf_counter()
    out = call_contract("model_from_config_text", hf_config.model_from_config_text, [json.dumps(cfg)], {})
    assert time.perf_counter() - t0 < 2.0
    if out is not None:
        _check_model(out)


@st.composite
def url_tokens(draw):
    kind = draw(st.integers(0, 4))
    good = hf_config.encode_config(CONFIG_TEXTS["mixtral-8x7b"])
    if kind == 0:
        return good[: draw(st.integers(0, len(good)))]
    if kind == 1:
        i = draw(st.integers(0, len(good) - 1))
        return good[:i] + draw(st.sampled_from(["A", "-", "_", "=", "!", "é", " "])) + good[i + 1 :]
    if kind == 2:
        return draw(st.text(max_size=100))
    if kind == 3:
        return draw(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", max_size=200))
    return WrongType(draw(st.sampled_from([None, b"eJw", 5, ["x"]])))


@settings(FUZZ, max_examples=_examples(200))
@given(url_tokens())
def test_url_config_token_never_crashes(token):
    """decode_config (a URL's ``cfg``): a ValueError for anything that is not a complete token."""
    out = call_contract("hf.decode_config", hf_config.decode_config, [token], {})
    assert out is None or isinstance(out, str)


def test_url_config_zip_bomb_is_refused():
    """A short token that inflates beyond the config size limit is refused without inflating it all."""
    import base64
    import zlib

    bomb = base64.urlsafe_b64encode(zlib.compress(b" " * (hf_config.MAX_CONFIG_BYTES * 10), 9)).decode().rstrip("=")
    assert len(bomb) <= hf_config.MAX_URL_CONFIG_CHARS
    assert_refuses(hf_config.decode_config, bomb, match="size limit")


# -- expert loads: CSV and Prometheus (core.balance), speculative metrics (core.speculative.live)

CSV_CELLS = (
    "0",
    "1",
    "2.5",
    "-1",
    "1e30",
    "1e400",
    "nan",
    "inf",
    "-inf",
    "0x10",
    "1_000",
    "",
    " ",
    "a",
    '"3"',
    "'3'",
    "٣",
    "１",
    "\x00",
    "1e-400",
    "+1",
    ".5",
    "5.",
    "e",
    "--1",
    "9" * 400,
)


@st.composite
def csv_texts(draw):
    kind = draw(st.integers(0, 3))
    if kind == 0:  # a table of hostile cells
        rows = draw(st.lists(st.lists(st.sampled_from(CSV_CELLS), min_size=0, max_size=6), min_size=0, max_size=6))
        sep = draw(st.sampled_from(["\n", "\r\n", "\r", "\n\n"]))
        return sep.join(",".join(r) for r in rows)
    if kind == 1:
        return draw(st.text(alphabet="0123456789.,-e\n\r\"' \tnaif\x00é", max_size=200))
    if kind == 2:
        return draw(st.text(max_size=200))
    return WrongType(draw(st.sampled_from([None, b"1,2\n", 5, [1, 2]])))


@settings(FUZZ, max_examples=_examples(300))
@given(csv_texts())
def test_expert_load_csv_never_crashes(text):
    """parse_loads_csv: a ValueError that names the line, or a [layers, experts] table of finite loads
    >= 0 with at least 2 experts and no all-zero row."""
    out = call_contract("balance.metrics.parse_loads_csv", balance.parse_loads_csv, [text], {})
    if out is not None:
        assert out.ndim == 2 and out.shape[1] >= 2 and np.all(out >= 0) and np.all(out.sum(axis=1) > 0)


@pytest.mark.parametrize(
    "text, match",
    [
        ("1,2\r3", "line"),  # a lone CR used to raise _csv.Error (not a ValueError)
        ('"1,2', "."),
        ("1," + "9" * 200_000, "line 1"),  # a field beyond the csv module's limit used to raise _csv.Error
        ("1,2\n3", "line 2"),
        ("1,nan", "line 1"),
        ("1,1e400", "line 1"),
        ("0,0", "all zero"),
        ("1,-1", "line 1"),
        ("x,y\nz,w", "line 2, column 1: 'z' is not a number"),  # only the first row can be a header
        ("x,y", "no rows"),
        ("12O,3\n4,5", "line 1, column 1"),  # a typo is not a header (issue #21: the row was lost)
        ("\ufeff1,2\n3,4O", "line 2, column 2"),
        ("1,1e308", "above the largest load accepted"),  # finite, but two of them sum to inf
    ],
)
def test_expert_load_csv_messages(text, match):
    assert_refuses(balance.parse_loads_csv, text, match=match)


LABELS = ("0", "1", "7", "-1", "99999", "100000", "1e3", "x", "", " 3", "9" * 50, "٣")
VALUES = ("1", "0", "2.5", "-1", "NaN", "+Inf", "-Inf", "1e308", "1e400", "x", "0x1", "1_0")


@st.composite
def prometheus_texts(draw):
    kind = draw(st.integers(0, 2))
    if kind == 0:
        lines = []
        for _ in range(draw(st.integers(0, 8))):
            name = draw(st.sampled_from(["sglang:expert_load", "vllm:expert_tokens", "m", "m2", "9bad", ""]))
            labels = draw(
                st.dictionaries(
                    st.sampled_from(["layer", "expert", "expert_id", "expert_idx", "layer_id", "x"]),
                    st.sampled_from(LABELS),
                    max_size=3,
                )
            )
            lab = ",".join(f'{k}="{v}"' for k, v in labels.items())
            lines.append(
                f"{name}{{{lab}}} {draw(st.sampled_from(VALUES))}" + draw(st.sampled_from(["", " 1700000000"]))
            )
            if draw(st.integers(0, 4)) == 0:
                lines.append(draw(st.sampled_from(["# HELP m x", "", "{{{", 'm{layer="1"', "m{} ", "m 1 2 3"])))
        return "\n".join(lines)
    if kind == 1:
        return draw(st.text(alphabet='m{}=",expertlay_0123456789 \n#.-+eInfNa', max_size=300))
    return draw(st.text(max_size=200))


@settings(FUZZ, max_examples=_examples(300))
@given(prometheus_texts(), st.one_of(st.none(), st.sampled_from(["m", "sglang:expert_load", "nope"])))
def test_prometheus_expert_loads_never_crash(text, metric):
    """parse_prometheus_loads: a ValueError naming the line, or finite loads >= 0 with the metric used."""
    out = call_contract("balance.metrics.parse_prometheus_loads", balance.parse_prometheus_loads, [text, metric], {})
    if out is not None:
        loads, name = out
        assert loads.ndim == 2 and np.all(loads >= 0) and isinstance(name, str)


def test_prometheus_expert_loads_memory_bomb_is_refused():
    """Found by the fuzz: 10,000 layers each with one sample and one sample at expert 99,999 asked for
    a 10,000 x 100,000 table (8 GB); now the table size is bounded with a message."""
    lines = "\n".join(f'm{{layer="{i}",expert="{99_999 if i == 0 else 0}"}} 1' for i in range(10_000))
    assert_refuses(balance.parse_prometheus_loads, lines, match="layers x")


@settings(FUZZ, max_examples=_examples(300))
@given(
    st.one_of(
        prometheus_texts(),
        st.lists(
            st.tuples(
                st.sampled_from(
                    [
                        "vllm:spec_decode_num_accepted_tokens_total",
                        "vllm:spec_decode_num_draft_tokens_total",
                        "vllm:spec_decode_num_drafts_total",
                        "sglang:spec_accept_length",
                        "up",
                    ]
                ),
                st.sampled_from((*VALUES, "5000", "1000", "2600", "3.2", "1e-300")),
            ),
            max_size=6,
        ).map(lambda xs: "\n".join(f'{n}{{engine="0"}} {v}' for n, v in xs)),
    )
)
def test_spec_decode_scrape_never_crashes(text):
    """speculative.live.spec_observation: a ValueError, or an observation in range: acceptance in [0, 1] (NaN for
    SGLang, which does not report it), tokens per step >= 1, gamma > 0 or None."""
    out = call_contract("speculative.live.spec_observation", live.spec_observation, [text], {}, allow="nan")
    if out is not None:
        assert out.engine in ("vLLM", "SGLang")
        assert math.isnan(out.acceptance_rate) if out.engine == "SGLang" else 0 <= out.acceptance_rate <= 1
        assert math.isfinite(out.tokens_per_step) and out.tokens_per_step >= 1
        assert out.gamma is None or (math.isfinite(out.gamma) and out.gamma >= 0)


def test_text_parsers_refuse_100_mb_quickly():
    """Every parser of pasted text refuses a 100 MB paste at once, saying the size and the limit."""
    big = big_text()
    for fn in (balance.parse_loads_csv, balance.parse_prometheus_loads, live.parse_samples, live.spec_observation):
        msg = assert_refuses(fn, big, match="limit")
        assert "100,000,000" in msg


# -- the URL scenario reader (extends test_scenario_url.py: non-text values, numeric edge cases, huge values)


@settings(FUZZ, max_examples=_examples(200))
@given(url_params, st.lists(text(30), max_size=2).map(tuple))
def test_url_scenario_reader_never_crashes(params, extra_ids):
    """scenario_from_params with values of any type (None, ints, NaN floats, bytes, nested lists,
    '1e400', '٣', 5,000 digits): a valid scenario and short warnings, never an exception, and what it
    writes back reads back unchanged."""
    with _deadline(HANG_S), np.errstate(divide="raise", over="raise", invalid="raise"):
        s, warnings_ = scenario_from_params(params, CAT, extra_ids)
    assert isinstance(s, Scenario) and (s.model_id in CAT.models or s.model_id in extra_ids)
    assert s.gpu_id in CAT.gpus
    assert all(isinstance(w, str) and 0 < len(w) < 700 for w in warnings_)
    if s.model_id in CAT.models:
        assert scenario_from_params(scenario_to_params(s), CAT) == (s, [])


def test_url_scenario_reader_huge_value():
    """A 100 MB URL value is cut before it is read: one short warning, the default kept, quickly."""
    t0 = time.perf_counter()
    s, w = scenario_from_params({"model": big_text(), "batch": big_text()}, CAT)
    assert time.perf_counter() - t0 < 2.0
    assert s.model_id == "deepseek-v3" and s.workload.batch == 64
    assert len(w) == 2 and all(len(x) < 700 for x in w)


def test_url_round_trip_keeps_every_digit():
    """Found by the fuzz: reserve=0.001953125 was written back as "0.00195312" (``%g``), so the URL
    reopened a different scenario."""
    s, w = scenario_from_params(
        {"reserve": "0.001953125", "util": "0.123456789", "alpha": "0.7071067811865476", "sd": "eagle"}, CAT
    )
    assert w == [] and s.memory.runtime_reserve_gb == 0.001953125
    assert scenario_from_params(scenario_to_params(s), CAT) == (s, [])
    assert scenario_to_params(Scenario(memory=MemoryAssumptions(gpu_memory_utilization=0.85)))["util"] == "0.85"


# ------------------------------------------- issue 37: configs within the importer's bounds compute or name the field

# what an imported config's integers may be (every integer anywhere, list elements included): values up to the
# importer's bounds, with a few just past them (and far past: the probe's 2**63 and 10**300)
WITHIN_BOUNDS = (0, 1, 2, 3, 7, 64, 1_024, 1_666, 5_000, 10**6, 10**9, 10**12)
PAST_BOUNDS = (65, 1_667, 5_001, 10**6 + 1, 10**12 + 1, -(10**12) - 1, 2**63, 10**300)


def _int_leaves(obj) -> list[tuple]:
    """Paths to the integers of a JSON-like object (booleans aside), list elements included."""
    return [p for p in _leaves(obj) if p and isinstance(_at(obj, p), int) and not isinstance(_at(obj, p), bool)]


def _at(obj, path):
    for k in path:
        obj = obj[k]
    return obj


@st.composite
def mutated_within_bounds(draw, n_max: int = 2, past: bool = True):
    """(catalog model id, its config.json with one to ``n_max`` integers replaced, [(path, value)]): any integer of
    the config (nested objects and list elements included), most often by a value within the importer's bounds
    (WITHIN_BOUNDS, or the original halved, doubled or plus one), a fifth of the time (``past``) past them."""
    model_id = draw(st.sampled_from(sorted(CONFIGS)))
    cfg = copy.deepcopy(CONFIGS[model_id])
    paths = _int_leaves(cfg)
    changes = []
    for _ in range(draw(st.integers(1, n_max))):
        path = draw(st.sampled_from(paths))
        orig = _at(cfg, path)
        if past and draw(st.integers(0, 4)) == 0:
            value = draw(st.sampled_from(PAST_BOUNDS))
        else:
            value = draw(st.sampled_from((*WITHIN_BOUNDS, orig + 1, 2 * orig, orig // 2)))
        _at(cfg, path[:-1])[path[-1]] = value
        changes.append((path, value))
    return model_id, cfg, changes


def named_field(changes: list[tuple]) -> str | None:
    """The field a refusal of this mutation must name, where that is checkable: one integer beyond +-10**12
    (every integer's bound), or a vision merge kernel element beyond 64 (read by MoonViT's reader)."""
    from core.hf.vision import VISION_BOUNDS

    if len(changes) != 1:
        return None
    path, value = changes[0]
    key = next(str(k) for k in reversed(path) if isinstance(k, str))
    if abs(value) > hf_config.MAX_FIELD_INT:
        return key
    if key == "merge_kernel_size" and value > VISION_BOUNDS[key][0]:
        return key
    return None


def _pages_compute(m) -> None:
    """What the pages compute for a model, on a default layout of 8 GPUs (the step-time model's kernels refused
    weights above 1e15 on Intensity, Balance and Speculative: probe 3 CR-4)."""
    from core import memory, moe, perf
    from core.deployment.parallel import check_layout, default_layout
    from core.model import params
    from core.perf import StepConfig

    assert_finite([params.total_params(m), params.active_params(m), params.flops_per_token(m)], "counts")
    assert params.total_params(m, include_mtp=True) <= hf_config.MAX_TOTAL_PARAMS
    gpu, prec = CAT.gpu("h200"), Precision(weights="fp8")
    layout = default_layout(m, 8, 8, prec)
    if check_layout(m, layout):
        return
    d = Deployment(m, gpu, layout, prec, CAT.efficiency_for("h200", "sglang"))
    assert_finite(memory.stage_memories(d), "stage memories")
    for phase, tokens in (("decode", 8.0), ("prefill", 4096.0)):
        assert_finite(perf.step_time(d, StepConfig(phase, tokens, 4096)).latency_s, phase)
    if m.is_moe:
        assert_finite(moe.decode_step(d, [1, 64], 4096).time_s, "decode step")


@settings(FUZZ, max_examples=_examples(400))  # about 1 s: an import and a few step times each
@given(mutated_within_bounds())
def test_a_config_within_the_importers_bounds_computes_or_is_refused_naming_the_field(drawn):
    """Every config the importer accepts gives what the pages compute (finite, no ValueError from the step-time
    model); every config it refuses gets a message, naming the field where that is checkable (issue 37)."""
    _, cfg, changes = drawn
    try:
        with _deadline(HANG_S):
            m, _ = hf_config.model_from_config_text(json.dumps(cfg))
    except ValueError as e:
        assert str(e).strip()
        key = named_field(changes)
        assert key is None or key in str(e), (changes, str(e)[:300])
        return
    assert named_field(changes) is None, (changes, "accepted")
    with _deadline(HANG_S):
        _pages_compute(m)


# ------------------------------------------------ issue 36: benchmark result files and the served fit

from pathlib import Path  # noqa: E402

from core.validation.bench_results import parse_bench_results  # noqa: E402

_BENCH_FILES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "bench_results").glob("*.json*"))
_BENCH_BYTES = [p.read_bytes() for p in _BENCH_FILES]
_BENCH_RUNS = [r for b in _BENCH_BYTES for r in parse_bench_results(b)]
BASELINES["ServedCalibration"] = [
    ServedCalibration(
        decode_step_scale=1.27, prefill_step_scale=0.8, source="bench.json, AIPerf", runs=2, fit_residual=0.04
    )
]


@st.composite
def bench_files(draw):
    """A real result file (bytes or text), one of its JSON objects with up to two values made hostile, or junk."""
    kind = draw(st.integers(0, 3))
    raw = draw(st.sampled_from(_BENCH_BYTES))
    if kind == 0:
        return raw if draw(st.booleans()) else raw.decode()
    if kind == 1:
        try:
            obj = json.loads(raw)  # one JSON object (vLLM, AIPerf)
        except json.JSONDecodeError:
            obj = json.loads(raw.splitlines()[0])  # JSON Lines (SGLang)
        bad = draw(mutated(obj, n_max=2, anything=HOSTILE_FIELD))
        return json.dumps(bad, default=str)[:2_000_000]
    if kind == 2:
        return draw(st.one_of(text(200), st.binary(max_size=200)))
    return draw(st.sampled_from(["", "[]", "{}", "[1, 2]", '{"completed": 1}\n{"x": 2}', "null", "[" * 100_000]))


_FIT_RUNS = _mostly(
    st.lists(st.sampled_from(_BENCH_RUNS), min_size=1, max_size=3),
    st.sampled_from([[], [WrongType("a run")], WrongType(None)]),
)
_PREDICTS = [
    lambda run: {"ttft_ms": 100.0, "tpot_ms": 20.0, "output_tokens_per_s": 1000.0},
    lambda run: {"tpot_ms": 1e-9, "ttft_ms": 1e15},
    lambda run: {"tpot_ms": float("nan")},
    lambda run: {"ttft_ms": -1.0},
    lambda run: None,
    lambda run: {},
]
_FIT_PREDICT = st.one_of(st.sampled_from(_PREDICTS), st.just(WrongType(5)))
OVERRIDES.update(
    {
        "validation.bench_results.parse_bench_results.data": bench_files(),
        "validation.served_fit.measured_metrics.run": st.one_of(
            st.sampled_from(_BENCH_RUNS), st.just(WrongType("a run"))
        ),
        "validation.served_fit.compare_runs.runs": _FIT_RUNS,
        "validation.served_fit.compare_runs.predict": _FIT_PREDICT,
        "validation.served_fit.fit_calibration.runs": _FIT_RUNS,
        "validation.served_fit.fit_calibration.predict": _FIT_PREDICT,
        "validation.served_fit.fit_calibration.recheck": st.one_of(
            st.none(),
            st.just(lambda cal: lambda run: {"tpot_ms": 20.0 * cal.decode_step_scale, "ttft_ms": 90.0}),
            st.just(lambda cal: _PREDICTS[1]),
            st.just(WrongType(3)),
        ),
        "validation.served_fit.fit_calibration.rounds": _mostly(st.integers(0, 4), _COUNT_JUNK),
    }
)
