"""A Kubernetes LeaderWorkerSet (kubernetes-sigs/lws, ``leaderworkerset.x-k8s.io/v1``) for one multi-node replica:
the leader pod runs node 0's command, the worker pods the other nodes' command, each on one node's GPUs.

LWS puts ``LWS_LEADER_ADDRESS`` (the leader pod's address) and ``LWS_WORKER_INDEX`` (0 for the leader, 1.. for the
workers) into every container; the commands read ``HEAD_IP`` and ``NODE_RANK`` from them. TensorRT-LLM's multi-node
server runs under MPI (trtllm-llmapi-launch), not one command per node, so no manifest is written for it.
"""

from __future__ import annotations

import re

import yaml

from core.serving.launch.spec import LaunchCommand

__all__: list[str] = []  # helpers the UI and the report call by name; launch_command is the package's API

IMAGES = {"vllm": "vllm/vllm-openai:v{version}", "sglang": "lmsysorg/sglang:v{version}"}  # the release's image
PORTS = {"vllm": 8000, "sglang": 30000}  # the servers' default HTTP ports
_NODES = re.compile(r"^# node 0 of (\d+) \(head\)$", re.M)


def node_commands(command: LaunchCommand) -> tuple[int, str, str] | None:
    """(nodes, node 0's command, the other nodes' command) of a multi-node command; None for one node."""
    m = _NODES.search(command.command)
    blocks = [b for b in command.command.split("\n\n") if b.strip()]
    if not m or len(blocks) != 2:
        return None

    def body(block: str) -> str:
        return "\n".join(line for line in block.splitlines() if not line.startswith("#"))

    return int(m[1]), body(blocks[0]), body(blocks[1])


def lws_manifest(command: LaunchCommand, gpus_per_node: int, name: str = "moe-planner") -> str | None:
    """The LeaderWorkerSet YAML that runs ``command`` (vLLM or SGLang, multi-node) as one replica, or None."""
    parts = node_commands(command) if command.engine in IMAGES else None
    if parts is None:
        return None
    nodes, head, other = parts
    setup = 'export HEAD_IP="$LWS_LEADER_ADDRESS" NODE_RANK="$LWS_WORKER_INDEX"\n'

    def pod(role: str, script: str) -> dict:
        container = {
            "name": role,
            "image": IMAGES[command.engine].format(version=command.version),
            "command": ["/bin/bash", "-c"],
            "args": [setup + script],
            "resources": {"limits": {"nvidia.com/gpu": str(gpus_per_node)}},
            "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
        }
        if role == "leader":
            container["ports"] = [{"containerPort": PORTS[command.engine]}]
        volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]  # NCCL and the engines share memory
        return {"metadata": {"labels": {"role": role}}, "spec": {"containers": [container], "volumes": volumes}}

    manifest = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",  # one failed pod restarts the whole replica
                "leaderTemplate": pod("leader", head),
                "workerTemplate": pod("worker", other),
            },
        },
    }
    return yaml.safe_dump(manifest, sort_keys=False, width=1000)
