"""The benchmark that checks a plan: ``vllm bench serve``, ``python -m sglang.bench_serving`` and AIPerf for the
plan's workload (random prompts of the workload's input length, exactly its output length) at the concurrency the
plan holds, with the planner's own predictions for it printed beside (taken from the plans as given: nothing is
recomputed here).

Flags: ``vllm bench serve`` --dataset-name random --random-input-len --random-output-len --max-concurrency
--num-prompts --ignore-eos (vLLM's benchmark CLI, as the vLLM recipes run it); ``sglang.bench_serving`` the same
with --random-range-ratio 1 (exact lengths; docs.sglang.io developer_guide/bench_serving.md); ``aiperf profile``
--synthetic-input-tokens-mean/-stddev, --output-tokens-mean/-stddev, --concurrency, --request-count, --streaming
(NVIDIA/TensorRT-LLM examples/serve/aiperf_client.sh, docs.nvidia.com/aiperf).
"""

from __future__ import annotations

from dataclasses import dataclass

from core._util.checks import whole
from core.deployment.specs import Precision, Workload
from core.model import ModelSpec
from core.serving.launch.checkpoints import REPO_ID, checkpoint_for
from core.serving.operating_point import Plan

__all__ = ["BENCH_TOOLS", "PROMPTS_PER_CLIENT", "Benchmark", "benchmark_commands"]

BENCH_TOOLS = ("vllm", "sglang", "aiperf")
PROMPTS_PER_CLIENT = 5  # requests each concurrent client sends: the steady state outweighs the ramp up and down
_CONT = " \\\n  "


@dataclass(frozen=True)
class Benchmark:
    commands: dict[str, str]  # tool -> shell command
    concurrency: int
    num_prompts: int
    predicted: tuple[tuple[str, str], ...]  # (what, the planner's figure with its unit)
    notes: tuple[str, ...]


def _render(head: str, args: list[tuple[str, str | None]]) -> str:
    return _CONT.join([head, *(f if v is None else f"{f} {v}" for f, v in args)])


def benchmark_commands(
    plans: list[Plan],
    model: ModelSpec,
    precision: Precision | str,
    workload: Workload,
    *,
    concurrency: int | None = None,
) -> Benchmark:
    """The three tools' commands for the decode plan among ``plans`` (a prefill plan among them gives the TTFT), at
    ``concurrency`` clients (default: the sequences one replica holds at the decode plan's operating point)."""
    if not isinstance(plans, (list, tuple)) or not all(isinstance(p, Plan) for p in plans):
        raise ValueError("plans must be a list of layout Plans")
    if not isinstance(workload, Workload):
        raise ValueError(f"workload must be a Workload, got {type(workload).__name__}")
    decode = next((p for p in plans if p.phase == "decode"), None)
    prefill = next((p for p in plans if p.phase == "prefill"), None)
    if decode is None:
        raise ValueError("a benchmark needs the decode plan: none was given")
    held = max(1, int(decode.sequences_per_replica + 1e-9))  # sequences one replica holds in the plan
    c = held if concurrency is None else whole("concurrency", concurrency, 1, 1_000_000)
    n = c * PROMPTS_PER_CLIENT
    mid, isl, osl = checkpoint_for(model, precision).model_id, workload.input_len, workload.output_len
    mid = mid if REPO_ID.fullmatch(mid or "") else "path/to/model"  # only a safe word reaches the shell
    random_args = [("--dataset-name", "random"), ("--random-input-len", str(isl)), ("--random-output-len", str(osl))]
    load = [("--max-concurrency", str(c)), ("--num-prompts", str(n))]
    vllm = [("--backend", "vllm"), ("--host", '"$HOST"'), ("--port", "8000"), ("--model", mid), *random_args]
    sglang = [("--backend", "sglang"), ("--host", '"$HOST"'), ("--port", "30000"), ("--model", mid), *random_args]
    aiperf = [
        ("--model", mid),
        ("--url", '"$HOST:8000"'),
        ("--endpoint-type", "chat"),
        ("--streaming", None),
        ("--synthetic-input-tokens-mean", str(isl)),
        ("--synthetic-input-tokens-stddev", "0"),
        ("--output-tokens-mean", str(osl)),
        ("--output-tokens-stddev", "0"),
        ("--concurrency", str(c)),
        ("--request-count", str(n)),
    ]
    commands = {
        "vllm": _render("vllm bench serve", [*vllm, *load, ("--ignore-eos", None)]),
        "sglang": _render("python -m sglang.bench_serving", [*sglang, ("--random-range-ratio", "1"), *load]),
        "aiperf": _render("aiperf profile", aiperf),
    }
    gpus = decode.replica_gpus
    predicted = [
        ("concurrency (sequences one replica holds)", f"{held:,} on {gpus:,} GPUs ({decode.label})"),
        ("output tokens/s per GPU", f"{decode.tokens_per_s_per_gpu:,.0f}"),
        ("output tokens/s for the replica", f"{decode.tokens_per_s_per_gpu * gpus:,.0f}"),
        ("TPOT", f"{decode.latency_s * 1e3:,.1f} ms"),
        ("TTFT", f"{prefill.latency_s * 1e3:,.0f} ms ({prefill.label})" if prefill else "no prefill plan given"),
    ]
    notes = [
        f"Run against one replica ({gpus:,} GPUs) with HOST set to its address: {n:,} requests of {isl:,} random "
        f"input tokens and exactly {osl:,} output tokens, {c:,} at a time ({PROMPTS_PER_CLIENT} per client).",
        "The planner's throughput and TPOT are the decode pool's: steps with no prefill in them. On an aggregated "
        "server the prompts' prefill shares the GPUs, so the measured output tokens/s there is lower; a disaggregated "
        "pair (the prefill and decode workers above) is what the figures describe.",
    ]
    if c != held:
        notes.append(
            f"The predictions are for {held:,} concurrent sequences, not the {c:,} asked for (not recomputed)."
        )
    if workload.prefix_reuse:
        notes.append(
            f"The plan assumed {workload.prefix_reuse:.0%} of each prompt served from a prefix cache; random prompts "
            "share no prefix, so the benchmark's TTFT is for cold prompts."
        )
    return Benchmark(commands, c, n, tuple(predicted), tuple(notes))
