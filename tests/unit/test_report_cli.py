"""The report (figures, Markdown, self-contained HTML with charts) and the command line."""

import base64
import html
import json
import re

import pytest

import cli.main as cli
from core.catalog import load_catalog
from core.deployment.specs import Precision, Scenario, Workload
from core.report import build_report
from ui.report import render_html, render_markdown

cat = load_catalog()


def test_report_figures_carry_units_and_the_fit():
    r = build_report(Scenario(), cat, with_layouts=False)
    titles = [s.title for s in r.sections]
    assert titles[:4] == ["Scenario", "Fit", "Intensity", "Speculative decoding"]
    fit = dict(r.sections[1].figures)
    assert fit["Verdict"] == "fits"
    assert fit["Whole-model weights"] == "673.2 GB"  # DeepSeek-V3 FP8, as on the Fit page
    assert fit["Weights per GPU"].endswith("GB")
    spec = dict(r.sections[3].figures)
    # speculation is off: like the Speculative page, the report explores the model's own MTP module at its catalog
    # defaults (alpha 0.87, gamma 1, c 0.04): E = 1 + 0.87 = 1.87 tokens per step, 1.87 / (1 x 0.04 + 1) = 1.80x
    # the one speedup at batch 1 is the step-time model's (fixed step costs included: below the closed form)
    assert spec["Tokens per step"] == "1.87" and spec["Speedup at batch 1"].endswith("gives 1.80×)")
    assert 1.0 < float(spec["Speedup at batch 1"].split("×")[0]) < 1.80


@pytest.mark.parametrize(
    ("gpu", "gpus", "workload", "verdict", "kv"),
    [
        # Mixtral 8x7B BF16: 46.7B params x 2 B = 93.4 GB of weights on one 24 GB RTX 4090: nothing is left for KV
        ("rtx-4090", 1, Workload(), "does not fit", None),
        # on 2 x H100 (TP 2): 46.7 GB of weights per GPU fit; the KV cache per GPU is 32 layers x 4 of 8 KV heads x
        # 128 x (K + V) x 2 B = 65,536 B a token x 1,024 sequences x (32,768 + 1,024) tokens = 2,267.7 GB
        (
            "h100-sxm",
            2,
            Workload(batch=1024, input_len=32768, output_len=1024),
            "weights fit, the workload's KV cache does not",
            "2,267.7 GB",
        ),
        ("h100-sxm", 2, Workload(batch=1, input_len=1024, output_len=1024), "fits", None),
    ],
)
def test_report_verdict_follows_the_memory_status(gpu, gpus, workload, verdict, kv):
    sc = Scenario(
        model_id="mixtral-8x7b", gpu_id=gpu, gpus_per_node=gpus, precision=Precision(weights="bf16"), workload=workload
    )
    fit = dict(build_report(sc, cat, with_layouts=False).sections[1].figures)
    assert fit["Verdict"] == verdict
    if kv:
        assert fit["KV cache for the workload"].startswith(kv)


def test_html_is_self_contained_with_three_png_charts():
    r = build_report(
        Scenario(model_id="mixtral-8x7b", gpu_id="h100-sxm", precision=Precision(weights="bf16")),
        cat,
        with_layouts=False,
    )
    page = render_html(r)
    imgs = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(imgs) == 3
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in imgs)
    assert "http://" not in page and "https://cdn" not in page  # nothing to fetch
    assert "Mixtral-8x7B" in page and "Assumptions and sources" in page


def test_markdown_without_images():
    md = render_markdown(build_report(Scenario(), cat, with_layouts=False), images=False)
    assert md.startswith("# DeepSeek-V3 on 8") and "data:image" not in md and "| GPU |" in md


