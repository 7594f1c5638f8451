"""The report (figures, Markdown, self-contained HTML with charts) and the command line."""

import base64
import json
import re

import pytest

from core.catalog import load_catalog
from core.report import build_report
from core.specs import Precision, Scenario
from ui import cli
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
    assert spec["Tokens per step"] == "1.87" and spec["Speedup at low batch"] == "1.80×"


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
    from core.specs import SingleBox

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
