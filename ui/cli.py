"""Command line: the scenario's fit, recommended layouts and speculative speedup, as a table, JSON,
Markdown or a self-contained HTML report.

    moe-planner --model deepseek-v3 --gpu h200 --nodes 1 --gpn 8 --precision fp8
    moe-planner --url "model=qwen3-235b-a22b&gpu=h100-sxm&nodes=2&w=fp8" --format json
    moe-planner --saved "baseline" --format html --out report.html
    python -m ui.cli ...   (the same without installing the console script)
"""

from __future__ import annotations

import argparse
import json
import sys
from urllib.parse import parse_qsl

from core.catalog import load_catalog
from core.efficiency import SERVING_STACKS
from core.report import build_report
from core.scenario import scenario_from_params

__all__ = ["main"]


def _args(argv):
    ap = argparse.ArgumentParser(prog="moe-planner", description="MoE Deployment Planner on the command line")
    ap.add_argument("--url", help="a scenario as the app's URL query string (everything after '?')")
    ap.add_argument("--saved", help="the name of a saved scenario (PLANNER_DB)")
    ap.add_argument("--model")
    ap.add_argument("--gpu")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--gpn", type=int, help="GPUs per node")
    ap.add_argument("--precision", help="weight dtype, e.g. fp8")
    ap.add_argument("--kv", help="KV-cache dtype")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--isl", type=int, help="input tokens per sequence")
    ap.add_argument("--osl", type=int, help="output tokens per sequence")
    ap.add_argument("--stack", choices=tuple(SERVING_STACKS), help="serving stack whose kernels time the steps")
    ap.add_argument("--no-layouts", action="store_true", help="skip the layout search (faster)")
    ap.add_argument("--format", choices=("table", "json", "markdown", "html"), default="table")
    ap.add_argument("--out", help="write to this file instead of standard output")
    return ap.parse_args(argv)


def _scenario(a, cat):
    model = None
    if a.saved:
        from core.hf_config import model_from_config_text
        from core.store import open_store

        saved = open_store().get(a.saved)
        if saved.model_config_json:
            model, _ = model_from_config_text(saved.model_config_json)
        return saved.scenario, model, []
    params = dict(parse_qsl(a.url.lstrip("?"))) if a.url else {}
    for key, value in (
        ("model", a.model),
        ("gpu", a.gpu),
        ("nodes", a.nodes),
        ("gpn", a.gpn),
        ("w", a.precision),
        ("kv", a.kv),
        ("batch", a.batch),
        ("isl", a.isl),
        ("osl", a.osl),
        ("stack", a.stack),
    ):
        if value is not None:
            params[key] = str(value)
    extra = ()
    if params.get("cfg"):
        from core.hf_config import decode_config, model_from_config_text

        model, _ = model_from_config_text(decode_config(params["cfg"]))
        extra = (model.id,)
    scenario, warnings = scenario_from_params(params, cat, extra)
    return scenario, model, warnings


def _table(report) -> str:
    out = [report.title, "=" * len(report.title)]
    for sec in report.sections:
        out += ["", sec.title, "-" * len(sec.title)]
        width = max((len(label) for label, _ in sec.figures), default=0)
        out += [f"{label:<{width}}  {value}" for label, value in sec.figures]
        if sec.table:
            cols = list(sec.table[0])
            widths = [max(len(str(c)), *(len(str(r.get(c, ""))) for r in sec.table)) for c in cols]
            out.append("")
            out.append("  ".join(f"{c:<{w}}" for c, w in zip(cols, widths, strict=True)))
            out += ["  ".join(f"{r.get(c, '')!s:<{w}}" for c, w in zip(cols, widths, strict=True)) for r in sec.table]
        out += [f"note: {n}" for n in sec.notes]
        for label, text in sec.code:
            out += ["", f"{label}:", text]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    a = _args(argv)
    cat = load_catalog()
    try:
        scenario, model, warnings = _scenario(a, cat)
        report = build_report(scenario, cat, model, with_layouts=not a.no_layouts)
    except ValueError as e:
        print(f"moe-planner: {e}", file=sys.stderr)
        return 2
    if warnings:  # on the command line a bad value is an error, not a silent fallback
        for w in warnings:
            print(f"moe-planner: {w}", file=sys.stderr)
        return 2
    if a.format == "json":
        text = json.dumps(report.as_dict(), indent=2) + "\n"
    elif a.format == "markdown":
        from ui.report import render_markdown

        text = render_markdown(report, images=bool(a.out))
    elif a.format == "html":
        from ui.report import render_html

        text = render_html(report)
    else:
        text = _table(report)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {a.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
