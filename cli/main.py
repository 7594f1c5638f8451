"""Command line: the scenario's fit, recommended layouts and speculative speedup, as a table, JSON,
Markdown or a self-contained HTML report.

    moe-planner --model deepseek-v3 --gpu h200 --nodes 1 --gpn 8 --precision fp8
    moe-planner --url "model=qwen3-235b-a22b&gpu=h100-sxm&nodes=2&w=fp8" --format json
    moe-planner --saved "baseline" --format html --out report.html
    moe-planner --config ./config.json --gpu h100-sxm      (a Hugging Face config.json, as the Catalog imports it)
    python -m cli ...   (the same without installing the console script)

A bad input (a value, a path, a config) is one line on standard error naming it and the problem, and exit
status 2; user text (a model's name from its config) is escaped for the output format: JSON as data (``<``,
``>``, ``&`` written as ``\\u`` escapes), Markdown and HTML as text, the table with its control characters
shown, never sent to the terminal. An imported config with a value no real model has (``max_position_embeddings``
10^12) is planned with, and named on standard error (``core.hf.implausible_values``, as the Catalog page warns).

The command line stands beside ``ui``, not in it: it imports ``core`` and, for the Markdown and HTML reports, the
Streamlit-free renderers of ``ui.report`` (charts as Vega-Lite specs through vl-convert), never Streamlit
(tests/unit/test_architecture.py checks both).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from urllib.parse import parse_qsl

from core.catalog import load_catalog
from core.hardware.efficiency import SERVING_STACKS
from core.report import build_report
from core.scenario import scenario_from_params

__all__ = ["main"]


def _args(argv):
    ap = argparse.ArgumentParser(prog="moe-planner", description="MoE Deployment Planner on the command line")
    ap.add_argument("--url", help="a scenario as the app's URL query string (everything after '?')")
    ap.add_argument("--saved", help="the name of a saved scenario (PLANNER_DB)")
    ap.add_argument("--config", help="a Hugging Face config.json to plan with (the Catalog page's import)")
    ap.add_argument("--model")
    ap.add_argument("--gpu")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--gpn", type=int, help="GPUs per node")
    ap.add_argument("--precision", help="weight dtype, e.g. fp8")
    ap.add_argument("--kv", help="KV-cache dtype")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--isl", type=int, help="input tokens per sequence")
    ap.add_argument("--osl", type=int, help="output tokens per sequence")
    ap.add_argument("--reuse", type=float, help="%% of each prompt a warm prefix cache serves (0-99)")
    ap.add_argument("--stack", choices=tuple(SERVING_STACKS), help="serving stack whose kernels time the steps")
    ap.add_argument("--no-layouts", action="store_true", help="skip the layout search (faster)")
    ap.add_argument("--format", choices=("table", "json", "markdown", "html"), default="table")
    ap.add_argument("--out", help="write to this file instead of standard output")
    return ap.parse_args(argv)


def _import(text, where: str):
    """A config.json imported as the Catalog page imports it; any failure is one message naming ``where``
    (TypeError / KeyError / OverflowError too: what the importer does not catch must not become a traceback here)."""
    from core.hf import implausible_values, model_from_config_text

    try:
        spec = model_from_config_text(text)[0]
    except (ValueError, TypeError, KeyError, ArithmeticError) as e:
        raise ValueError(f"{where}: {e}") from None
    for why in implausible_values(spec):  # accepted, but said: the Catalog page's warning
        print(f"moe-planner: warning: {where}: {_terminal_safe(why)}", file=sys.stderr)
    return spec


def _config_file(path: str):
    from core.hf import MAX_CONFIG_BYTES

    try:
        with Path(path).open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)  # the importer refuses anything longer, with its size
    except FileNotFoundError:
        raise ValueError(f"--config {path!r}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"--config {path!r} is a folder, not a config.json") from None
    except OSError as e:
        raise ValueError(f"--config {path!r}: {e.strerror or e}") from None
    return _import(data, f"--config {path!r}")


def _check_out(path: str) -> None:
    """Refuse an --out path that cannot be written before any work is done."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"--out {path!r} is a folder; give a file path")
    parent = p.parent
    if not parent.is_dir():
        raise ValueError(f"--out {path!r}: the folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"cannot write --out {path!r}: Permission denied")


def _scenario(a, cat):
    model = None
    if a.saved:
        from core.store import open_store

        saved = open_store().get(a.saved)
        if saved.model_config_json:
            model = _import(saved.model_config_json, f"saved scenario {a.saved!r}")
        return saved.scenario, model, []
    params: dict[str, list[str] | str] = {}
    for key, value in parse_qsl(a.url.lstrip("?")) if a.url else ():
        params.setdefault(key, []).append(value)  # a repeated key is named by scenario_from_params
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
        ("reuse", a.reuse),
        ("stack", a.stack),
    ):
        if value is not None:
            params[key] = str(value)
    if a.config:
        if a.model:
            raise ValueError("--config and --model both name the model; give one of them")
        model = _config_file(a.config)
        params.pop("cfg", None)
        params["model"] = model.id
    elif params.get("cfg"):
        from core.hf import decode_config

        model = _import(decode_config(params["cfg"][-1]), "--url cfg")
    scenario, warnings = scenario_from_params(
        params, cat, (model.id,) if model else (), {model.id: model} if model else None
    )
    return scenario, model, warnings


# C0 and C1 controls and the bidirectional overrides: an escape sequence in a model's name would drive the
# terminal (colours, OSC 8 hyperlinks, a cleared screen); written as \xNN / \uNNNN instead
_CONTROLS = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")


def _terminal_safe(text: str) -> str:
    return _CONTROLS.sub(lambda m: ascii(m.group())[1:-1], text)


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


def _fail(*messages: str) -> int:
    for m in messages:
        print(f"moe-planner: {_terminal_safe(str(m))}", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    a = _args(argv)
    cat = load_catalog()
    try:
        if a.out:
            _check_out(a.out)
        scenario, model, warnings = _scenario(a, cat)
        if warnings:  # on the command line a bad value is an error, not a silent fallback
            return _fail(*warnings)
        report = build_report(scenario, cat, model, with_layouts=not a.no_layouts)
    except ValueError as e:
        return _fail(str(e))
    if a.format == "json":
        # data, not markup: <, > and & as \u escapes (the same JSON value) so the text is safe inside HTML
        text = json.dumps(report.as_dict(), indent=2) + "\n"
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    elif a.format == "markdown":
        from ui.report import render_markdown

        text = render_markdown(report, images=bool(a.out))
    elif a.format == "html":
        from ui.report import render_html

        text = render_html(report)
    else:
        text = _terminal_safe(_table(report))
    if a.out:
        try:
            Path(a.out).write_text(text, encoding="utf-8")
        except OSError as e:
            return _fail(f"cannot write --out {a.out!r}: {e.strerror or e}")
        print(f"wrote {a.out}", file=sys.stderr)
    else:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # `moe-planner ... | head`: the reader left; no traceback, the shell's SIGPIPE status
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail again
            return 141
    return 0


if __name__ == "__main__":
    sys.exit(main())
