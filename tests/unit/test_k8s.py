"""Kubernetes LeaderWorkerSet manifests for one multi-node replica (core/serving/launch/k8s.py), validated against
the LeaderWorkerSet CRD's schema as far as the manifests use it (catalogs/k8s/leaderworkerset.schema.yaml, read from
kubernetes-sigs/lws), their pods' commands parsed with the engines' argument rules and by bash."""

from __future__ import annotations

import copy
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
