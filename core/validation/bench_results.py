"""A serving benchmark's result file, read (issue 36, calibration to your own cluster): one :class:`BenchResult`
per run, whichever of the three tools wrote it, recognised from the content.

* vLLM ``vllm bench serve --save-result`` (and the older ``benchmarks/benchmark_serving.py``): one JSON object
  per file (``--append-result`` adds one per line), keys ``model_id``, ``max_concurrency``, ``request_rate``,
  ``completed``, ``total_input_tokens``, ``total_output_tokens``, ``duration``, ``request_throughput``,
  ``output_throughput``, ``total_token_throughput``, ``mean_ttft_ms``, ``median_ttft_ms``, ``p90_ttft_ms``,
  ``p99_ttft_ms`` and the same for ``tpot`` and ``itl``.
* SGLang ``python -m sglang.bench_serving --output-file``: JSON Lines, one run per line, the same metric keys and
  ``total_throughput``, ``mean_e2e_latency_ms``, ``random_input_len``, ``total_output_tokens_retokenized`` (which
  tell it from vLLM's); the model from ``server_info.model_path`` where the line has it.
* NVIDIA AIPerf ``profile_export_aiperf.json`` (and genai-perf's ``profile_export_genai_perf.json``, the same
  family): each metric an object ``{"unit", "avg", "p50", "p90", "p99", ...}``: ``time_to_first_token``,
  ``inter_token_latency`` (per request (latency - TTFT) / (output tokens - 1): what vLLM and SGLang call TPOT),
  ``inter_chunk_latency`` (the gap between streamed chunks: their ITL), ``request_throughput``,
  ``output_token_throughput``, ``total_token_throughput``, ``input_sequence_length``, ``output_sequence_length``,
  ``request_count``, ``benchmark_duration``; the concurrency or Poisson rate from ``input_config``
  (``phases[profiling]``: ``concurrency`` or ``rate``; before AIPerf 0.6 ``loadgen``; genai-perf
  ``perf_analyzer.stimulus``, earlier the top level; the model from ``models``, ``endpoint.model_names``,
  ``model_names`` or ``model``). Sources: AIPerf ``docs/metrics_reference.md`` and
  ``docs/tutorials/working-with-profile-exports.md``.

Bounds: at most :data:`MAX_FILE_BYTES` bytes and :data:`MAX_RUNS` runs; every number finite, >= 0 and at most
10^12 (NaN, which the tools write for a metric they could not measure, reads as absent; an infinite request
rate means every request was sent at once). A bad file raises ValueError naming the line and the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from core._util.checks import is_number

__all__ = ["ACCEPTED_FORMATS", "MAX_FILE_BYTES", "MAX_RUNS", "TOOLS", "BenchResult", "parse_bench_results"]

TOOLS = {"vllm-bench-serve": "vLLM bench serve", "sglang-bench-serving": "SGLang bench_serving", "aiperf": "AIPerf"}
MAX_FILE_BYTES = 20_000_000
MAX_RUNS = 10_000
MAX_VALUE = 1e12
ACCEPTED_FORMATS = (
    "vLLM `vllm bench serve --save-result` JSON, SGLang `python -m sglang.bench_serving --output-file` JSON Lines, "
    "or NVIDIA AIPerf `profile_export_aiperf.json`"
)
_STATS = ("mean", "median", "p90", "p99")
_SGLANG_KEYS = ("total_output_tokens_retokenized", "mean_e2e_latency_ms", "median_e2e_latency_ms", "random_input_len")
_VLLM_KEYS = ("mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms", "output_throughput", "request_throughput")
_AIPERF_KEYS = ("time_to_first_token", "inter_token_latency", "request_throughput", "output_token_throughput")
_TIME_UNITS = {"ms": 1.0, "s": 1e3, "sec": 1e3, "us": 1e-3, "ns": 1e-6}


@dataclass(frozen=True)
class BenchResult:
    """One benchmark run as its file states it (None where the file does not say). Latencies in ms: TTFT, TPOT
    (per request, the first token excluded) and ITL (the gap between streamed chunks), each as the mean, median,
    90th and 99th percentile over requests; rates per second of the whole server."""

    tool: str  # a key of TOOLS
    line: int  # the run's line in the file (1 for a one-object file)
    model: str | None
    tokenizer: str | None
    date: str | None
    concurrency: int | None  # clients at most in flight (max_concurrency)
    request_rate_per_s: float | None  # Poisson arrival rate; None: all at once or not stated
    completed: int | None
    mean_input_tokens: float | None
    mean_output_tokens: float | None
    duration_s: float | None
    requests_per_s: float | None
    output_tokens_per_s: float | None
    total_tokens_per_s: float | None
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    p90_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    median_tpot_ms: float | None = None
    p90_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    mean_itl_ms: float | None = None
    median_itl_ms: float | None = None
    p90_itl_ms: float | None = None
    p99_itl_ms: float | None = None

    def latency_ms(self, metric: str) -> float | None:
        """The mean of ``metric`` ("ttft", "tpot" or "itl"), else its median, else None."""
        if metric not in ("ttft", "tpot", "itl"):
            raise ValueError(f"metric must be 'ttft', 'tpot' or 'itl', got {str(metric)[:20]!r}")
        mean = getattr(self, f"mean_{metric}_ms")
        return mean if mean is not None else getattr(self, f"median_{metric}_ms")

    @property
    def label(self) -> str:
        """'AIPerf, line 1: 8 concurrent, 467 in / 228 out tokens' (what the run is, in a few words)."""
        load = (
            f"{self.concurrency:,} concurrent"
            if self.concurrency is not None
            else (f"{self.request_rate_per_s:g} requests/s" if self.request_rate_per_s is not None else "all at once")
        )
        lengths = (
            f", {self.mean_input_tokens:,.0f} in / {self.mean_output_tokens:,.0f} out tokens"
            if self.mean_input_tokens is not None and self.mean_output_tokens is not None
            else ""
        )
        return f"{TOOLS[self.tool]}, line {self.line}: {load}{lengths}"


def _shown(v) -> str:
    return repr(v if not isinstance(v, str) or len(v) <= 40 else v[:40] + "...")


def _number(where: str, key: str, v, *, whole: bool = False):
    """``v`` as a float (``whole``: an int) or None (absent, null or NaN); a ValueError naming ``key`` otherwise."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if not (is_number(v) and 0 <= v <= MAX_VALUE):
        if is_number(v) and v > MAX_VALUE:
            raise ValueError(f"{where}{key} must be a number from 0 to {MAX_VALUE:g}, got {_shown(v)}")
        raise ValueError(f"{where}{key} must be a number >= 0, got {_shown(v)}")
    if whole:
        if float(v) != int(v):
            raise ValueError(f"{where}{key} must be a whole number, got {_shown(v)}")
        return int(v)
    return float(v)


