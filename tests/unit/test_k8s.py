"""Kubernetes LeaderWorkerSet manifests for one multi-node replica (core/serving/launch/k8s.py), validated against
the LeaderWorkerSet CRD's schema as far as the manifests use it (catalogs/k8s/leaderworkerset.schema.yaml, read from
kubernetes-sigs/lws), their pods' commands parsed with the engines' argument rules and by bash."""

from __future__ import annotations

import copy
import shlex
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from core.catalog import load_catalog
from core.report import build_report
from core.scenario import scenario_from_params
from core.serving.launch import LaunchSpec, launch_commands
from core.serving.launch.argcheck import check_command
from core.serving.launch.k8s import lws_manifest

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = yaml.safe_load((ROOT / "catalogs" / "k8s" / "leaderworkerset.schema.yaml").read_text())
CAT = load_catalog()

SPECS = [  # (spec, nodes)
    (LaunchSpec("deepseek-ai/DeepSeek-V3", attention_dp=16, ep=16, role="decode"), 2),  # vLLM DP over 2 nodes
    (LaunchSpec("deepseek-ai/DeepSeek-V3", attention_dp=32, ep=32, role="prefill"), 4),  # NODE_RANK from LWS
    (LaunchSpec("deepseek-ai/DeepSeek-V3", attention_tp=8, ep=8, pp=2), 2),  # vLLM --nnodes, SGLang PP
]


def validate(manifest: str) -> dict:
    doc = yaml.safe_load(manifest)
    jsonschema.validate(doc, SCHEMA)
    return doc


def script(pod: dict) -> str:
    return pod["spec"]["containers"][0]["args"][0]


@pytest.mark.parametrize("spec, nodes", SPECS)
def test_one_replica_is_a_leader_and_its_workers(spec, nodes):
    cmds = launch_commands(spec)
    for engine in ("vllm", "sglang"):
        doc = validate(lws_manifest(cmds[engine], 8))
        lwt = doc["spec"]["leaderWorkerTemplate"]
        assert doc["spec"]["replicas"] == 1 and lwt["size"] == nodes  # one pod per node
        leader, worker = script(lwt["leaderTemplate"]), script(lwt["workerTemplate"])
        for pod in (lwt["leaderTemplate"], lwt["workerTemplate"]):
            assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
            assert script(pod).startswith('export HEAD_IP="$LWS_LEADER_ADDRESS" NODE_RANK="$LWS_WORKER_INDEX"\n')
        # the leader runs node 0's command and is not headless; a worker of a 2-node replica runs node 1's
        assert "--headless" not in leader
        if engine == "sglang":
            assert "--node-rank 0 " in leader
            assert ("--node-rank 1 " if nodes == 2 else '--node-rank "$NODE_RANK"') in worker
        for text in (leader, worker):  # the command itself, under the engine's argument rules
            assert check_command(engine, text.split("\n", 1)[1]) == []


def test_single_node_and_trtllm_get_no_manifest():
    one = launch_commands(LaunchSpec("deepseek-ai/DeepSeek-V3", attention_dp=8, ep=8))
    assert all(lws_manifest(c, 8) is None for c in one.values())
    two = launch_commands(SPECS[0][0])
    assert lws_manifest(two["trtllm"], 8) is None  # MPI-launched, not one command per node


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_pod_scripts_are_valid_bash():
    scripts = []
    for spec, _ in SPECS:
        for c in launch_commands(spec).values():
            m = lws_manifest(c, 8)
            if m:
                lwt = yaml.safe_load(m)["spec"]["leaderWorkerTemplate"]
                scripts += [script(lwt["leaderTemplate"]), script(lwt["workerTemplate"])]
    r = subprocess.run(["bash", "-n"], input="\n".join(scripts), capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_report_prints_a_manifest_for_a_multi_node_plan():
    sc, _ = scenario_from_params({"model": "kimi-k2", "gpu": "h200", "nodes": "2", "gpn": "8", "w": "fp8"}, CAT)
    sec = {s.title: s for s in build_report(sc, CAT, None).sections}.get("Kubernetes")
    assert sec is not None and sec.code
    for label, manifest in sec.code:
        assert label.split(" ")[0] in ("vllm", "sglang")
        validate(manifest)


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("spec", "leaderWorkerTemplate", "restartPolicy"), "Always", "is not one of"),
        (("spec", "leaderWorkerTemplate", "size"), 0, "less than the minimum"),
        (("kind",), "LeaderWorkerSets", "was expected"),
        (("spec", "leaderWorkerTemplate", "workerTemplat"), {}, "Additional properties are not allowed"),
    ],
)
def test_the_schema_catches_a_wrong_field(path, value, message):
    doc = yaml.safe_load(lws_manifest(launch_commands(SPECS[0][0])["sglang"], 8))
    bad = copy.deepcopy(doc)
    node = bad
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError, match=message):
        jsonschema.validate(bad, SCHEMA)
    missing = copy.deepcopy(doc)
    del missing["spec"]["leaderWorkerTemplate"]["workerTemplate"]  # required by the CRD
    with pytest.raises(jsonschema.ValidationError, match="'workerTemplate' is a required property"):
        jsonschema.validate(missing, SCHEMA)


