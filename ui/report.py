"""Render a :class:`core.report.Report` as Markdown or a self-contained HTML page, with its charts
rendered server-side (Altair through vl-convert, no browser needed)."""

from __future__ import annotations

import base64
import html
import re
from datetime import UTC, datetime

import pandas as pd

from core import speculative as sd
from core.report import Report
from ui.charts import COMPONENT_LABELS, Spec, lines_chart, memory_stack_chart, speedup_vs_alpha_chart
from ui.format import md_escape, visible_text

__all__ = ["chart_png", "fenced", "render_html", "render_markdown", "report_charts"]

# larger fonts for slides and print, merged into each exported spec (no global theme)
_PRINT = {
    "axis": {"labelFontSize": 15, "titleFontSize": 16},
    "legend": {"labelFontSize": 14, "titleFontSize": 14},
    "title": {"fontSize": 18, "subtitleFontSize": 14},
}


def report_charts(report: Report) -> dict[str, Spec]:
    """The report's charts as Altair charts with a fixed width (exports have no container)."""
    out = {}
    mem = report.charts.get("memory")
    if mem:
        order = list(COMPONENT_LABELS)
        rows = [
            {
                "bar": "each GPU" if len(mem["stages"]) == 1 else f"stage {i + 1}",
                "component": COMPONENT_LABELS.get(k, k),
                "gb": v,
                "order": order.index(k) if k in order else 99,
            }
            for i, stage in enumerate(mem["stages"])
            for k, v in stage.items()
        ]
        out["Memory per GPU"] = memory_stack_chart(
            pd.DataFrame(rows),
            usable_gb=mem["usable_gb"],
            capacity_gb=mem["capacity_gb"],
            title=f"Memory per GPU: {report.title}",
        ).properties(width=800)
    it = report.charts.get("intensity")
    if it:
        df = pd.DataFrame({"batch": it["batch"], "intensity": it["intensity"], "series": "FFN / expert GEMM"})
        out["GEMM intensity"] = lines_chart(
            df,
            x="batch",
            y="intensity",
            series="series",
            x_title="tokens per decode step",
            y_title="FLOP / byte",
            title=f"GEMM intensity vs batch: {report.title}",
            hrules=pd.DataFrame({"value": [it["ridge"]], "label": [f"ridge {it['ridge']:,.0f}"]}),
            markers=pd.DataFrame({"batch": [it["now"][0]], "intensity": [it["now"][1]], "label": ["scenario"]}),
        ).properties(width=800)
    spc = report.charts.get("speculative")
    if spc:
        out["Speculative speedup"] = speedup_vs_alpha_chart(
            spc["alpha"],
            spc["curves"],
            c=spc["c"],
            now=tuple(spc["now"]),
            now_label="scenario",
            zones=sd.ACCEPTANCE_ZONES,
        ).properties(width=800)
    return out


def chart_png(chart: Spec, scale: float = 2.0) -> bytes:
    import vl_convert

    spec = chart.to_dict(format="vega-lite")
    cfg = spec.setdefault("config", {})
    for k, v in _PRINT.items():
        cfg.setdefault(k, {}).update(v)
    return vl_convert.vegalite_to_png(spec, scale=scale)


def _table_md(rows: list[dict]) -> str:
    if not rows:
        return ""
    cols = list(rows[0])
    out = ["| " + " | ".join(md_escape(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(md_escape(r.get(c, "")) for c in cols) + " |")
    return "\n".join(out)


def fenced(text: str, info: str = "") -> str:
    """``text`` as a fenced code block that nothing in it can close: the fence is longer than its longest run of
    backticks (CommonMark closes a fence only on a run at least as long as the opening one)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def render_markdown(report: Report, *, images: bool = True) -> str:
    """Markdown with the charts embedded as PNG data URIs (``images=False``: figures and tables only). Every
    figure, cell and note is escaped (``md_escape``): a model's name comes from a user's config.json, and a
    Markdown viewer renders raw HTML, links and images. The sources are the catalog's own text (URLs kept
    clickable); the URL query holds only validated ids and numbers."""
    lines = [
        f"# {md_escape(report.title)}",
        "",
        f"MoE Deployment Planner report, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Scenario URL query: "
        f"`?{'&'.join(f'{k}={v}' for k, v in report.url_query.items())}`",
        "",
    ]
    for sec in report.sections:
        lines += [f"## {md_escape(sec.title)}", ""]
        lines += [f"- **{md_escape(label)}:** {md_escape(value)}" for label, value in sec.figures]
        lines += [""] + ([_table_md(sec.table), ""] if sec.table else [])
        lines += [f"> {md_escape(n)}" for n in sec.notes]
        for label, text in sec.code:
            lines += ["", f"**{md_escape(label)}**", "", fenced(text, "bash"), ""]
    if images:
        for name, chart in report_charts(report).items():
            b64 = base64.b64encode(chart_png(chart)).decode()
            lines += [f"## Chart: {name}", "", f"![{name}](data:image/png;base64,{b64})", ""]
    lines += ["## Assumptions and sources", ""] + [f"- {s}" for s in report.sources]
    return "\n".join(lines) + "\n"


def render_html(report: Report) -> str:
    """A self-contained HTML page: figures, tables, PNG charts inline, sources. Every text is escaped and shown as
    its visible characters (``visible_text``: a right-to-left override in an imported model's name is dropped)."""

    def esc(text: object) -> str:
        return html.escape(visible_text(text))

    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(report.title)}</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;line-height:1.45;color:#222}"
        "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        "th{background:#f3f3f3}img{max-width:100%}code{background:#f3f3f3;padding:1px 4px}</style></head><body>",
        f"<h1>{esc(report.title)}</h1>",
        f"<p>MoE Deployment Planner report, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Scenario URL query: <code>?"
        f"{esc('&'.join(f'{k}={v}' for k, v in report.url_query.items()))}</code></p>",
    ]
    for sec in report.sections:
        parts.append(f"<h2>{esc(sec.title)}</h2><ul>")
        parts += [f"<li><b>{esc(label)}:</b> {esc(value)}</li>" for label, value in sec.figures]
        parts.append("</ul>")
        if sec.table:
            cols = list(sec.table[0])
            parts.append("<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{esc(str(r.get(c, '')))}</td>" for c in cols) + "</tr>" for r in sec.table]
            parts.append("</table>")
        parts += [f"<p><i>{esc(n)}</i></p>" for n in sec.notes]
        parts += [f"<p><b>{esc(label)}</b></p><pre><code>{esc(text)}</code></pre>" for label, text in sec.code]
    for name, chart in report_charts(report).items():
        b64 = base64.b64encode(chart_png(chart)).decode()
        parts.append(f"<h2>{esc(name)}</h2><img alt='{esc(name)}' src='data:image/png;base64,{b64}'>")
    parts.append(
        "<h2>Assumptions and sources</h2><ul>" + "".join(f"<li>{esc(s)}</li>" for s in report.sources) + "</ul>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)