def _text(where: str, key: str, v) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise ValueError(f"{where}{key} must be text, got {_shown(v)}")
    return v.strip()[:200] or None


def _rate(where: str, key: str, v) -> float | None:
    """A request rate: a number > 0, or "inf" / Infinity (every request at once: None)."""
    if v is None or (isinstance(v, str) and v.strip().lower() in ("inf", "infinity")):
        return None
    if isinstance(v, float) and math.isinf(v) and v > 0:
        return None
    r = _number(where, key, v)
    return None if r is None or r == 0 else r


def _concurrency(where: str, key: str, v) -> int | None:
    c = _number(where, key, v, whole=True)
    if c is not None and not 1 <= c <= 10_000_000:
        raise ValueError(f"{where}{key} must be a whole number from 1 to 10,000,000, got {_shown(v)}")
    return c


def _per_request(total, completed) -> float | None:
    return total / completed if total is not None and completed else None


def _flat(obj: dict, tool: str, line: int) -> BenchResult:
    """A vLLM or SGLang run (one flat JSON object)."""
    where = f"line {line}: "
    n = {k: _number(where, k, obj.get(k)) for k in ("duration", "request_throughput", "output_throughput")}
    completed = _number(where, "completed", obj.get("completed"), whole=True)
    tin = _number(where, "total_input_tokens", obj.get("total_input_tokens"))
    tout = _number(where, "total_output_tokens", obj.get("total_output_tokens"))
    total_key = "total_token_throughput" if tool == "vllm-bench-serve" else "total_throughput"
    lat = {
        f"{s}_{m}_ms": _number(where, f"{s}_{m}_ms", obj.get(f"{s}_{m}_ms"))
        for s in _STATS
        for m in ("ttft", "tpot", "itl")
    }
    info = obj.get("server_info") if isinstance(obj.get("server_info"), dict) else {}
    model = obj.get("model_id") if tool == "vllm-bench-serve" else info.get("model_path", obj.get("model_id"))
    tokenizer = obj.get("tokenizer_id") if tool == "vllm-bench-serve" else info.get("tokenizer_path")
    return BenchResult(
        tool=tool,
        line=line,
        model=_text(where, "model_id" if tool == "vllm-bench-serve" else "server_info.model_path", model),
        tokenizer=_text(
            where, "tokenizer_id" if tool == "vllm-bench-serve" else "server_info.tokenizer_path", tokenizer
        ),
        date=_text(where, "date", obj.get("date")),
        concurrency=_concurrency(where, "max_concurrency", obj.get("max_concurrency")),
        request_rate_per_s=_rate(where, "request_rate", obj.get("request_rate")),
        completed=completed,
        mean_input_tokens=_per_request(tin, completed),
        mean_output_tokens=_per_request(tout, completed),
        duration_s=n["duration"],
        requests_per_s=n["request_throughput"],
        output_tokens_per_s=n["output_throughput"],
        total_tokens_per_s=_number(where, total_key, obj.get(total_key)),
        **lat,
    )


