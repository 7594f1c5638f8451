"""The benchmark for a plan (core/serving/benchmark.py): vllm bench serve, sglang.bench_serving and AIPerf for the
plan's workload at the concurrency its replica holds, with the planner's figures beside, taken from the plans."""

from __future__ import annotations

import shlex

import pytest

from core.catalog import load_catalog
from core.deployment.specs import ParallelLayout, Workload
from core.serving.benchmark import benchmark_commands
from core.serving.operating_point import Plan

CAT = load_catalog()
DSV3 = CAT.model("deepseek-v3")
LAY = ParallelLayout(attention_dp=8, ep=8)
# S1 of layouts review 3: decode 166 sequences per GPU, 52 ms TPOT, 3,215 tok/s/GPU; prefill TTFT 1.70 s
DECODE = Plan(LAY, "decode", 0, 166.0, 0.052, 3215.0, 0.0, latency_s=0.052)
PREFILL = Plan(LAY, "prefill", 0, 16384.0, 1.7, 9625.0, 1.0, latency_s=1.7)
WL = Workload(input_len=2048, output_len=512)


def args(command: str) -> dict[str, str | None]:
    w = shlex.split(command.replace("\\\n", " "))
    out, i = {}, 0
    while i < len(w):
        if w[i].startswith("--"):
            has_value = i + 1 < len(w) and not w[i + 1].startswith("--")
            out[w[i]] = w[i + 1] if has_value else None
            i += 2 if has_value else 1
        else:
            i += 1
    return out


def test_the_three_tools_run_the_plans_workload_at_its_concurrency():
    b = benchmark_commands([PREFILL, DECODE], DSV3, "fp8", WL)
    # 166 sequences per GPU x 8 GPUs in the replica = 1,328 clients, 5 requests each = 6,640
    assert (b.concurrency, b.num_prompts) == (1328, 6640)
    v = args(b.commands["vllm"])
    assert b.commands["vllm"].startswith("vllm bench serve")
    assert (v["--dataset-name"], v["--random-input-len"], v["--random-output-len"]) == ("random", "2048", "512")
    assert (v["--max-concurrency"], v["--num-prompts"], v["--model"]) == ("1328", "6640", "deepseek-ai/DeepSeek-V3")
    assert "--ignore-eos" in v  # exactly 512 output tokens, as the plan assumes
    s = args(b.commands["sglang"])
    assert b.commands["sglang"].startswith("python -m sglang.bench_serving")
    assert (s["--random-input-len"], s["--random-output-len"], s["--random-range-ratio"]) == ("2048", "512", "1")
    assert (s["--max-concurrency"], s["--num-prompts"]) == ("1328", "6640")
    a = args(b.commands["aiperf"])
    assert b.commands["aiperf"].startswith("aiperf profile")
    assert (a["--synthetic-input-tokens-mean"], a["--output-tokens-mean"], a["--concurrency"]) == (
        "2048",
        "512",
        "1328",
    )
    assert (a["--synthetic-input-tokens-stddev"], a["--output-tokens-stddev"], a["--request-count"]) == (
        "0",
        "0",
        "6640",
    )


def test_the_planners_figures_are_printed_beside_from_the_plans():
    b = benchmark_commands([PREFILL, DECODE], DSV3, "fp8", WL)
    p = dict(b.predicted)
    assert p["output tokens/s per GPU"] == "3,215"
    assert p["output tokens/s for the replica"] == "25,720"  # 3,215 x 8
    assert p["TPOT"] == "52.0 ms" and p["TTFT"] == "1,700 ms (DP-attn8 · EP8)"
    assert any("decode pool" in n for n in b.notes)
    alone = dict(benchmark_commands([DECODE], DSV3, "fp8", WL).predicted)
    assert alone["TTFT"] == "no prefill plan given"


def test_another_concurrency_and_the_checkpoint_of_the_precision():
    b = benchmark_commands([DECODE], CAT.model("qwen3-235b-a22b"), "fp8", WL, concurrency=64)
    assert (b.concurrency, b.num_prompts) == (64, 320)
    assert args(b.commands["vllm"])["--model"] == "Qwen/Qwen3-235B-A22B-FP8"  # the served checkpoint's name
    assert any("for 1,328 concurrent sequences, not the 64 asked for" in n for n in b.notes)
    reuse = benchmark_commands([DECODE], DSV3, "fp8", Workload(prefix_reuse=0.5))
    assert any("50% of each prompt" in n for n in reuse.notes)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: benchmark_commands([PREFILL], DSV3, "fp8", WL), "needs the decode plan"),
        (lambda: benchmark_commands([DECODE], DSV3, "fp8", WL, concurrency=0), "concurrency must be a whole number"),
        (lambda: benchmark_commands("plans", DSV3, "fp8", WL), "plans must be a list"),
        (lambda: benchmark_commands([DECODE], DSV3, "fp8", {"input_len": 1}), "workload must be a Workload"),
    ],
)
def test_bad_input_is_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_the_cli_prints_the_benchmark_with_the_predictions(capsys):
    import json

    import cli.main as cli

    assert cli.main(["--url", "model=deepseek-v3&gpu=h200&nodes=1&gpn=8&w=fp8", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    bench = next(s for s in data["sections"] if s["title"] == "Benchmark")
    labels = [c["label"] for c in bench["code"]]
    assert [lbl.split(":")[0] for lbl in labels] == ["vllm", "sglang", "aiperf"]
    figures = bench["figures"]  # label -> value
    best = next(s for s in data["sections"] if s["title"] == "Layouts")["figures"]["Best decode layout"]
    # the same plan's figure, copied: "DP-attn8 · EP8 (...): 3,215 tokens/s per GPU at 166 per GPU, TPOT 52 ms"
    assert f"{figures['Predicted output tokens/s per GPU']} tokens/s per GPU" in best
    assert figures["Predicted TPOT"].endswith(" ms")
    assert figures["Predicted concurrency (sequences one replica holds)"].startswith("1,328 on 8 GPUs")
    assert bench["code"][0]["text"].startswith("vllm bench serve")
