"""The report's launch commands: each engine's command for a plan as copyable code blocks of a report section
(kept apart from ``build`` so the section builder stays short)."""

from __future__ import annotations

from core.deployment.bundle import Deployment
from core.deployment.specs import Scenario
from core.model import ModelSpec
from core.report.section import Section

__all__: list[str] = []  # build_report's helper, not a public API

# what each role's command is, as its label says (review 3 M1): a pool's worker says which pool it needs beside it
ROLE_WORDS = {
    "aggregated": "colocated (aggregated) serving: prefill and decode on the same GPUs",
    "prefill": "the prefill worker of a disaggregated pair (it needs a decode pool)",
    "decode": "the decode worker of a disaggregated pair (it needs a prefill pool: no prompt is computed in its steps)",
}


def launch_code(sec, plan, d: Deployment, role: str) -> list[tuple[str, str]]:
    """The engines' commands for ``plan`` serving deployment ``d`` (:func:`core.serving.plan_commands.plan_commands`)
    as copyable code blocks of ``sec`` (a report ``Section``); returns the LeaderWorkerSet manifests of its
    multi-node commands as (label, YAML)."""
    from core.serving.launch import TRTLLM_YAML
    from core.serving.launch.k8s import lws_manifest
    from core.serving.plan_commands import plan_commands

    try:
        cmds, notes = plan_commands(plan, d, role=role)
    except ValueError as e:  # a layout the engines' commands cannot be written for: the figures stand without them
        sec.notes.append(f"launch commands for {plan.label} left out: {e}")
        return []
    what = ROLE_WORDS[role]
    for engine, c in cmds.items():
        text = c.command + (f"\n\n# {TRTLLM_YAML}\n{c.config_yaml}" if c.config_yaml else "")
        sec.code.append((f"{engine} {c.version}: {plan.label} for {what}", text))
        sec.notes += [f"{engine}: {n}" for n in c.notes]
    sec.notes += notes
    gpus_per_node = d.cluster.gpus_per_node if d.cluster is not None else d.gpu.gpus_per_node
    manifests = [(e, lws_manifest(c, gpus_per_node)) for e, c in cmds.items()]
    return [(f"{e} {cmds[e].version}: {plan.label} for {what}, one replica", m) for e, m in manifests if m]


def kubernetes_section(manifests: list[tuple[str, str]]):
    """A "Kubernetes" report section with the LeaderWorkerSet manifests of the multi-node commands; None if none."""

    if not manifests:
        return None
    sec = Section("Kubernetes")
    sec.code += manifests
    sec.notes.append(
        "LeaderWorkerSet (kubernetes-sigs/lws, leaderworkerset.x-k8s.io/v1): the leader pod runs node 0's command, "
        "the worker pods the others'; HEAD_IP and NODE_RANK come from LWS_LEADER_ADDRESS and LWS_WORKER_INDEX. The "
        "image is the engine release's tag; add the cluster's RDMA network and model storage. TensorRT-LLM's "
        "multi-node server runs under MPI and gets no manifest."
    )
    return sec


def dynamo_recipe(pools, d: Deployment) -> tuple[str, list[str]]:
    """The NVIDIA Dynamo DynamoGraphDeployment for sized pools (:class:`core.serving.disagg.PoolSizing`: its prefill
    and decode plans, each pool whole replicas of its plan's layout) serving ``d``'s model, and the commands' notes;
    raises ValueError where the plans' SGLang commands cannot be written."""
    from core.serving.launch.dynamo import Pool, dynamo_manifest
    from core.serving.plan_commands import plan_commands

    workers, notes = [], []
    for role, plan, gpus in (
        ("prefill", pools.prefill_plan, pools.prefill_gpus),
        ("decode", pools.decode_plan, pools.decode_gpus),
    ):
        cmds, more = plan_commands(plan, d, role=role)
        per_replica = plan.layout.gpus_per_stage * plan.layout.pp
        workers.append(Pool(cmds["sglang"], gpus // per_replica, per_replica))
        notes += [n for n in (*cmds["sglang"].notes, *more) if n not in notes]
    gpus_per_node = d.cluster.gpus_per_node if d.cluster is not None else d.gpu.gpus_per_node
    return dynamo_manifest(workers[0], workers[1], gpus_per_node), notes


def benchmark_section(plans: list, model: ModelSpec, prec, scenario: Scenario):
    """A "Benchmark" report section for the best decode plan (TTFT from the best prefill plan): the three clients'
    commands as code blocks and the planner's predictions for them as figures; None without a decode plan."""
    from core.serving.benchmark import benchmark_commands

    try:
        b = benchmark_commands(plans, model, prec, scenario.workload)
    except ValueError:  # no decode plan: nothing to benchmark (the Layouts section says none fits)
        return None
    sec = Section("Benchmark")
    sec.figures += [(f"Predicted {what}", value) for what, value in b.predicted]
    for tool, command in b.commands.items():
        sec.code.append((f"{tool}: {b.concurrency:,} concurrent, {b.num_prompts:,} requests", command))
    sec.notes += list(b.notes)
    return sec