def _metric(obj: dict, key: str, stat: str, *, time: bool = False) -> float | None:
    """AIPerf's ``obj[key][stat]`` (in ms when ``time``), or None when the file lacks it."""
    m = obj.get(key)
    if m is None:
        return None
    if not isinstance(m, dict):
        raise ValueError(f"{key} must be an object with 'unit' and 'avg', got {_shown(m)}")
    v = _number("", f"{key}.{stat}", m.get(stat))
    if v is None or not time:
        return v
    unit = m.get("unit", "ms")
    if unit not in _TIME_UNITS:
        raise ValueError(f"{key}.unit must be one of {', '.join(_TIME_UNITS)}, got {_shown(unit)}")
    return v * _TIME_UNITS[unit]


def _first_name(v) -> str | None:
    """The first name of a list (genai-perf's ``model``), or the text itself."""
    if isinstance(v, list) and v:
        v = v[0]
    if isinstance(v, dict):
        v = v.get("name")
    return v if isinstance(v, str) else None


def _aiperf_config(cfg: dict) -> tuple[str | None, str | None, object, object]:
    """(model, tokenizer, concurrency, request rate) from an AIPerf / genai-perf ``input_config``, as written."""
    models = cfg.get("models")
    endpoint = cfg.get("endpoint") if isinstance(cfg.get("endpoint"), dict) else {}
    model = _first_name(models.get("items")) if isinstance(models, dict) else None
    model = model or _first_name(endpoint.get("model_names")) or _first_name(cfg.get("model_names"))
    model = model or _first_name(cfg.get("model"))
    tok = cfg.get("tokenizer")
    tokenizer = _first_name(tok) if not isinstance(tok, dict) else tok.get("name")
    pa = cfg.get("perf_analyzer") if isinstance(cfg.get("perf_analyzer"), dict) else {}
    load = next(  # AIPerf < 0.6: loadgen; genai-perf: perf_analyzer.stimulus, or (before 2025) the top level
        (d for d in (cfg.get("loadgen"), pa.get("stimulus")) if isinstance(d, dict)), cfg
    )
    conc, rate = load.get("concurrency"), load.get("request_rate")
    phases = cfg.get("phases")
    if isinstance(phases, list):  # AIPerf >= 0.6: the profiling phase's load
        prof = next((p for p in phases if isinstance(p, dict) and p.get("name") == "profiling"), None)
        if prof is not None:
            conc, rate = prof.get("concurrency", conc), prof.get("rate", prof.get("request_rate", rate))
    return model, tokenizer if isinstance(tokenizer, str) else None, conc, rate


