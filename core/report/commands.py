"""The report's launch commands: each engine's command for a plan as copyable code blocks of a report section
(kept apart from ``build`` so the section builder stays short)."""

from __future__ import annotations

from core.deployment.specs import ModelSpec, Scenario
from core.hardware import GPUSpec

__all__: list[str] = []  # build_report's helper, not a public API


def launch_code(sec, plan, model: ModelSpec, prec, scenario: Scenario, role: str, gpu: GPUSpec | None) -> None:
    """The engines' commands for ``plan`` as copyable code blocks of ``sec`` (a report ``Section``)."""
    from core.serving.launch import TRTLLM_YAML
    from core.serving.plan_commands import plan_commands

    try:
        cmds, notes = plan_commands(
            plan,
            model,
            prec,
            gpus_per_node=scenario.gpus_per_node,
            spec=scenario.spec,
            role=role,
            gpu=gpu,
            assumptions=scenario.memory,
        )
    except ValueError as e:  # a layout the engines' commands cannot be written for: the figures stand without them
        sec.notes.append(f"launch commands for {plan.label} left out: {e}")
        return
    what = "aggregated serving" if role == "aggregated" else f"the {role} worker of a disaggregated pair"
    for engine, c in cmds.items():
        text = c.command + (f"\n\n# {TRTLLM_YAML}\n{c.config_yaml}" if c.config_yaml else "")
        sec.code.append((f"{engine} {c.version}: {plan.label} for {what}", text))
        sec.notes += [f"{engine}: {n}" for n in c.notes]
    sec.notes += notes