def test_cli_formats(capsys, tmp_path):
    assert (
        cli.main(["--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpn", "2", "--precision", "bf16", "--no-layouts"])
        == 0
    )
    out = capsys.readouterr().out
    assert "Mixtral-8x7B on 2 × NVIDIA H100" in out and "Verdict" in out
    assert cli.main(["--url", "model=qwen3-30b-a3b&gpu=l40s&gpn=1&w=fp8", "--format", "json", "--no-layouts"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scenario"]["model_id"] == "qwen3-30b-a3b" and data["sections"][1]["title"] == "Fit"
    out_file = tmp_path / "r.html"
    assert cli.main(["--model", "deepseek-v3", "--format", "html", "--out", str(out_file)]) == 0
    assert out_file.read_text().count("data:image/png;base64,") == 3


def test_cli_rejects_bad_values(capsys):
    assert cli.main(["--model", "gpt-5"]) == 2
    assert "not a known model id" in capsys.readouterr().err
    assert cli.main(["--url", "model=deepseek-v3&nodes=0"]) == 2


def test_report_has_a_single_box_section_when_the_scenario_has_a_box():
    from core.deployment.specs import SingleBox

    box = SingleBox(host_id="server-ddr5-8ch-512", gpu_id="rtx-4090", quant="iq4_xs", n_cpu_moe=61, context_len=4096)
    r = build_report(Scenario(box=box), cat, with_layouts=False)
    sec = {s.title: dict(s.figures) for s in r.sections}["Single box"]
    assert sec["Verdict"] == "fits"
    # 653,908,770,816 routed weights x 4.25 / 8 = 347.4 GB + 8 GB for the OS, all 58 MoE layers on the host
    assert sec["Host RAM"].startswith("355.4 GB of 512 GB (--n-cpu-moe 61: 58 MoE layers")
    assert sec["Decode (batch 1)"].endswith(" tokens/s")
    assert "Single box" not in [s.title for s in build_report(Scenario(), cat, with_layouts=False).sections]


def test_cli_stack_reaches_the_report_and_bad_stacks_are_refused(capsys):
    # the report names the stack, and the layout search runs with it: TensorRT-LLM's measured MoE kernels
    # differ from SGLang's fused Triton ones, so the best decode plan's throughput differs
    assert cli.main(["--model", "qwen3-235b-a22b", "--gpu", "h100-sxm", "--stack", "trtllm", "--format", "json"]) == 0
    trt = json.loads(capsys.readouterr().out)
    assert cli.main(["--model", "qwen3-235b-a22b", "--gpu", "h100-sxm", "--format", "json"]) == 0
    sgl = json.loads(capsys.readouterr().out)

    def figure(report, label):
        return next(v for s in report["sections"] for k, v in s["figures"].items() if k.startswith(label))

    assert figure(trt, "Serving stack").startswith("TensorRT-LLM") and figure(sgl, "Serving stack").startswith("SGLang")
    assert figure(trt, "Best decode layout") != figure(sgl, "Best decode layout")
    with pytest.raises(SystemExit):
        cli.main(["--stack", "tgi"])
    assert "invalid choice: 'tgi'" in capsys.readouterr().err


# ---- user text escaped in every output format (issue 21)

HOSTILE_NAMES = ["<img src=x onerror=alert(1)>", "[x](javascript:alert(1))"]


def _imported(name: str):
    """Mixtral's config.json with ``_name_or_path`` set to ``name``: the importer names the model after it (what
    follows its last "/"), in the app, in the URL's cfg and so in the CLI."""
    from core.catalog import CATALOG_DIR
    from core.hf import model_from_config_text

    cfg = json.loads((CATALOG_DIR / "models" / "mixtral-8x7b" / "config.json").read_text())
    return model_from_config_text(json.dumps({**cfg, "_name_or_path": name}))


def _markup(md: str) -> str:
    """Markdown with each backslash-escaped character blanked out: what a renderer parses as markup."""
    return re.sub(r"\\.", "\0", md)


@pytest.fixture
def no_charts(monkeypatch):
    """Reports without their PNG charts (2-3 s each to render): pixels carry no markup, the text around them does."""
    import ui.report

    monkeypatch.setattr(ui.report, "report_charts", lambda report: {})


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_model_name_is_escaped_in_the_markdown_and_html_reports(name, no_charts):
    from ui.format import md_escape

    spec, _ = _imported(name)
    scenario = Scenario(model_id=spec.id, gpu_id="h100-sxm", precision=Precision(weights="bf16"))
    r = build_report(scenario, cat, spec, with_layouts=False)
    assert r.title == f"{name} (imported) on 8 × NVIDIA H100 SXM5 80GB"
    md = render_markdown(r, images=False)
    # the title, the Scenario section's Model figure: escaped; no tag, link or image left as markup
    assert md.startswith(f"# {md_escape(r.title)}\n")
    assert f"- **Model:** {md_escape(name)} (imported) (46.7B total" in md
    assert "<img" not in _markup(md) and "](" not in _markup(md) and "javascript:" not in md
    page = render_html(r)
    assert f"<h1>{html.escape(r.title)}</h1>" in page and f"<title>{html.escape(r.title)}</title>" in page
    assert "<img" not in page and "onerror=alert(1)>" not in page and "<a " not in page


def test_report_code_blocks_cannot_be_closed_by_their_text():
    from ui.report import fenced

    # CommonMark: a fence closes only on a run of backticks at least as long as the opening one
    assert fenced("vllm serve x", "bash") == "```bash\nvllm serve x\n```"
    assert fenced("a\n```\n<img src=x>", "bash") == "````bash\na\n```\n<img src=x>\n````"


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_model_name_is_escaped_in_the_cli_outputs(name, capsys, tmp_path, no_charts):
    from core.hf import encode_config
    from ui.format import md_escape

    spec, norm = _imported(name)
    url = f"model={spec.id}&cfg={encode_config(norm)}&gpu=h100-sxm&w=bf16"
    args = ["--url", url, "--no-layouts"]
    assert cli.main([*args, "--format", "json"]) == 0
    out = capsys.readouterr().out
    # JSON: data, round-tripped exactly, with <, > and & written as \u escapes (safe inside an HTML page)
    assert "<" not in out and ">" not in out and json.loads(out)["title"].startswith(f"{name} (imported)")
    assert cli.main([*args, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith(f"# {md_escape(name)} (imported)") and "<img" not in _markup(md) and "](" not in _markup(md)
    assert cli.main([*args, "--format", "html", "--out", str(tmp_path / "r.html")]) == 0
    assert (
        html.escape(name) in (tmp_path / "r.html").read_text()
        and "onerror=alert(1)>" not in (tmp_path / "r.html").read_text()
    )
    # plain text is not markup: the name as it is, first line of the table
    assert cli.main([*args]) == 0
    assert capsys.readouterr().out.startswith(f"{name} (imported) on 8 × NVIDIA H100")


def test_control_characters_in_user_text_cannot_drive_the_terminal(capsys):
    from core.hf import encode_config

    # an OSC 8 hyperlink and a colour change hidden in a config's _name_or_path
    spec, norm = _imported("\x1b]8;;https:evil.example\x07click\x1b]8;;\x07\x1b[31m")
    assert cli.main(["--url", f"model={spec.id}&cfg={encode_config(norm)}", "--no-layouts"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert out.startswith("\\x1b]8;;https:evil.example\\x07click\\x1b]8;;\\x07\\x1b[31m (imported) on 8 ×")


# ---- the CLI fails cleanly: one line naming the path and the problem, exit status 2, no traceback


def _fails(capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"moe-planner: {message}\n", err


def test_cli_bad_out_paths_are_one_line_errors(capsys, tmp_path, monkeypatch):
    from pathlib import Path

    base = ["--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--no-layouts", "--out"]
    _fails(capsys, [*base, str(tmp_path)], f"--out {str(tmp_path)!r} is a folder; give a file path")
    missing = tmp_path / "no" / "r.md"
    _fails(capsys, [*base, str(missing)], f"--out {str(missing)!r}: the folder {str(missing.parent)!r} does not exist")

    # no permission: root ignores mode bits, so the operating system's refusal is simulated
    def refuse(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "write_text", refuse)
    out = tmp_path / "r.md"
    _fails(capsys, [*base, str(out)], f"cannot write --out {str(out)!r}: Permission denied")


def test_cli_bad_config_files_are_one_line_errors(capsys, tmp_path):
    from core.catalog import CATALOG_DIR

    good = CATALOG_DIR / "models" / "mixtral-8x7b" / "config.json"
    assert cli.main(["--config", str(good), "--gpu", "h100-sxm", "--no-layouts", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # the imported Mixtral (its config has no _name_or_path: named after its id): 46,702,792,704 parameters, as
    # the catalog's
    assert data["scenario"]["model_id"].startswith("custom-") and data["title"].endswith(
        "(imported) on 8 × NVIDIA H100 SXM5 80GB"
    )
    assert dict(data["sections"][0]["figures"])["Model"].endswith("(46.7B total, 12.9B active)")
    missing = tmp_path / "none.json"
    _fails(capsys, ["--config", str(missing)], f"--config {str(missing)!r}: no such file")
    _fails(capsys, ["--config", str(tmp_path)], f"--config {str(tmp_path)!r} is a folder, not a config.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    _fails(
        capsys,
        ["--config", str(bad)],
        f"--config {str(bad)!r}: config.json is not valid JSON: Expecting "
        "property name enclosed in double quotes (line 1, column 2)",
    )
    bad.write_bytes(b"\xff\xfe{}")
    _fails(
        capsys,
        ["--config", str(bad)],
        f"--config {str(bad)!r}: config.json is not UTF-8 text (invalid start byte at byte 0)",
    )
    bad.write_text('{"model_type": "mamba"}')
    assert cli.main(["--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"moe-planner: --config {str(bad)!r}: ") and err.count("\n") == 1
    assert "architecture 'mamba' is not supported" in err


def test_cli_into_a_closed_pipe_exits_quietly():
    """`moe-planner ... | head -1`: when the reader has gone, the CLI exits with the shell's SIGPIPE status (141),
    no BrokenPipeError traceback."""
    import subprocess
    import sys
    from pathlib import Path

    argv = ["--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--nodes", "1", "--gpn", "2", "--no-layouts"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", *argv],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader leaves before the planner writes its first line
    err = proc.stderr.read()
    assert proc.wait(timeout=180) == 141
    assert b"Traceback" not in err and b"BrokenPipe" not in err


def test_report_clamps_n_cpu_moe_above_the_models_layers_with_a_note():
    """Issue 37 (CR-2): a URL's ncm may be 0-10,000 for any model; the CLI's report used to say 'not computed'."""
    from core.deployment.specs import SingleBox

    box = SingleBox(
        host_id="server-ddr5-8ch-512", gpu_id="rtx-4090", quant="iq4_xs", n_cpu_moe=10_000, context_len=4096
    )
    r = build_report(Scenario(box=box), cat, with_layouts=False)
    sec = {s.title: s for s in r.sections}["Single box"]
    figures = dict(sec.figures)
    # DeepSeek-V3 has 61 layers: the same placement as n_cpu_moe=61 (test above)
    assert figures["Host RAM"].startswith("355.4 GB of 512 GB (--n-cpu-moe 61: 58 MoE layers")
    assert "--n-cpu-moe 10,000 is more than the model's 61 layers: 61 used (allowed: 0-61)" in sec.notes


# issue 37 (probe 3, SEC-5): bidi controls and other invisible format characters from an imported config's name
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
INVISIBLE = BIDI + "\u200b\u200c\u200d\u2060\ufeff\u00ad"


def test_a_right_to_left_override_in_an_imported_name_is_dropped_from_both_reports(no_charts):
    spec, _ = _imported("org/\u202eevil.exe")
    r = build_report(Scenario(model_id=spec.id, gpu_id="h100-sxm", precision=Precision(weights="bf16")), cat, spec)
    assert "\u202e" in r.title  # the report's data keeps the name as given; the renderers show what is visible
    page, md = render_html(r), render_markdown(r, images=False)
    assert "<title>evil.exe (imported) on 8 × NVIDIA H100 SXM5 80GB</title>" in page
    assert "<h1>evil.exe (imported) on 8 × NVIDIA H100 SXM5 80GB</h1>" in page
    assert "<li><b>Model:</b> evil.exe (imported) (46.7B total" in page
    assert md.startswith("# evil.exe (imported) on 8 × NVIDIA H100 SXM5 80GB\n")
    # (md_escape itself puts a word joiner, U+2060, into the report's own autolink-like text: http\u2060://)
    for text, chars in ((page, INVISIBLE), (md, INVISIBLE.replace("\u2060", ""))):
        assert not [c for c in text if c in chars], [hex(ord(c)) for c in text if c in chars]


@pytest.mark.parametrize("char", list(INVISIBLE), ids=lambda c: f"U+{ord(c):04X}")
def test_every_invisible_format_character_is_dropped_from_both_reports(char, no_charts):
    spec, _ = _imported(f"ab{char}cd")
    r = build_report(Scenario(model_id=spec.id, gpu_id="h100-sxm", precision=Precision(weights="bf16")), cat, spec)
    page, md = render_html(r), render_markdown(r, images=False)
    assert "<h1>abcd (imported) on 8" in page and md.startswith("# abcd (imported) on 8")
    assert char not in page and char not in md.split("\n")[0]  # the title line: md_escape's own joiners aside
    assert md.count(char) == render_markdown(_report_of("abcd"), images=False).count(char)


def _report_of(name: str):
    spec, _ = _imported(name)
    return build_report(Scenario(model_id=spec.id, gpu_id="h100-sxm", precision=Precision(weights="bf16")), cat, spec)


# issue 37 (probe 3, UX-2): README-valid clusters above 8,192 GPUs


def test_cli_writes_the_report_and_launch_commands_for_65536_gpus(capsys):
    assert cli.main(["--url", "model=kimi-k2&gpu=gb200&nodes=4096&gpn=16", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    layouts = next(s for s in data["sections"] if s["title"] == "Layouts")
    assert not [n for n in layouts["notes"] if "left out" in n or "must be a whole number" in n], layouts["notes"]
    assert any(c["label"].startswith("vllm ") for c in layouts["code"]) and len(layouts["code"]) == 6
    # the replicas a command is run for fill the 65,536 GPUs: dp x GPUs per replica
    for n in layouts["notes"]:
        if m := re.search(r"dp = (\d+): the command sizes one replica of (\d+) GPUs", n):
            assert int(m[1]) * int(m[2]) == 65_536, n


def test_a_plan_the_engines_cannot_be_written_for_leaves_the_commands_out_with_a_note(monkeypatch):
    import core.serving.plan_commands

    def refuse(*a, **k):
        raise ValueError("pp must be a whole number in 1..65,536, got 70000")

    monkeypatch.setattr(core.serving.plan_commands, "plan_commands", refuse)
    r = build_report(Scenario(), cat)
    sec = {s.title: s for s in r.sections}["Layouts"]
    assert not sec.code
    assert any(
        n.endswith("left out: pp must be a whole number in 1..65,536, got 70000")
        and n.startswith("launch commands for")
        for n in sec.notes
    )


def test_cli_refuses_the_probes_kimi_k3_config_in_one_line(capsys, tmp_path):
    """Issue 37 (probe 3, CR-3): `moe-planner --config k3.json` with vision_config.merge_kernel_size
    [10**300, 10**300] printed an OverflowError traceback (exit 1); the same config in a URL's cfg too."""
    from core.catalog import CATALOG_DIR
    from core.hf import encode_config

    cfg = json.loads((CATALOG_DIR / "models" / "kimi-k3" / "config.json").read_text())
    cfg["vision_config"]["merge_kernel_size"] = [10**300, 10**300]
    k3 = tmp_path / "k3.json"
    k3.write_text(json.dumps(cfg))
    field = (
        "config.json (kimi_k25 vision_config): field 'merge_kernel_size[0]' must be 1 to 64 (a vision tower's patch "
        "merge), got a 301-digit integer"
    )
    _fails(capsys, ["--config", str(k3)], f"--config {str(k3)!r}: {field}")
    token = encode_config(json.dumps(cfg, sort_keys=True, separators=(",", ":")))
    _fails(capsys, ["--url", f"model=custom-539cd6ecb8&cfg={token}"], f"--url cfg: {field}")


def test_cli_names_an_implausible_imported_value_on_stderr(capsys, tmp_path):
    # max_position_embeddings 10^12 is within the importer's bounds: planned with, and named (as the Catalog page warns)
    cfg = json.loads((cat.root / "models" / "mixtral-8x7b" / "config.json").read_text())
    cfg["max_position_embeddings"] = 10**12
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert cli.main(["--config", str(path), "--gpu", "h100-sxm", "--no-layouts", "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert (
        f"moe-planner: warning: --config {str(path)!r}: config.json: max_position_embeddings is 1,000,000,000,000"
        in err
    )
    assert "plausible 1 to 100,000,000 tokens" in err


def test_the_decode_plans_command_is_the_decode_worker_not_aggregated_serving():
    """Review 3 M1: the decode plan's figures have no prompt in their steps (a decode pool), but the report printed
    its commands as "DP-attn8 · EP8 for aggregated serving" (role aggregated: no --disaggregation-mode). S1,
    DeepSeek-V3 FP8 on 8 x H200: each engine's decode command is the decode worker of a PD pair and says it needs a
    prefill pool; the prefill plan's is the prefill worker."""
    sc = Scenario(model_id="deepseek-v3", gpu_id="h200", gpus_per_node=8, precision=Precision(weights="fp8"))
    sec = {s.title: s for s in build_report(sc, cat).sections}["Layouts"]
    labels = [label for label, _ in sec.code]
    assert not [lab for lab in labels if "aggregated serving" in lab], labels
    decode = {lab.split(" ", 1)[0]: text for lab, text in sec.code if "decode worker" in lab}
    assert set(decode) == {"vllm", "sglang", "trtllm"}
    assert all("it needs a prefill pool" in lab for lab in labels if "decode worker" in lab)
    # each engine's own decode-side switch: SGLang's mode, vLLM's NIXL consumer, TensorRT-LLM's KV transceiver
    assert "--disaggregation-mode decode" in decode["sglang"]
    assert '"kv_role":"kv_consumer"' in decode["vllm"]
    assert "cache_transceiver_config" in decode["trtllm"] and "disable_overlap_scheduler" not in decode["trtllm"]
    prefill = [lab for lab in labels if "prefill worker" in lab]
    assert len(prefill) == 3 and all("it needs a decode pool" in lab for lab in prefill)


def test_tensorrt_llm_plans_are_scored_without_two_batch_overlap():
    """Review 3 M12: with the TensorRT-LLM stack, DeepSeek-V3 FP8 on 8 x H200's best prefill plan was 'DP-attn8 · EP8
    (two-batch overlap)', 6,478 input tok/s per GPU, an overlap no TensorRT-LLM setting turns on (catalogs/engines.yaml:
    two_batch_overlap setting null for trtllm). Its plans are now scored without it, and say why; SGLang's keep it."""
    from core.serving import layout

    def scenario(stack):
        return Scenario(
            model_id="deepseek-v3",
            gpu_id="h200",
            gpus_per_node=8,
            precision=Precision(weights="fp8"),
            serving_stack=stack,
        )

    trt = dict({s.title: s for s in build_report(scenario("trtllm"), cat).sections}["Layouts"].figures)
    assert trt["Best prefill layout"].startswith("DP-attn8 · EP8 (no overlap)")
    sgl = dict({s.title: s for s in build_report(scenario("sglang"), cat).sections}["Layouts"].figures)
    assert sgl["Best prefill layout"].startswith("DP-attn8 · EP8 (two-batch overlap)")
    sc = scenario("trtllm")
    d = layout.search_deployment(sc, cat, cat.model("deepseek-v3"), sc.workload.model_copy(update={"batch": 1}))
    for phase in ("prefill", "decode"):
        plans = layout.recommend(d, phase, catalog=cat)
        assert plans and {p.overlap for p in plans} == {"none"}
        assert all("no overlap (TensorRT-LLM has none)" in p.reason for p in plans)


def test_kimi_k3_on_8_h100_says_memory_is_why_no_layout_fits_and_lists_h100():
    """Review 3 M14, S9: Kimi-K3 FP8 on 1 x 8 H100 printed 'none fits on this cluster within the targets' for both
    phases although every layout is rejected for its weights, and the min-GPU table listed eight GPUs, not the H100.
    By hand: 2,788.6 GB of FP8 weights over 8 GPUs is 348.6 GB each before the parts every GPU holds; the least any
    layout puts on a GPU is TP 8's 359.0 GB, against 0.9 x 85.0 GB = 76.5 GB usable. 2,788.6 / 76.5 = 36.5, so the
    H100 needs at least 37 GPUs at FP8, in whole 8-GPU nodes above one node: 40 or more."""
    sc = Scenario(model_id="kimi-k3", gpu_id="h100-sxm", gpus_per_node=8, precision=Precision(weights="fp8"))
    r = build_report(sc, cat)
    sec = {s.title: s for s in r.sections}
    layouts = dict(sec["Layouts"].figures)
    for phase in ("prefill", "decode"):
        assert layouts[f"Best {phase} layout"].startswith(
            "none: memory. No layout holds the weights on these 8 GPUs: at best 359.0 GB of weights per GPU against "
            "76.5 GB usable"
        ), layouts
    rows = {row["GPU"]: row for row in sec["Fit"].table}
    h100 = rows["NVIDIA H100 SXM5 80GB (this scenario)"]
    assert isinstance(h100["min GPUs fp8"], int) and h100["min GPUs fp8"] >= 40 and h100["min GPUs fp8"] % 8 == 0
    assert len(rows) == 9  # the eight GPUs with the most memory, and the scenario's own
    # a GPU already among the eight is marked, not repeated
    mi300 = Scenario(model_id="kimi-k3", gpu_id="mi300x", gpus_per_node=8, precision=Precision(weights="fp8"))
    fit = {s.title: s for s in build_report(mi300, cat, with_layouts=False).sections}["Fit"]
    assert len(fit.table) == 8 and sum("(this scenario)" in row["GPU"] for row in fit.table) == 1
