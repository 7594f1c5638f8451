"""The planner's MoE kernels on AMD against AMD's own measured ones: the tuned fused-MoE tables of ROCm/aiter
(issue 35).

aiter is the kernel library SGLang, vLLM and ATOM call on Instinct GPUs (``SGLANG_USE_AITER=1`` in the InferenceX AMD
launches). Its tuner times every kernel candidate for a shape on the GPU and keeps the fastest; the tuned CSVs
(``aiter/configs/tuned_fmoe.csv`` and ``aiter/configs/model_configs/*tuned_fmoe*.csv``) keep that time, ``us``,
for one fused MoE layer: ``token`` tokens, each routed to ``topk`` of ``expert`` experts of width ``inter_dim``
over ``model_dim``, weights in ``q_dtype_w``, on a GPU with ``cu_num`` compute units (304: gfx942, i.e. MI300X or
MI325X, which the file does not tell apart, read here as MI300X; 256: gfx950, MI355X; 80, the MI308X, is not in the
catalog). The planner has no AMD kernel case: its AMD GPUs take the H200's measured fractions of peak
(catalogs/efficiency.yaml).

    python -m bench.aiter_compare --aiter /path/to/aiter            # the comparison, by GPU, model, dtype, expert TP
    python -m bench.aiter_compare --aiter /path/to/aiter --write    # also rewrite catalogs/validation/aiter_moe_check.csv

``--aiter`` is a clone of ROCm/aiter (a work tree, or a bare git directory read at HEAD). Without it the bench reads
the rows already extracted into ``catalogs/validation/aiter_moe_check.csv`` (what tests/unit/test_amd_moe_kernels.py
reads too), so it runs in the project's own checkout. Only rows whose whole expert set is on the GPU are kept
(``expert`` equal to a catalog model's routed experts: expert TP ``= expert width / inter_dim``, no EP). A row with
a shared expert fused in (``expert`` = routed + 1, ``topk`` + 1) or a slice of the experts (EP) routes every token's
``topk`` slots to the experts on hand, which no planner layout describes, so it is left out. Each kept row is timed by
the planner as a ``moe_layer_decode`` (``token`` <= 512) or ``moe_layer_prefill`` case on ``expert TP`` GPUs with
``token`` tokens entering the layer, SGLang's default kernel path for the layout, weights in the row's dtype
(``core.validation.aiter_check``, which the Validation page shows too). Rows repeating one time at several token
counts of a shape are left out: a configuration carried over, not a measurement.
"""

from __future__ import annotations

