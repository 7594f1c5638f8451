"""Every launch command the app prints, parsed with its engine's own argument rules (catalogs/engine_args/*.yaml:
the flags' names, types and allowed values read from the engine's source; core/serving/launch/argcheck.py): the
Report / CLI commands for every catalog model on its default GPU and cluster (both roles of a disaggregated pair,
each engine), the review's scenarios, and every spec variant of test_launch. A renamed or misspelled flag, a
value of the wrong type or outside the engine's choices, an unknown environment variable or YAML key fails."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from core.catalog import load_catalog
from core.hardware import ClusterSpec
from core.report import build_report
from core.scenario import scenario_from_params
from core.serving import layout
from core.serving.launch import ENGINES, TRTLLM_YAML, LaunchSpec, launch_commands
from core.serving.launch.argcheck import check_command, engine_rules
from core.serving.plan_commands import plan_commands
from tests.unit._search import search
from tests.unit.test_launch import all_commands

ROOT = Path(__file__).resolve().parents[2]
ENGINES_YAML = yaml.safe_load((ROOT / "catalogs" / "engines.yaml").read_text())
CAT = load_catalog()
# the review's scenarios (layouts-review-3 section 1), MTP on S1 (M9), and a multi-node one
REVIEW_URLS = [
    "model=deepseek-v3&gpu=h200&nodes=1&gpn=8&w=fp8",
    "model=deepseek-v3&gpu=h200&nodes=1&gpn=8&w=fp8&sd=mtp&gamma=1",
    "model=deepseek-v3&gpu=h100-sxm&nodes=12&gpn=8&w=fp8&isl=2000&osl=100",
    "model=deepseek-v3&gpu=gb200&nodes=18&gpn=4&w=nvfp4&kv=fp8",
    "model=kimi-k2&gpu=h200&nodes=2&gpn=8&w=fp8",
    "model=kimi-k2&gpu=h200&nodes=2&gpn=8&w=fp8&stack=vllm",
    "model=qwen3-235b-a22b&gpu=h100-sxm&nodes=1&gpn=8&w=fp8",
    "model=gpt-oss-120b&gpu=h100-sxm&nodes=1&gpn=1&w=bf16&ex=mxfp4",
    "model=glm-5.2&gpu=b200&nodes=1&gpn=8&w=fp8",
    "model=llama-4-maverick&gpu=h100-sxm&nodes=1&gpn=8&w=fp8",
]


def _scenarios():
    """(label, scenario): every catalog model on its default GPU and cluster; a model that fits nowhere there on
    four such nodes too; the review's scenarios."""
    out = []
    for mid in sorted(CAT.models):
        sc, _ = scenario_from_params({"model": mid}, CAT)
        out.append((mid, sc))
        cl = ClusterSpec(gpu=CAT.gpu(sc.gpu_id), num_nodes=sc.num_nodes, gpus_per_node=sc.gpus_per_node)
        wl = sc.workload.model_copy(update={"batch": 1})
        d = search(CAT.model(mid), cl, wl, precision=sc.precision, stack=sc.serving_stack, assumptions=sc.memory)
        if not layout.recommend(d, "decode", catalog=CAT, max_plans=1):
            out.append((f"{mid} x4 nodes", scenario_from_params({"model": mid, "nodes": "4"}, CAT)[0]))
    for url in REVIEW_URLS:
        params = dict(kv.split("=") for kv in url.split("&"))
        out.append((url, scenario_from_params(params, CAT)[0]))
    return out


SCENARIOS = _scenarios()


def _printed_blocks(scenario):
    """(engine, command, options file) of every code block the Report / CLI prints for ``scenario``."""
    report = build_report(scenario, CAT, None, with_layouts=True)
    for sec in report.sections:
        if sec.title in ("Benchmark", "Kubernetes"):  # the clients' commands and the manifests: their own tests
            continue
        for label, text in sec.code:
            engine = label.split(" ", 1)[0]
            command, _, config = text.partition(f"\n\n# {TRTLLM_YAML}\n")
            yield engine, label, command, config


def test_rules_list_exactly_the_flags_engines_yaml_lists():
    for engine in ENGINES:
        rules, listed = engine_rules(engine), ENGINES_YAML[engine]
        assert set(rules["flags"]) == set(listed["flags"]), engine
        assert set(rules.get("env") or {}) == set(listed.get("env") or {}), engine
        assert set(rules.get("yaml_keys") or {}) == set(listed.get("yaml_keys") or {}), engine
        for name, rule in {**rules["flags"], **(rules.get("env") or {})}.items():
            assert rule["source"] in rules["sources"], (engine, name)
        for key in rules.get("yaml_keys") or {}:
            assert rules["yaml_sources"][key] in rules["sources"], (engine, key)


def test_every_command_the_report_prints_parses_under_its_engines_rules():
    seen = {(e, what) for e in ENGINES for what in ("prefill worker", "decode worker")}
    found, blocks = set(), 0
    for name, sc in SCENARIOS:
        for engine, label, command, config in _printed_blocks(sc):
            assert check_command(engine, command, config) == [], f"{name}: {label}"
            found |= {(engine, what) for what in ("prefill worker", "decode worker") if what in label}
            blocks += 1
    assert found == seen
    # 50 catalog models: the 44 that fit 8 x H200 get 6 blocks each (3 engines x prefill + decode worker), the six that
    # need more GPUs get theirs on 4 nodes where they fit; the review scenarios add theirs
    assert blocks >= 6 * 44 + 6 * len(REVIEW_URLS) - 12, blocks


