"""A disaggregated recipe for NVIDIA Dynamo (issue 36): a ``DynamoGraphDeployment`` (``nvidia.com/v1alpha1``, the
Dynamo operator's CRD) with a frontend, a prefill worker and a decode worker, each worker the plan's SGLang command
for its role (``python3 -m dynamo.sglang`` takes SGLang's server arguments), its replicas the sized pool's.

Written as ai-dynamo/dynamo's own examples write it (``examples/backends/sglang/deploy/disagg.yaml`` and
``disagg-multinode.yaml``): ``componentType`` frontend / worker, ``subComponentType`` prefill / decode,
``resources.limits.gpu`` the GPUs of one pod, ``multinode.nodeCount`` the nodes of a replica that spans more than one
(the operator then starts one pod per node and passes SGLang its ``--dist-init-addr`` / ``--nnodes`` /
``--node-rank``, so the recipe leaves those out), ``extraPodSpec.mainContainer`` the image, command and arguments.
Environment variables the command sets (DeepEP's dispatch buffer) become the worker's ``envs``. vLLM and TensorRT-LLM
are not written: Dynamo's vLLM and TensorRT-LLM workers take their own flags for the KV transfer and roles, which the
planner's engine rules (catalogs/engine_args) do not hold.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import yaml

from core._util.checks import whole
from core.serving.launch.k8s import node_commands
from core.serving.launch.spec import LaunchCommand

__all__: list[str] = []  # the UI and the report call dynamo_manifest by name

# the runtime image of ai-dynamo/dynamo@04521f473b68375705a553f4082fac8254d71a2f examples/backends/sglang/deploy
DYNAMO_IMAGE = "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1"
HF_SECRET = "hf-token-secret"  # the examples' Secret holding HF_TOKEN (gated checkpoints)
_RENDEZVOUS = {"--dist-init-addr", "--nnodes", "--node-rank"}  # the operator writes these for a multi-node worker
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")
_PROGRAM = ["python", "-m", "sglang.launch_server"]


@dataclass(frozen=True)
class Pool:
    """One role's workers: the plan's SGLang command, how many replicas the pool holds and each one's GPUs."""

    command: LaunchCommand
    replicas: int
    gpus_per_replica: int


def _worker_args(command: LaunchCommand) -> tuple[list[dict], list[str], int]:
    """(environment variables, SGLang's arguments without the multi-node rendezvous, nodes) of node 0's command."""
    parts = node_commands(command)
    nodes, body = (1, command.command) if parts is None else (parts[0], parts[1])
    words = shlex.split(body.replace("\\\n", " "), comments=True)
    env = []
    while words and _ENV.match(words[0]):
        name, value = words.pop(0).split("=", 1)
        env.append({"name": name, "value": value})
    if words[: len(_PROGRAM)] != _PROGRAM:
        raise ValueError(f"not an SGLang server command: {' '.join(words[:3])[:80]}")
    args, rest = [], words[len(_PROGRAM) :]
    i = 0
    while i < len(rest):
        if rest[i] in _RENDEZVOUS:
            i += 2
            continue
        args.append(rest[i])
        i += 1
    return env, args, nodes


def _worker(role: str, pool: Pool, gpus_per_node: int) -> dict:
    env, args, nodes = _worker_args(pool.command)
    replicas = whole(f"{role} replicas", pool.replicas, 1, 100_000)
    gpus = whole(f"{role} GPUs per replica", pool.gpus_per_replica, 1, 65_536)
    if nodes > 1 and gpus != nodes * gpus_per_node:
        raise ValueError(f"a {role} replica of {gpus} GPUs does not fill its {nodes} nodes of {gpus_per_node}")
    service: dict = {
        "componentType": "worker",
        "subComponentType": role,
        "replicas": replicas,
        "envFromSecret": HF_SECRET,
        "resources": {"limits": {"gpu": str(gpus // nodes)}},  # per pod: one node's GPUs
    }
    if nodes > 1:
        service["multinode"] = {"nodeCount": nodes}
    if env:
        service["envs"] = env
    service["extraPodSpec"] = {
        "mainContainer": {
            "name": "main",
            "image": DYNAMO_IMAGE,
            "command": ["python3", "-m", "dynamo.sglang"],
            "args": args,
        }
    }
    return service


def dynamo_manifest(prefill: Pool, decode: Pool, gpus_per_node: int, name: str = "moe-planner-disagg") -> str:
    """The DynamoGraphDeployment YAML serving ``prefill`` and ``decode`` (SGLang commands of the two roles) behind one
    Dynamo frontend."""
    for role, pool in (("prefill", prefill), ("decode", decode)):
        if not isinstance(pool, Pool) or pool.command.engine != "sglang":
            raise ValueError(f"the {role} pool must be a Pool of an SGLang command")
    gpn = whole("gpus_per_node", gpus_per_node, 1, 1024)
    frontend = {
        "componentType": "frontend",
        "replicas": 1,
        "extraPodSpec": {"mainContainer": {"name": "main", "image": DYNAMO_IMAGE}},
    }
    manifest = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": name},
        "spec": {
            "backendFramework": "sglang",
            "services": {
                "Frontend": frontend,
                "prefill": _worker("prefill", prefill, gpn),
                "decode": _worker("decode", decode, gpn),
            },
        },
    }
    return yaml.safe_dump(manifest, sort_keys=False, width=1000)