def _aiperf(obj: dict) -> BenchResult:
    cfg = obj.get("input_config") if isinstance(obj.get("input_config"), dict) else {}
    model, tokenizer, conc, rate = _aiperf_config(cfg)
    count = _metric(obj, "request_count", "avg")
    duration_ms = _metric(obj, "benchmark_duration", "avg", time=True)
    time = {
        f"{s}_{m}_ms": _metric(obj, key, stat, time=True)
        for s, stat in zip(_STATS, ("avg", "p50", "p90", "p99"), strict=True)
        for m, key in (("ttft", "time_to_first_token"), ("tpot", "inter_token_latency"), ("itl", "inter_chunk_latency"))
    }
    return BenchResult(
        tool="aiperf",
        line=1,
        model=_text("", "input_config.models", model),
        tokenizer=_text("", "input_config.tokenizer", tokenizer),
        date=_text("", "start_time", obj.get("start_time")),
        concurrency=_concurrency("", "input_config concurrency", conc),
        request_rate_per_s=_rate("", "input_config request_rate", rate),
        completed=None if count is None else _number("", "request_count.avg", count, whole=True),
        mean_input_tokens=_metric(obj, "input_sequence_length", "avg"),
        mean_output_tokens=_metric(obj, "output_sequence_length", "avg"),
        duration_s=None if duration_ms is None else duration_ms / 1e3,
        requests_per_s=_metric(obj, "request_throughput", "avg"),
        output_tokens_per_s=_metric(obj, "output_token_throughput", "avg"),
        total_tokens_per_s=_metric(obj, "total_token_throughput", "avg"),
        **time,
    )


def _tool_of(obj: dict) -> str | None:
    """Which tool wrote this JSON object, from its keys; None when none did."""
    if any(isinstance(obj.get(k), dict) for k in _AIPERF_KEYS):
        return "aiperf"
    if any(k in obj for k in _SGLANG_KEYS) or (obj.get("backend") == "sglang" and "date" not in obj):
        return "sglang-bench-serving"
    if any(k in obj for k in _VLLM_KEYS):
        return "vllm-bench-serve"
    return None


def _text_of(data: bytes | str) -> str:
    if isinstance(data, (bytes, bytearray)):
        if len(data) > MAX_FILE_BYTES:
            raise ValueError(f"the file is {len(data):,} bytes; the limit is {MAX_FILE_BYTES:,}")
        try:
            return bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ValueError(f"the file is not UTF-8 text (byte {e.start:,}): expected {ACCEPTED_FORMATS}") from None
    if not isinstance(data, str):
        raise ValueError(f"the result file must be text or bytes, got {type(data).__name__}")
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"the file is {len(data):,} characters; the limit is {MAX_FILE_BYTES:,} bytes")
    return data.removeprefix("\ufeff")


def _loads(text: str, where: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}not JSON ({e.msg} at column {e.colno}): expected {ACCEPTED_FORMATS}") from None
    except RecursionError:
        raise ValueError(f"{where}JSON nested too deeply: expected {ACCEPTED_FORMATS}") from None


def _unknown(where: str, obj) -> ValueError:
    what = "a JSON object" if isinstance(obj, dict) else f"JSON {type(obj).__name__}"
    return ValueError(f"{where}{what} that no benchmark tool wrote: accepted are {ACCEPTED_FORMATS}")


def parse_bench_results(data: bytes | str) -> tuple[BenchResult, ...]:
    """Every run in a result file (see the module docstring), in file order. Raises ValueError naming the line
    and field of the first bad value, or listing the accepted formats when the content is none of them."""
    text = _text_of(data).strip()
    if not text:
        raise ValueError(f"the file is empty: expected {ACCEPTED_FORMATS}")
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if isinstance(whole, dict):  # one object: a vLLM / AIPerf file, or a one-line SGLang file
        tool = _tool_of(whole)
        if tool is None:
            raise _unknown("", whole)
        return (_aiperf(whole),) if tool == "aiperf" else (_flat(whole, tool, 1),)
    if whole is not None and not isinstance(whole, list):
        raise _unknown("", whole)
    if isinstance(whole, list):  # a JSON array of runs (vLLM results gathered by hand)
        rows = list(enumerate(whole, start=1))
    else:
        rows = []
        for n, raw in enumerate(text.splitlines(), start=1):
            if raw.strip():
                if len(rows) >= MAX_RUNS:
                    raise ValueError(f"the file holds more than {MAX_RUNS:,} runs; the limit is {MAX_RUNS:,}")
                rows.append((n, _loads(raw, f"line {n}: ")))
    if len(rows) > MAX_RUNS:
        raise ValueError(f"the file holds {len(rows):,} runs; the limit is {MAX_RUNS:,}")
    out = []
    for n, obj in rows:
        tool = _tool_of(obj) if isinstance(obj, dict) else None
        if tool is None or tool == "aiperf":
            raise _unknown(f"line {n}: ", obj)
        out.append(_flat(obj, tool, n))
    if not out:
        raise ValueError(f"the file holds no run: expected {ACCEPTED_FORMATS}")
    return tuple(out)