def test_every_decode_worker_command_parses():
    checked = 0
    for name, sc in SCENARIOS:
        cl = ClusterSpec(gpu=CAT.gpu(sc.gpu_id), num_nodes=sc.num_nodes, gpus_per_node=sc.gpus_per_node)
        m = CAT.model(sc.model_id)
        wl = sc.workload.model_copy(update={"batch": 1})
        d = search(m, cl, wl, precision=sc.precision, assumptions=sc.memory, spec=sc.spec)
        for p in layout.recommend(d, "decode", catalog=CAT, max_plans=1):
            cmds, _ = plan_commands(p, d, role="decode")
            for c in cmds.values():
                assert check_command(c.engine, c.command, c.config_yaml) == [], f"{name}: {c.engine} decode"
                checked += 1
    assert checked >= 3 * 44


def test_every_spec_variant_parses():
    n = 0
    for c in all_commands():
        assert check_command(c.engine, c.command, c.config_yaml) == [], c.command
        n += 1
    assert n > 3000  # 11 layouts x 96 variants x 3 engines + the DCP and buffer cases


# ----------------------------------------------------------------------------- the rules catch what they should

GOOD = launch_commands(
    LaunchSpec(
        "deepseek-ai/DeepSeek-V3",
        attention_dp=8,
        ep=8,
        max_num_seqs=200,
        role="decode",
        kv_cache_dtype="fp8",
        gpu_memory_utilization=0.9,
    )
)


@pytest.mark.parametrize(
    "engine, old, new, problem",
    [
        ("vllm", "--tensor-parallel-size", "--tensor-paralel-size", "unknown flag --tensor-paralel-size"),
        ("vllm", "deepep_low_latency", "deepep_fast", "--all2all-backend 'deepep_fast': not one of"),
        ("vllm", "--max-num-seqs 200", "--max-num-seqs 2OO", "--max-num-seqs '2OO': not a valid int"),
        ("vllm", "--kv-cache-dtype fp8", "--kv-cache-dtype fp4", "--kv-cache-dtype 'fp4': not one of"),
        ("vllm", '"kv_role":"kv_consumer"', '"kv_role":"consumer"', ".kv_role 'consumer': not one of"),
        ("vllm", "vllm serve", "vllm run", "does not start with vllm serve"),
        ("sglang", "--moe-a2a-backend deepep", "--moe-a2a-backend deep_ep", "--moe-a2a-backend 'deep_ep': not one"),
        ("sglang", "--enable-dp-attention", "--enable-dp-attn", "unknown flag --enable-dp-attn"),
        ("sglang", "SGLANG_DEEPEP_NUM_MAX_DISPATCH", "SGLANG_DEEPEP_MAX_DISPATCH", "unknown environment variable"),
        ("sglang", "--deepep-mode low_latency", "--deepep-mode ll", "--deepep-mode 'll': not one of"),
        ("sglang", "--tp-size 8", "--tp-size 0", "--tp-size 0: below the engine's minimum 1"),
        ("trtllm", "--ep_size 8", "--ep-size 8", "unknown flag --ep-size"),
        ("trtllm", "--max_batch_size 200", "--max_batch_size", "--max_batch_size: a value is missing"),
        ("vllm", "--gpu-memory-utilization 0.9", "--gpu-memory-utilization 1.5", "above the engine's maximum 1.0"),
    ],
)
def test_a_misspelled_flag_or_a_bad_value_is_named(engine, old, new, problem):
    c = GOOD[engine]
    assert check_command(engine, c.command, c.config_yaml) == []
    assert old in c.command
    problems = check_command(engine, c.command.replace(old, new), c.config_yaml)
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize(
    "old, new, problem",
    [
        ("enable_attention_dp: true", "enable_attention_dp_x: true", "unknown key 'enable_attention_dp_x'"),
        ("dtype: fp8", "dtype: fp9", "yaml.kv_cache_config.dtype 'fp9': not one of"),
        ("max_batch_size: 200", "max_batch_size: many", "yaml.cuda_graph_config.max_batch_size 'many': not a int"),
        ("backend: NIXL", "backend: nixl", "yaml.cache_transceiver_config.backend 'nixl': not one of"),
    ],
)
def test_a_bad_options_file_key_or_value_is_named(old, new, problem):
    c = GOOD["trtllm"]
    assert old in c.config_yaml
    problems = check_command("trtllm", c.command, c.config_yaml.replace(old, new))
    assert any(problem in p for p in problems), problems


def test_unknown_engine_and_non_text_are_refused():
    with pytest.raises(ValueError, match="engine 'ollama' is not one of"):
        check_command("ollama", "ollama serve x")
    with pytest.raises(ValueError, match="must be text"):
        check_command("vllm", None)
    assert check_command("vllm", "") == ["no command"]