import argparse
import csv
import io
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CSV_PATH = ROOT / "catalogs" / "validation" / "aiter_moe_check.csv"
GPU_BY_CU = {"304": "mi300x", "256": "mi355x"}  # gfx942 (MI300X / MI325X), gfx950 (MI355X)
WEIGHT_DTYPES = {  # aiter's q_dtype_w -> the planner's experts dtype
    "torch.bfloat16": "bf16",
    "torch.float8_e4m3fnuz": "fp8",
    "torch.float8_e4m3fn": "fp8",
    "torch.float4_e2m1fn_x2": "mxfp4",
    "torch.int4": "int4",
}
ACT_BITS = {"torch.bfloat16": 16, "torch.float8_e4m3fnuz": 8, "torch.float8_e4m3fn": 8, "torch.float4_e2m1fn_x2": 4}
FIELDS = (
    "source",
    "commit",
    "cu_num",
    "gpu",
    "model",
    "experts_dtype",
    "act_bits",
    "expert_tp",
    "tokens",
    "measured_us",
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _table_files(repo: Path) -> list[str]:
    names = _git(repo, "ls-tree", "-r", "--name-only", "HEAD", "aiter/configs").split()
    return sorted(n for n in names if "tuned_fmoe" in n and "untuned" not in n and n.endswith(".csv"))


def _model_index():
    """(hidden, routed experts, top-k) -> the catalog MoE models with that shape (their routed-expert GEMMs are
    the same kernel: the planner's MoE time depends on nothing else)."""
    from core.catalog import load_catalog

    cat = load_catalog()
    index: dict[tuple[int, int, int], list] = {}
    for mid in sorted(cat.models):
        m = cat.model(mid)
        if m.moe is None:
            continue
        index.setdefault((m.hidden_size, m.moe.n_routed_experts, m.moe.top_k), []).append(m)
    return index


SHAPE_KEYS = ("cu_num", "model_dim", "inter_dim", "expert", "topk", "act_type", "q_dtype_a", "q_dtype_w", "q_type")


def _copied(table: list[dict]) -> set[int]:
    """The rows (by ``id``) whose time is not a measurement at their token count: a tuned file often carries one
    configuration, with its time, over to every larger token count (DeepSeek-V3's file gives 597.8194 us for 4,096 to
    32,768 tokens of one shape). A time that appears at two or more token counts of one shape, weighting order included,
    is left out at all of them."""

    def shape(r: dict) -> tuple:
        return (*(r.get(k) for k in SHAPE_KEYS), r.get("doweight_stage1"))

    counts: dict[tuple, dict[str, set[str]]] = {}
    for r in table:
        counts.setdefault(shape(r), {}).setdefault(r.get("us", ""), set()).add(r.get("token", ""))
    return {id(r) for r in table if len(counts[shape(r)][r.get("us", "")]) > 1}


def extract(repo: Path) -> list[dict]:
    """The rows of the aiter clone ``repo`` (at HEAD) that a planner layout describes (see the module docstring)."""
    commit = _git(repo, "rev-parse", "HEAD").strip()
    index = _model_index()
    best: dict[tuple, dict] = {}
    for name in _table_files(repo):
        table = list(csv.DictReader(io.StringIO(_git(repo, "show", f"HEAD:{name}"))))
        copied = _copied(table)
        for r in table:
            if id(r) in copied:
                continue
            gpu = GPU_BY_CU.get((r.get("cu_num") or "").strip())
            dtype = WEIGHT_DTYPES.get(r.get("q_dtype_w", ""))
            bits = ACT_BITS.get(r.get("q_dtype_a", ""))
            try:
                tokens, hidden, inter = int(r["token"]), int(r["model_dim"]), int(r["inter_dim"])
                experts, topk, us = int(r["expert"]), int(r["topk"]), float(r["us"])
            except (KeyError, TypeError, ValueError):
                continue
            if gpu is None or dtype is None or bits is None or not us > 0:
                continue
            models = [m for m in index.get((hidden, experts, topk), ()) if m.moe.expert_intermediate_size % inter == 0]
            if not models:
                continue
            m = models[0]
            etp = m.moe.expert_intermediate_size // inter
            key = (gpu, m.id, dtype, bits, etp, tokens)
            if key in best and best[key]["measured_us"] <= us:
                continue  # the same shape tuned again (another file, quantisation or weighting order): fastest kept
            best[key] = {
                "source": name,
                "commit": commit,
                "cu_num": r["cu_num"].strip(),
                "gpu": gpu,
                "model": m.id,
                "experts_dtype": dtype,
                "act_bits": bits,
                "expert_tp": etp,
                "tokens": tokens,
                "measured_us": round(us, 4),
            }
    return list(best.values())


def write_rows(rows: list[dict], path: Path) -> None:
    """The extracted rows as the CSV ``core.validation.aiter_check.load_aiter_check`` reads."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(
            "# ROCm/aiter tuned fused-MoE times (column us, microseconds per layer), the rows a planner layout"
            " describes; written by `python -m bench.aiter_compare --aiter <clone> --write` (bench/aiter_compare.py"
            " says how rows are chosen)\n"
        )
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aiter", type=Path, help="a clone of ROCm/aiter (work tree or git directory), read at HEAD")
    ap.add_argument("--write", action="store_true", help="rewrite catalogs/validation/aiter_moe_check.csv")
    args = ap.parse_args(argv)
    if args.write and not args.aiter:
        ap.error("--write needs --aiter")
    if args.aiter:
        try:
            _git(args.aiter, "rev-parse", "HEAD")
        except (OSError, subprocess.CalledProcessError):
            ap.error(f"--aiter {args.aiter}: not a git clone of ROCm/aiter (git cannot read HEAD there)")
    from core.validation.aiter_check import aiter_check_summary, load_aiter_check

    if args.aiter:
        rows = extract(args.aiter)
        if args.write:
            write_rows(rows, CSV_PATH)
            print(f"wrote {len(rows)} rows to {CSV_PATH.relative_to(ROOT)}")
            results = load_aiter_check(CSV_PATH)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                write_rows(rows, Path(tmp) / "rows.csv")
                results = load_aiter_check(Path(tmp) / "rows.csv")
    else:
        results = load_aiter_check(CSV_PATH)
    by_group: dict[tuple, list[dict]] = {}
    for r in results:
        by_group.setdefault((r["gpu"], r["model"], r["experts_dtype"], r["act_bits"], r["expert_tp"]), []).append(r)
    print(
        f"{'gpu':7} {'model':18} {'dtype':6} {'act':>4} {'eTP':>3} {'n':>3}  median err  tokens: measured / planner us"
    )
    for (gpu, model, dtype, bits, etp), rs in sorted(by_group.items()):
        med = statistics.median(r["error"] for r in rs)
        picks = " ".join(
            f"{r['tokens']}:{r['measured_us']:.0f}/{r['predicted_us']:.0f}"
            for r in rs
            if r["tokens"] in (1, 16, 256, 4096)
        )
        print(f"{gpu:7} {model:18} {dtype:6} {bits:>4} {etp:>3} {len(rs):>3}  {med:+9.0%}   {picks}")
    print()
    print(f"{'gpu':7} {'phase':8} {'n':>4}  median err  median |err|  P90 |err|")
    for g in aiter_check_summary(results):
        print(
            f"{g['GPU']:7} {g['phase']:8} {g['rows']:>4}  {g['median error (%)']:+8.0f}%  {g['median |error| (%)']:10.0f}%"
            f"  {g['P90 |error| (%)']:7.0f}%"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
