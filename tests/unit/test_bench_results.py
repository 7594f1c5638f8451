"""Benchmark result files (issue 36, calibration): the published fixtures parse, every number read is the one in
the file (copied here by eye from tests/fixtures/bench_results/), the format is told from the content, and every
malformed file gets a message naming the line and the field."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from core.validation.bench_results import MAX_FILE_BYTES, MAX_RUNS, BenchResult, parse_bench_results

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench_results"
VLLM_32 = FIXTURES / "vllm_qwen3.5-397b-a17b-fp8_4xb300_conc32.json"
VLLM_4 = FIXTURES / "vllm_qwen3.5-397b-a17b-fp8_4xb300_conc4.json"
SGLANG_DSV2 = FIXTURES / "sglang_deepseek-v2_8xh200_dp-attention.jsonl"
SGLANG_QWEN = FIXTURES / "sglang_qwen2.5-3b_gh200_c32.jsonl"
AIPERF = FIXTURES / "aiperf_qwen3.6-35b-a3b-nvfp4_rtx5090_c8.json"


def one(path: Path) -> BenchResult:
    runs = parse_bench_results(path.read_bytes())
    assert len(runs) == 1
    return runs[0]


def test_every_fixture_parses_and_the_readme_names_it():
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    files = sorted(p for p in FIXTURES.iterdir() if p.suffix in (".json", ".jsonl"))
    assert len(files) == 5
    for p in files:
        assert f"`{p.name}`" in readme, f"{p.name} has no line in the fixtures' README"
        assert parse_bench_results(p.read_bytes()) == parse_bench_results(p.read_text(encoding="utf-8"))


def test_vllm_bench_serve_file():
    r = one(VLLM_32)
    assert r.tool == "vllm-bench-serve" and r.line == 1
    assert r.model == "Qwen/Qwen3.5-397B-A17B-FP8" and r.tokenizer == "Qwen/Qwen3.5-397B-A17B-FP8"
    assert r.date == "20260521-110938"
    assert r.concurrency == 32  # "max_concurrency": 32
    assert r.request_rate_per_s is None  # "request_rate": "inf": every request at once, up to the concurrency
    assert r.completed == 320
    assert r.mean_input_tokens == pytest.approx(243523 / 320)  # "total_input_tokens": 243523 -> 761.0
    assert r.mean_output_tokens == pytest.approx(247114 / 320)  # "total_output_tokens": 247114 -> 772.2
    assert r.duration_s == pytest.approx(158.58778414099652)
    assert r.requests_per_s == pytest.approx(2.0178098945849183)
    assert r.output_tokens_per_s == pytest.approx(1558.21585715768)
    assert r.total_tokens_per_s == pytest.approx(3093.7881039045647)  # "total_token_throughput"
    assert (r.mean_ttft_ms, r.median_ttft_ms, r.p90_ttft_ms, r.p99_ttft_ms) == pytest.approx(
        (360.7508340813638, 289.63656200357946, 589.9551944050487, 1063.6887158044556)
    )
    assert (r.mean_tpot_ms, r.median_tpot_ms, r.p90_tpot_ms, r.p99_tpot_ms) == pytest.approx(
        (19.356447679888333, 19.85758694772631, 20.811107079672205, 21.950052742178613)
    )
    # --stream-interval 50: the "ITL" is a gap between chunks of ~50 tokens
    assert (r.mean_itl_ms, r.p99_itl_ms) == pytest.approx((939.5743293576141, 1482.7934170598746))
    assert r.latency_ms("tpot") == r.mean_tpot_ms
    assert one(VLLM_4).concurrency == 4 and one(VLLM_4).mean_tpot_ms == pytest.approx(10.089923180839737)


def test_old_sglang_line_without_tpot():
    r = one(SGLANG_DSV2)
    assert r.tool == "sglang-bench-serving"
    assert r.model is None and r.date is None  # the line names neither
    assert r.concurrency is None and r.request_rate_per_s is None  # "request_rate": Infinity, "max_concurrency": null
    assert r.completed == 10000
    assert (r.mean_input_tokens, r.mean_output_tokens) == (1.0, 512.0)  # 10,000 and 5,120,000 tokens over 10,000
    assert r.output_tokens_per_s == pytest.approx(12412.394674113431)
    assert r.duration_s == pytest.approx(412.49091206211597)
    assert r.requests_per_s is None and r.total_tokens_per_s is None  # not in the line: not derived
    assert r.mean_ttft_ms is None and r.median_ttft_ms == pytest.approx(10014.104524045251)
    assert r.latency_ms("ttft") == pytest.approx(10014.104524045251)  # the median where there is no mean
    assert r.mean_tpot_ms is None and r.median_tpot_ms is None and r.latency_ms("tpot") is None
    assert r.median_itl_ms == pytest.approx(371.844899491407)
    assert r.label == "SGLang bench_serving, line 1: all at once, 1 in / 512 out tokens"


def test_modern_sglang_line_with_server_info():
    r = one(SGLANG_QWEN)
    assert r.tool == "sglang-bench-serving"
    assert r.model == "Qwen/Qwen2.5-3B-Instruct"  # server_info.model_path
    assert r.concurrency == 32 and r.completed == 100
    assert r.mean_input_tokens == pytest.approx(264.97)  # 26,497 / 100
    assert r.mean_output_tokens == pytest.approx(61.8)  # 6,180 / 100
    assert r.requests_per_s == pytest.approx(50.994166522128666)
    assert r.total_tokens_per_s == pytest.approx(16663.363794435983)  # SGLang's "total_throughput"
    assert r.mean_ttft_ms == pytest.approx(42.448918260633945)
    assert r.mean_tpot_ms == pytest.approx(8.54356980120356)
    assert r.p90_tpot_ms is None  # the line has p99 but no p90
    assert r.p99_itl_ms == pytest.approx(40.0333565287292)


def test_aiperf_profile_export():
    r = one(AIPERF)
    assert r.tool == "aiperf"
    assert r.model == "qwen3.6-nvfp4" and r.tokenizer == "nvidia/Qwen3.6-35B-A3B-NVFP4"
    assert r.concurrency == 8  # input_config.phases, the "profiling" phase (the warm-up's 8 too)
    assert r.completed == 96  # request_count.avg 96.0
    assert r.mean_input_tokens == pytest.approx(467.4791666666667)  # input_sequence_length.avg
    assert r.mean_output_tokens == pytest.approx(228.23958333333334)  # output_sequence_length.avg
    assert r.duration_s == pytest.approx(28.472207654)  # benchmark_duration.avg, unit "sec"
    assert r.requests_per_s == pytest.approx(3.371709042256622)
    assert r.output_tokens_per_s == pytest.approx(769.5574669258838)
    assert r.total_tokens_per_s == pytest.approx(2345.761200242474)
    assert (r.mean_ttft_ms, r.median_ttft_ms, r.p90_ttft_ms, r.p99_ttft_ms) == pytest.approx(
        (118.05834635416667, 117.341231, 183.6836095, 232.26584434999972)
    )
    # inter_token_latency: per request (latency - TTFT) / (output - 1), i.e. TPOT
    assert (r.mean_tpot_ms, r.p99_tpot_ms) == pytest.approx((9.05019651281432, 12.464237606587835))
    # inter_chunk_latency: the gap between streamed chunks, i.e. ITL
    assert (r.mean_itl_ms, r.median_itl_ms) == pytest.approx((9.119257582828839, 7.00159766616051))
    assert r.date == "2026-07-03T04:19:39.807147"


def test_older_aiperf_layout_and_seconds():
    """AIPerf before 0.6 kept the load under input_config.loadgen and the model under endpoint.model_names; a
    latency in seconds is converted to ms."""
    doc = json.loads(AIPERF.read_text())
    doc["input_config"] = {"endpoint": {"model_names": ["openai/gpt-oss-20b"]}, "loadgen": {"concurrency": 100}}
    doc["time_to_first_token"] = {"unit": "s", "avg": 0.25}
    r = parse_bench_results(json.dumps(doc))[0]
    assert r.model == "openai/gpt-oss-20b" and r.concurrency == 100
    assert r.mean_ttft_ms == pytest.approx(250.0)


def test_genai_perf_layouts():
    """genai-perf's profile_export_genai_perf.json: the same metric objects; its input_config names the model under
    model_names (or model) and the load under perf_analyzer.stimulus (or, before, at the top level)."""
    doc = json.loads(AIPERF.read_text())
    doc["input_config"] = {"model_names": ["m-new"], "perf_analyzer": {"stimulus": {"concurrency": 32}}}
    r = parse_bench_results(json.dumps(doc))[0]
    assert (r.tool, r.model, r.concurrency) == ("aiperf", "m-new", 32)
    doc["input_config"] = {"model": ["m-old"], "concurrency": 16, "request_rate": None}
    r = parse_bench_results(json.dumps(doc))[0]
    assert (r.model, r.concurrency) == ("m-old", 16)


def test_aiperf_poisson_phase_gives_the_rate():
    """AIPerf 0.10's open loop (the same repository's chatbot/r0.8 run): a "poisson" profiling phase with "rate"."""
    doc = json.loads(AIPERF.read_text())
    doc["input_config"]["phases"] = [
        {"name": "warmup", "type": "poisson", "exclude_from_results": True, "requests": 16, "rate": 0.8},
        {"name": "profiling", "type": "poisson", "requests": 96, "rate": 0.8},
    ]
    r = parse_bench_results(json.dumps(doc))[0]
    assert r.concurrency is None and r.request_rate_per_s == 0.8


def test_format_is_told_from_the_content():
    vllm, sglang = VLLM_32.read_text(), SGLANG_QWEN.read_text().strip()
    # vLLM --append-result: one object per line
    runs = parse_bench_results(vllm + "\n" + VLLM_4.read_text() + "\n")
    assert [(r.tool, r.line, r.concurrency) for r in runs] == [("vllm-bench-serve", 1, 32), ("vllm-bench-serve", 2, 4)]
    # SGLang appends a line per run; blank lines are skipped, the line numbers are the file's
    runs = parse_bench_results(SGLANG_DSV2.read_text() + "\n" + sglang + "\n")
    assert [(r.tool, r.line, r.concurrency) for r in runs] == [
        ("sglang-bench-serving", 1, None),
        ("sglang-bench-serving", 3, 32),
    ]
    # a JSON array of vLLM results, and a byte-order mark
    runs = parse_bench_results(("\ufeff[" + vllm + "," + VLLM_4.read_text() + "]").encode())
    assert [r.concurrency for r in runs] == [32, 4]


def test_nan_is_absent_and_a_rate_is_kept():
    doc = json.loads(VLLM_32.read_text())
    doc.update(mean_tpot_ms=float("nan"), request_rate=2.5, max_concurrency=None)
    r = parse_bench_results(json.dumps(doc))[0]
    assert r.mean_tpot_ms is None and r.request_rate_per_s == 2.5 and r.concurrency is None
    assert r.label.startswith("vLLM bench serve, line 1: 2.5 requests/s")


def _with(path: Path, **changes) -> str:
    doc = json.loads(path.read_text())
    doc.update(changes)
    return json.dumps(doc)


@pytest.mark.parametrize(
    "text,message",
    [
        (_with(VLLM_32, mean_tpot_ms="abc"), "line 1: mean_tpot_ms must be a number >= 0, got 'abc'"),
        (_with(VLLM_32, completed=-1), "line 1: completed must be a number >= 0, got -1"),
        (_with(VLLM_32, completed=2.5), "line 1: completed must be a whole number, got 2.5"),
        (_with(VLLM_32, max_concurrency=0), "line 1: max_concurrency must be a whole number from 1"),
        (_with(VLLM_32, mean_ttft_ms=float("inf")), "line 1: mean_ttft_ms must be a number >= 0, got inf"),
        (_with(VLLM_32, output_throughput=1e13), "line 1: output_throughput must be a number from 0 to 1e+12"),
        (_with(VLLM_32, model_id=5), "line 1: model_id must be text, got 5"),
        (_with(VLLM_32, request_rate="fast"), "line 1: request_rate must be a number >= 0, got 'fast'"),
        (_with(AIPERF, time_to_first_token={"unit": "ms", "avg": "x"}), "time_to_first_token.avg must be a number"),
        (_with(AIPERF, time_to_first_token={"unit": "fortnights", "avg": 1}), "time_to_first_token.unit must be"),
        (_with(AIPERF, inter_token_latency=5), "inter_token_latency must be an object with 'unit' and 'avg'"),
    ],
)
def test_a_bad_value_names_its_field(text, message):
    with pytest.raises(ValueError) as e:
        parse_bench_results(text)
    assert message in str(e.value)


def test_a_bad_line_names_its_number():
    good = SGLANG_QWEN.read_text().strip()
    bad = json.loads(good)
    bad["mean_tpot_ms"] = "abc"
    with pytest.raises(ValueError, match=r"^line 3: mean_tpot_ms must be a number >= 0, got 'abc'$"):
        parse_bench_results("\n".join([good, good, json.dumps(bad)]))
    with pytest.raises(ValueError, match=r"^line 2: not JSON"):
        parse_bench_results(good + "\n{not json\n")
    with pytest.raises(ValueError, match=r"^line 2: JSON list that no benchmark tool wrote"):
        parse_bench_results(good + "\n[1, 2]\n")


@pytest.mark.parametrize("text", ['{"hello": 1}', "just text", "null", "[]", '{"a": 1}\n{"b": 2}'])
def test_an_unknown_format_lists_the_three_accepted(text):
    with pytest.raises(ValueError) as e:
        parse_bench_results(text)
    msg = str(e.value)
    assert "vllm bench serve" in msg and "sglang.bench_serving" in msg and "profile_export_aiperf.json" in msg


def test_bounds_on_size_runs_and_encoding():
    with pytest.raises(ValueError, match="the file is empty"):
        parse_bench_results(b"  \n ")
    with pytest.raises(ValueError, match="not UTF-8 text"):
        parse_bench_results(b'{"x": "\xff"}')
    with pytest.raises(ValueError, match=f"the limit is {MAX_FILE_BYTES:,}"):
        parse_bench_results(b" " * (MAX_FILE_BYTES + 1))
    line = json.dumps({"backend": "sglang", "random_input_len": 1, "completed": 1})
    assert len(parse_bench_results("\n".join([line] * MAX_RUNS))) == MAX_RUNS
    with pytest.raises(ValueError, match="more than 10,000 runs"):
        parse_bench_results("\n".join([line] * (MAX_RUNS + 1)))
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_bench_results("[" * 100_000)
    with pytest.raises(ValueError, match="must be text or bytes"):
        parse_bench_results(5)


def test_latency_metric_name_is_checked():
    r = one(VLLM_32)
    with pytest.raises(ValueError, match="metric must be 'ttft', 'tpot' or 'itl'"):
        r.latency_ms("e2e")
    assert replace(r, mean_tpot_ms=None).latency_ms("tpot") == pytest.approx(19.85758694772631)  # the median
