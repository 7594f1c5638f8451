"""Expert loads from user text: a CSV table (one row per layer, one column per expert) or a
Prometheus text scrape (samples of one metric with ``expert`` and ``layer`` labels).

Both parsers return a ``[layers, experts]`` numpy array of loads >= 0 or raise ``ValueError`` naming
the line and the problem. The limits of one load table (experts, layers, entries, the largest load)
are defined here and shared with ``core.balance`` and ``core.balance.eplb``.
"""

from __future__ import annotations

import csv
import io
import math
import re

import numpy as np

from core._util.prometheus import SAMPLE_LINE

__all__ = ["MAX_CELLS", "MAX_EXPERTS", "MAX_LAYERS", "MAX_LOAD", "parse_loads_csv", "parse_prometheus_loads"]

MAX_EXPERTS = 100_000
MAX_LAYERS = 10_000
MAX_CELLS = 10_000_000  # layers x experts of one load table (80 MB of float64)
MAX_LOAD = 1e30  # a load (token count or fraction) beyond this is not a measurement; float32 sums stay finite


# -------------------------------------------------------------------------------- user input

_MAX_TEXT = 5_000_000
_BOM = "\ufeff"  # a byte-order mark: Excel's "CSV UTF-8" starts the file with one
# a cell that starts like a number (digits, a sign or a point before a digit) but is not one is a typo, not a name
_NUMBER_LIKE = re.compile(r"^[+-]?\.?\d")


def parse_loads_csv(text: str) -> np.ndarray:
    """Per-expert loads from CSV: one row per layer, one column per expert, numbers in [0, ``MAX_LOAD``].
    The first row is skipped as a header when it holds only names (no cell a number or a mistyped one,
    such as ``12O``); a leading byte-order mark (Excel's "CSV UTF-8") is ignored. Errors name the line,
    the column and the problem."""
    if not isinstance(text, str):
        raise ValueError("CSV input must be text")
    if len(text) > _MAX_TEXT:
        raise ValueError(f"CSV is {len(text):,} characters; the limit is {_MAX_TEXT:,}")
    rows: list[list[float]] = []
    row_lines: list[int] = []
    reader = csv.reader(io.StringIO(text.removeprefix(_BOM), newline=None))  # universal newlines: a lone CR too
    width = None
    first = True
    for line_no, row in _csv_rows(reader):
        cells = [c.strip() for c in row]
        if not cells or all(c == "" for c in cells):
            continue
        if first and _is_header(cells):
            first = False
            continue
        first = False
        try:
            values = [float(c) for c in cells]
        except ValueError:
            col = next(i for i, c in enumerate(cells, start=1) if _number(c) is None)
            raise ValueError(f"line {line_no}, column {col}: {cells[col - 1][:40]!r} is not a number") from None
        col = next((i for i, v in enumerate(values, start=1) if not 0 <= v <= MAX_LOAD), None)  # NaN fails too
        if col is not None:
            v = values[col - 1]
            raise ValueError(
                f"line {line_no}, column {col}: "
                + (
                    f"{v:g} is above the largest load accepted, {MAX_LOAD:g}"
                    if v > MAX_LOAD and math.isfinite(v)
                    else f"loads must be finite numbers >= 0, got {cells[col - 1][:40]!r}"
                )
            )
        if width is None:
            width = len(values)
            if width < 2:
                raise ValueError(f"line {line_no}: need at least 2 experts (columns)")
            if width > MAX_EXPERTS:
                raise ValueError(f"line {line_no}: more than {MAX_EXPERTS:,} experts")
        elif len(values) != width:
            raise ValueError(f"line {line_no}: {len(values)} columns, but the first row has {width}")
        rows.append(values)
        row_lines.append(line_no)
        if len(rows) > MAX_LAYERS:
            raise ValueError(f"more than {MAX_LAYERS:,} layers (rows)")
    if not rows:
        raise ValueError("no rows of numbers found")
    a = np.asarray(rows, dtype=np.float64)
    if np.any(a.sum(axis=1) <= 0):
        line = row_lines[int(np.argmax(a.sum(axis=1) <= 0))]
        raise ValueError(f"line {line}: the row's loads are all zero (a layer needs some load)")
    return a


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _is_header(cells: list[str]) -> bool:
    """A row of column names: no cell is a number or starts like one."""
    return all(_number(c) is None and not _NUMBER_LIKE.match(c) for c in cells)