# ------------------------------------------- a disaggregated recipe: NVIDIA Dynamo's DynamoGraphDeployment

DGD_SCHEMA = yaml.safe_load((ROOT / "catalogs" / "k8s" / "dynamographdeployment.schema.yaml").read_text())


def _sized_pools():
    """DeepSeek-V3 FP8 on 4 x 8 H200, 1,800 requests/min of 4,000 in / 2,000 out (30 requests/s): 120,000 prompt
    tokens/s at 8,000 per GPU on DP-attn8 · EP8 (8-GPU replicas) need 15 GPUs, 2 replicas (16 GPUs); 60,000 output
    tokens/s at 2,000 per GPU on DP-attn16 · EP16 (16-GPU replicas, 2 nodes each) need 30 GPUs, 2 replicas (32)."""
    from core.deployment.specs import ParallelLayout
    from core.hardware import ClusterSpec
    from core.serving import disagg
    from core.serving import layout as L
    from tests.unit._search import search

    pre = L.Plan(ParallelLayout(attention_dp=8, ep=8), "prefill", 0, 8192.0, 1.0, 8000.0, 1.0)
    dec = L.Plan(ParallelLayout(attention_dp=16, ep=16), "decode", 0, 128.0, 0.05, 2000.0, 1.0)
    cluster = ClusterSpec(gpu=CAT.gpu("h200"), num_nodes=4, gpus_per_node=8)
    d = search(CAT.model("deepseek-v3"), cluster)
    t = disagg.Traffic(requests_per_min=1800.0, input_len=4000, output_len=2000)
    return disagg.size_pools(d, t, catalog=CAT, plans=(pre, dec), interference=0.0), d


def test_the_dynamo_recipe_runs_the_sized_pools():
    from core.report.commands import dynamo_recipe

    pools, d = _sized_pools()
    assert (pools.prefill_gpus, pools.decode_gpus) == (16, 32)  # the hand sizing above
    manifest, _ = dynamo_recipe(pools, d)
    doc = yaml.safe_load(manifest)
    jsonschema.validate(doc, DGD_SCHEMA)
    services = doc["spec"]["services"]
    assert services["Frontend"]["componentType"] == "frontend"
    pre, dec = services["prefill"], services["decode"]
    assert (pre["subComponentType"], dec["subComponentType"]) == ("prefill", "decode")
    # 2 prefill replicas of one 8-GPU pod; 2 decode replicas of 2 nodes x 8 GPUs (the operator's GPUs = nodes x limit)
    assert (pre["replicas"], pre["resources"]["limits"]["gpu"], "multinode" in pre) == (2, "8", False)
    assert (dec["replicas"], dec["resources"]["limits"]["gpu"], dec["multinode"]) == (2, "8", {"nodeCount": 2})
    for svc, role, size in ((pre, "prefill", "8"), (dec, "decode", "16")):
        c = svc["extraPodSpec"]["mainContainer"]
        assert c["command"] == ["python3", "-m", "dynamo.sglang"]
        args = c["args"]
        assert args[args.index("--disaggregation-mode") + 1] == role
        assert args[args.index("--tp-size") + 1] == size and args[args.index("--ep-size") + 1] == size
        assert not {"--nnodes", "--node-rank", "--dist-init-addr"} & set(args)  # the operator's, for multi-node
        # the worker's arguments are SGLang's server arguments, under SGLang's rules
        assert check_command("sglang", "python -m sglang.launch_server " + shlex.join(args)) == []
    # DeepEP's low-latency dispatch buffer, set on the decode command's line, is the decode worker's env
    assert {e["name"] for e in dec.get("envs", [])} == {"SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK"}


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("spec", "services", "decode", "multinode", "nodeCount"), 1, "less than the minimum"),
        (("spec", "backendFramework"), "llama.cpp", "is not one of"),
        (("spec", "services", "decode", "replica"), 2, "Additional properties are not allowed"),
        (("spec", "services", "prefill", "resources", "limits", "gpu"), 8, "is not of type 'string'"),
        (("kind",), "DynamoGraphDeployments", "was expected"),
    ],
)
def test_the_dynamo_schema_catches_a_wrong_field(path, value, message):
    from core.report.commands import dynamo_recipe

    doc = yaml.safe_load(dynamo_recipe(*_sized_pools())[0])
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError, match=message):
        jsonschema.validate(doc, DGD_SCHEMA)