def _csv_rows(reader):
    """(line number, row) pairs; a CSV syntax error becomes a ValueError naming the line."""
    line_no = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise ValueError(f"line {reader.line_num}: not valid CSV ({e})") from None
        line_no += 1
        yield line_no, row


_PROM_LINE = SAMPLE_LINE
_PROM_LABEL = re.compile(r'(?P<k>[a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"(?P<v>(?:[^"\\]|\\.)*)"')


def parse_prometheus_loads(text: str, metric: str | None = None) -> tuple[np.ndarray, str]:
    """Per-layer, per-expert loads from a Prometheus text scrape: samples of one metric carrying an
    ``expert`` label (``expert_id`` / ``expert_idx`` also accepted) and optionally a ``layer`` label.
    ``metric`` picks the metric; by default the first one with an expert label. Samples of one layer and
    expert (one per rank) add up, to at most ``MAX_LOAD``. Returns ``(loads [layers, experts], metric
    name)``; errors name the line and the problem."""
    if not isinstance(text, str):
        raise ValueError("the scrape must be text")
    if len(text) > _MAX_TEXT:
        raise ValueError(f"scrape is {len(text):,} characters; the limit is {_MAX_TEXT:,}")
    samples: dict[tuple[int, int], float] = {}
    chosen = metric
    for line_no, raw in enumerate(text.removeprefix(_BOM).splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _PROM_LINE.match(line)
        if not m:
            raise ValueError(f"line {line_no}: not a Prometheus sample ({line[:60]!r})")
        labels = {lm.group("k"): lm.group("v") for lm in _PROM_LABEL.finditer(m.group("labels") or "")}
        expert_key = next((k for k in ("expert", "expert_id", "expert_idx") if k in labels), None)
        if expert_key is None:
            continue
        name = m.group("name")
        if chosen is None:
            chosen = name
        if name != chosen:
            continue
        try:
            expert = int(labels[expert_key])
            layer = int(labels.get("layer", labels.get("layer_id", "0")))
            value = float(m.group("value"))
        except ValueError:
            raise ValueError(f"line {line_no}: expert/layer labels must be integers and the value a number") from None
        if not (0 <= expert < MAX_EXPERTS and 0 <= layer < MAX_LAYERS):
            raise ValueError(f"line {line_no}: expert or layer index out of range")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"line {line_no}: load must be a finite number >= 0")
        if value > MAX_LOAD:
            raise ValueError(f"line {line_no}: load {value:g} is above the largest load accepted, {MAX_LOAD:g}")
        total = samples.get((layer, expert), 0.0) + value  # one sample per rank or label set: they add up
        if total > MAX_LOAD:
            raise ValueError(
                f"line {line_no}: the samples of layer {layer}, expert {expert} add up to {total:g}, above the "
                f"largest load accepted, {MAX_LOAD:g}"
            )
        samples[(layer, expert)] = total
    if not samples:
        raise ValueError(
            "no per-expert samples found"
            + (f" for metric {metric!r}" if metric else "")
            + ': expected lines like  name{layer="3",expert="17"} 1234'
        )
    layers = sorted({k[0] for k in samples})
    n = max(k[1] for k in samples) + 1
    if len(layers) * n > MAX_CELLS:
        raise ValueError(
            f"{len(layers):,} layers x {n:,} experts is more than {MAX_CELLS:,} loads; "
            "scrape fewer layers or check the expert labels"
        )
    out = np.zeros((len(layers), n))
    index = {layer: i for i, layer in enumerate(layers)}
    for (layer, expert), v in samples.items():
        out[index[layer], expert] = v
    if np.any(out.sum(axis=1) <= 0):
        raise ValueError("a layer's loads are all zero")
    return out, chosen or ""
