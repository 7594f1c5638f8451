"""Extract calibration data from NVIDIA aiconfigurator's measured kernel database.

aiconfigurator (AIC, Apache-2.0) ships per-system parquet tables of measured kernel latencies under
``aiconfigurator_core/systems/data/<system>/<op>/<framework>/<version>/``. This script reads them
with pandas (it never imports aiconfigurator, nor the planner's ``core``) and writes:

- ``catalogs/collectives.csv``: custom all-reduce (SGLang, vLLM, TRT-LLM) and NCCL collective
  latencies per GPU, message size and GPU count;
- ``catalogs/validation/aic_kernel_cases.yaml``: ``moe_layer_latency_ms`` validation cases
  (routed-expert grouped GEMMs of one MoE layer on one GPU) in the schema of
  ``catalogs/validation/README.md``;
- ``catalogs/validation/aic_attention_cases.yaml``: ``attention_latency_us`` cases (the attention
  core of one layer on one GPU: QK^T, softmax, PV over the KV cache; no projections) for the planner's
  ``attention_decode`` / ``attention_prefill`` kernel families;
- ``catalogs/validation/aic_gemm_cases.yaml``: ``gemm_latency_us`` cases (one dense GEMM
  ``[m, k] x [k, n]``, weight n x k, on one GPU, FP8 and BF16) for the planner's ``dense_gemm`` family.

Units, checked against AIC 0.12.0 (see ``catalogs/validation/AIC_DATA.md``): ``latency`` is in
milliseconds; ``message_size`` is an element count (AIC queries it as tokens x hidden elements);
``num_tokens`` of the SGLang wide-EP (DeepEP) tables is tokens per rank x EP, of ``moe_perf``
the tokens entering the MoE layer, seen by every rank. In the attention tables ``num_heads`` (and
``num_key_value_heads``) are per GPU, a generation row's ``step`` is the tokens already cached (the
new token attends to step + 1) and a context row's ``isl`` the prompt length. A GEMM row's ``latency`` is
one call, averaged over up to 6 weight copies run in turn; FP8 rows include the activations' quantization.

Run from the repository root with the interpreter that has pandas + pyarrow:
``/tmp/aicenv/bin/python bench/extract_aic.py [--data-dir DIR]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import importlib.util
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
CSV_OUT = ROOT / "catalogs" / "collectives.csv"
CASES_OUT = ROOT / "catalogs" / "validation" / "aic_kernel_cases.yaml"
ATTN_OUT = ROOT / "catalogs" / "validation" / "aic_attention_cases.yaml"
GEMM_OUT = ROOT / "catalogs" / "validation" / "aic_gemm_cases.yaml"

# AIC system folder -> planner catalog GPU id (others are skipped).
SYSTEMS: dict[str, str] = {
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200",
    "b200_sxm": "b200",
    "gb200": "gb200",
    "b300_sxm": "b300",
    "gb300": "gb300",
    "a100_sxm": "a100-80gb",
    "l40s": "l40s",
}
AR_STACKS = ("sglang", "vllm", "trtllm")
NCCL_OPS = ("all_reduce", "all_gather", "reduce_scatter")
SIXTEEN_BIT = {"bfloat16": "bf16", "half": "bf16", "float16": "bf16", "bf16": "bf16", "fp16": "bf16"}
DTYPE_BYTES = {"bf16": 2, "int8": 1, "fp8": 1, "float32": 4}

# Catalog model -> (hidden_size, moe inter_size, routed experts, top-k) as AIC keys its MoE tables.
MODELS: dict[str, tuple[int, int, int, int]] = {
    "deepseek-v3": (7168, 2048, 256, 8),
    "qwen3-235b-a22b": (4096, 1536, 128, 8),
    "qwen3-30b-a3b": (2048, 768, 128, 8),
    "gpt-oss-120b": (2880, 2880, 128, 4),
    "kimi-k2.5": (7168, 2048, 384, 8),
}
PRECISION = {
    "fp8_block": "fp8",
    "bfloat16": "bf16",
    "w4a16_mxfp4": "mxfp4",
    "w4a8_mxfp4_mxfp8": "mxfp4",
    "nvfp4": "nvfp4",
    "int4_wo": "int4",
}
DISTRIBUTIONS = ("balanced", "uniform")

# Grid, kept small (the fit's cost scales with the case count). Decode: tokens <= 512; prefill: >= 2048
# (per rank for deepep, in total for fused/trtllm); a missing grid value takes the nearest available one.
DEEPEP_EPS = (8, 32, 256)  # Blackwell tables have no EP 8: its nearest, 16, stands in
DEEPEP_DTYPE = "fp8_block"  # DeepSeek-V3 only
DEEPEP_DECODE = (1, 16, 128)
TOTAL_DECODE = (1, 16, 128, 512)
PREFILL = (4096, 16384)
DECODE_MAX, PREFILL_MIN = 512, 2048
# fused / trtllm: (model, AIC moe_dtype, (moe_tp, moe_ep)); the first dtype and layout a table has win.
# gpt-oss: Blackwell's MXFP4 weights x MXFP8 activations (the SGLang / TRT-LLM default there), else W4A16.
TP_EP_COMBOS: tuple[tuple[str, tuple[str, ...], tuple[tuple[int, int], ...]], ...] = (
    ("deepseek-v3", ("fp8_block",), ((1, 8), (2, 4), (8, 1))),
    ("deepseek-v3", ("nvfp4",), ((1, 8),)),  # Blackwell only: DeepSeek-R1-FP4's experts
    ("qwen3-235b-a22b", ("fp8_block",), ((8, 1), (4, 2))),
    ("qwen3-235b-a22b", ("bfloat16",), ((2, 4), (1, 8))),
    ("qwen3-30b-a3b", ("bfloat16",), ((1, 1), (1, 8))),
    ("qwen3-30b-a3b", ("fp8_block",), ((1, 1), (1, 8))),
    ("gpt-oss-120b", ("w4a8_mxfp4_mxfp8", "w4a16_mxfp4"), ((1, 1), (1, 8))),
    ("kimi-k2.5", ("int4_wo",), ((1, 8), (8, 1))),  # Kimi-K2.5's native int4 (W4A16) experts: Marlin kernels
)
FUSED_KERNELS = ("sglang_fused_moe_triton",)
MARLIN_KERNELS = ("sglang_marlin_moe",)
TRTLLM_KERNELS = ("moe_torch_flow_cutlass", "deepgemm", "moe_torch_flow")  # first present wins


@dataclass(frozen=True)
class Case:
    """One moe_layer_latency_ms case."""

    path: str
    gpu: str
    model: str
    moe_dtype: str
    kernel_source: str
    distribution: str
    source: str
    tp: int
    ep: int
    tokens_id: int
    tokens_per_gpu: float
    phase: str
    latency_ms: float

    @property
    def case_id(self) -> str:
        prec = PRECISION[self.moe_dtype]
        return f"aic-moe-{self.path}-{self.gpu}-{self.model}-{prec}-ep{self.ep}-etp{self.tp}-t{self.tokens_id}"


# ---------------------------------------------------------------- helpers


def version_key(version: str) -> tuple[tuple[int, ...], int, int]:
    """Sort key for version folders: 0.5.14 > 0.5.9, 1.3.0rc20 > 1.3.0rc10 > 1.2.0rc5, 0.5.6.post2 > 0.5.6."""
    m = re.fullmatch(r"(\d+(?:\.\d+)*)\.?(?:(dev|a|b|rc|post)(\d+))?", version)
    if not m:
        return ((), -1, 0)
    rank = {"dev": 0, "a": 1, "b": 2, "rc": 3, None: 4, "post": 5}[m.group(2)]
    return tuple(int(p) for p in m.group(1).split(".")), rank, int(m.group(3) or 0)


def newest_table(
    data: Path,
    system: str,
    op: str,
    framework: str,
    filename: str,
    accept: Callable[[pd.DataFrame], bool] | None = None,
) -> tuple[str, pd.DataFrame] | None:
    """(relative path, table) of the newest version folder holding ``filename`` (and passing ``accept``)."""
    base = data / system / op / framework
    folders = sorted((p for p in base.glob("*") if (p / filename).is_file()), key=lambda p: version_key(p.name))
    for folder in reversed(folders):
        df = pd.read_parquet(folder / filename)
        if accept is None or accept(df):
            return (folder / filename).relative_to(data).as_posix(), df
    return None


def sig(x: float, digits: int) -> str:
    """``x`` rounded to ``digits`` significant digits, written without an exponent."""
    return np.format_float_positional(float(f"{x:.{digits}g}"), trim="-")


def median_by(df: pd.DataFrame, keys: list[str], value: str = "latency") -> pd.DataFrame:
    """One row per key, the median ``value`` of duplicated keys."""
    return df.groupby(keys, as_index=False, dropna=False)[value].median()


# ---------------------------------------------------------------- collectives


def ar_kernel(kernel_source: str, backend: str) -> str:
    """graph / eager from a custom all-reduce row's kernel_source or backend, else kernel_source lower-cased."""
    text = f"{kernel_source} {backend}".lower()
    if "graph" in text:
        return "graph"
    if "eager" in text:
        return "eager"
    return kernel_source.lower()


def custom_allreduce_rows(data: Path, system: str, seen: Counter) -> list[pd.DataFrame]:
    out = []
    for stack in AR_STACKS:
        found = newest_table(data, system, "comm", stack, "custom_allreduce_perf.parquet")
        if found is None:
            print(f"  {system}: no comm/{stack} custom_allreduce table")
            continue
        rel, df = found
        backend = df.get("backend", df.get("implementation", pd.Series([""] * len(df), index=df.index))).fillna("")
        df = df.assign(kernel=[ar_kernel(k, b) for k, b in zip(df["kernel_source"], backend, strict=True)])
        for k, b, kern in zip(df["kernel_source"], backend, df["kernel"], strict=True):
            seen[(stack, k, b, kern)] += 1
        out.append(frame(df, SYSTEMS[system], stack, "allreduce_dtype", rel))
    return out


def nccl_rows(data: Path, system: str) -> list[pd.DataFrame]:
    found = newest_table(data, system, "comm", "nccl", "nccl_perf.parquet")
    if found is None:
        print(f"  {system}: no comm/nccl table")
        return []
    rel, df = found
    df = df[df["op_name"].isin(NCCL_OPS)].assign(kernel="nccl")
    return [frame(df, SYSTEMS[system], "nccl", "nccl_dtype", rel)]


def frame(df: pd.DataFrame, gpu: str, stack: str, dtype_col: str, rel: str) -> pd.DataFrame:
    """Rows in the CSV's columns: 16-bit rows only where an op has them, message size in bytes, latency in us."""
    df = df.assign(dtype=[SIXTEEN_BIT.get(d, d) for d in df[dtype_col]])
    has16 = df.groupby("op_name")["dtype"].transform(lambda s: (s == "bf16").any())
    df = df[(df["dtype"] == "bf16") | ~has16]
    df = median_by(df, ["op_name", "kernel", "dtype", "num_gpus", "message_size"])
    return pd.DataFrame(
        {
            "gpu": gpu,
            "stack": stack,
            "kernel": df["kernel"],
            "op": df["op_name"],
            "dtype": df["dtype"],
            "num_gpus": df["num_gpus"],
            "message_bytes": df["message_size"] * df["dtype"].map(DTYPE_BYTES),
            "latency_us": df["latency"] * 1000.0,
            "source": rel,
        }
    )


def write_collectives(data: Path, aic_version: str, out: Path) -> pd.DataFrame:
    seen: Counter = Counter()
    parts = []
    for system in SYSTEMS:
        parts += custom_allreduce_rows(data, system, seen) + nccl_rows(data, system)
    df = pd.concat(parts, ignore_index=True).sort_values(["gpu", "stack", "kernel", "op", "num_gpus", "message_bytes"])
    print("custom all-reduce kernel_source / backend -> kernel:")
    for (stack, k, b, kern), n in sorted(seen.items()):
        print(f"  {stack:7s} {k:30s} {b or '-':14s} -> {kern:22s} ({n} rows)")
    header = [
        f"# extracted by bench/extract_aic.py from aiconfigurator-core {aic_version} (NVIDIA, Apache-2.0) perf database,",
        "# systems/data/<system>/comm/{sglang,vllm,trtllm}/<newest version>/custom_allreduce_perf.parquet and",
        "# systems/data/<system>/comm/nccl/<newest version>/nccl_perf.parquet (the source column names the file).",
        f"# extracted {dt.date.today().isoformat()}. Units checked against AIC's reader: its latency column is milliseconds",
        "# (PerformanceResult is in ms; CustomAllReduce/NCCL queries return the table value) and message_size is an ELEMENT",
        "# count (AIC queries num_tokens x hidden elements; at equal message_size NCCL int8 takes ~half the time of fp16).",
        "# Converted: message_bytes = message_size x 2 (16-bit rows); latency_us = latency x 1000, 4 significant digits.",
        "# NCCL messages follow the nccl-tests convention: the whole buffer (all_gather output, reduce_scatter input).",
        "# columns:",
        "#   gpu: catalog GPU id (AIC system h100_sxm->h100-sxm, h200_sxm->h200, b200_sxm->b200, b300_sxm->b300, a100_sxm->a100-80gb)",
        "#   stack: sglang | vllm | trtllm (the framework's custom all-reduce) | nccl",
        "#   kernel: graph | eager (CUDA-graph captured or eager custom all-reduce), trtllm / trtllm_mnnvl_* (TRT-LLM's kernels), nccl",
        "#   op: all_reduce | all_gather | reduce_scatter",
        "#   dtype: element type (bf16 = bfloat16, or NCCL's 16-bit 'half'; 8-bit rows are dropped where 16-bit exist)",
        "#   num_gpus: GPUs in the collective (one NVLink domain)",
        "#   message_bytes: bytes of the message (the whole buffer)",
        "#   latency_us: measured latency of one call, microseconds",
        "#   source: the parquet file, relative to aiconfigurator_core/systems/data/",
    ]
    body = df.assign(latency_us=[sig(v, 4) for v in df["latency_us"]]).to_csv(index=False, lineterminator="\n")
    out.write_text("\n".join(header) + "\n" + body)
    print(f"wrote {out.relative_to(ROOT)}: {len(df)} rows")
    return df


# ---------------------------------------------------------------- MoE cases


def check_models(catalog: Path) -> None:
    """Each MODELS shape equals the catalog model's config.json (raises otherwise)."""
    for model, shape in MODELS.items():
        cfg = json.loads((catalog / "models" / model / "config.json").read_text())
        cfg = cfg.get("text_config", cfg)
        got = (
            cfg["hidden_size"],
            cfg.get("moe_intermediate_size") or cfg["intermediate_size"],
            cfg.get("n_routed_experts") or cfg.get("num_experts") or cfg.get("num_local_experts"),
            cfg["num_experts_per_tok"],
        )
        status = "ok" if tuple(got) == shape else "MISMATCH"
        print(f"  {model:16s} AIC (hidden, inter, experts, topk) {shape} vs config.json {tuple(got)}: {status}")
        if status != "ok":
            raise SystemExit(f"{model}: shape mismatch")


def with_model(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of the catalog models' shapes with a balanced/uniform distribution, a ``model`` column added."""
    by_shape = {v: k for k, v in MODELS.items()}
    keys = zip(df["hidden_size"], df["inter_size"], df["num_experts"], df["topk"], strict=True)
    df = df.assign(model=[by_shape.get(k) for k in keys])
    return df[df["model"].notna() & df["distribution"].isin(DISTRIBUTIONS)]


def has_kernels(kernels: Iterable[str]) -> Callable[[pd.DataFrame], bool]:
    wanted = set(kernels)
    return lambda df: "kernel_source" in df and not with_model(df[df["kernel_source"].isin(wanted)]).empty


def nearest(available: Iterable[float], target: float, lo: float = 0, hi: float = math.inf) -> float | None:
    """The available value nearest ``target`` in log space within [lo, hi]; a tie goes to the larger."""
    pool = [a for a in available if lo <= a <= hi]
    return min(pool, key=lambda a: (abs(math.log(a / target)), -a)) if pool else None


def pick_tokens(available: Iterable[float], decode: tuple[int, ...], phase: str) -> list[tuple[float, str]]:
    """(tokens, phase) of each grid target of ``phase``, nearest available in its range, without repeats."""
    avail = sorted(set(available))
    if phase == "decode":
        picks = [(nearest(avail, t, 0, DECODE_MAX), "moe_layer_decode") for t in decode]
    else:
        picks = [(nearest(avail, t, PREFILL_MIN), "moe_layer_prefill") for t in PREFILL]
    return list(dict.fromkeys((t, p) for t, p in picks if t is not None))


def deepep_cases(data: Path, system: str) -> list[Case]:
    """DeepSeek-V3 DeepEP cases; AIC's collector logs num_tokens = tokens per rank x EP
    (collector/sglang/collect_deepep_moe.py: ``num_tokens_log = num_token * simulated_ep_size``)."""
    cases = []
    for table, phase in (
        ("wideep_generation_moe_perf.parquet", "decode"),
        ("wideep_context_moe_perf.parquet", "prefill"),
    ):
        found = newest_table(data, system, "moe", "sglang", table, has_kernels(["deepepmoe"]))
        if found is None:
            continue
        rel, df = found
        df = with_model(df[(df["moe_tp_size"] == 1) & (df["moe_dtype"] == DEEPEP_DTYPE)])
        df = df.assign(per_rank=df["num_tokens"] / df["moe_ep_size"])
        eps = dict.fromkeys(nearest(df["moe_ep_size"].unique(), ep) for ep in DEEPEP_EPS)
        for (model, kernel, dist, ep), g in df[df["moe_ep_size"].isin(eps)].groupby(
            ["model", "kernel_source", "distribution", "moe_ep_size"]
        ):
            g = median_by(g, ["per_rank"])
            for t, ph in pick_tokens(g["per_rank"], DEEPEP_DECODE, phase):
                lat = float(g.loc[g["per_rank"] == t, "latency"].iloc[0])
                gpu = SYSTEMS[system]
                cases.append(
                    Case("deepep", gpu, model, DEEPEP_DTYPE, kernel, dist, rel, 1, int(ep), int(t), t, ph, lat)
                )
    return cases


def tp_ep_cases(path: str, rel: str, df: pd.DataFrame, system: str, kernels: tuple[str, ...]) -> list[Case]:
    """fused / trtllm cases: num_tokens is the total entering the layer; per rank = num_tokens / (tp x ep)."""
    df = with_model(df[df["kernel_source"].isin(kernels)])
    cases = []
    for model, dtypes, layouts in TP_EP_COMBOS:
        rows = df[(df["model"] == model) & df["moe_dtype"].isin(dtypes)]
        if rows.empty:
            continue
        dtype = next(d for d in dtypes if (rows["moe_dtype"] == d).any())
        kernel = next(k for k in kernels if ((rows["moe_dtype"] == dtype) & (rows["kernel_source"] == k)).any())
        rows = rows[(rows["moe_dtype"] == dtype) & (rows["kernel_source"] == kernel)]
        have = set(zip(rows["moe_tp_size"], rows["moe_ep_size"], strict=True))
        tp, ep = next((lay for lay in layouts if lay in have), (0, 0))
        for dist, g in rows[(rows["moe_tp_size"] == tp) & (rows["moe_ep_size"] == ep)].groupby("distribution"):
            g = median_by(g, ["num_tokens"])
            for phase in ("decode", "prefill"):
                for t, ph in pick_tokens(g["num_tokens"], TOTAL_DECODE, phase):
                    lat = float(g.loc[g["num_tokens"] == t, "latency"].iloc[0])
                    gpu = SYSTEMS[system]
                    cases.append(
                        Case(path, gpu, model, dtype, kernel, dist, rel, tp, ep, int(t), t / (tp * ep), ph, lat)
                    )
    return cases


def moe_cases(data: Path, system: str) -> list[Case]:
    cases = deepep_cases(data, system)
    fused = newest_table(data, system, "moe", "sglang", "moe_perf.parquet", has_kernels(FUSED_KERNELS))
    if fused:
        cases += tp_ep_cases("fused", *fused, system, FUSED_KERNELS)
    trt = newest_table(data, system, "moe", "trtllm", "moe_perf.parquet", has_kernels(TRTLLM_KERNELS))
    if trt:
        cases += tp_ep_cases("trtllm", *trt, system, TRTLLM_KERNELS)
    marlin = newest_table(data, system, "moe", "sglang", "moe_perf.parquet", has_kernels(MARLIN_KERNELS))
    if marlin:
        cases += tp_ep_cases("marlin", *marlin, system, MARLIN_KERNELS)
    return cases


def case_yaml(c: Case, aic_version: str) -> str:
    n = c.tp * c.ep
    w = PRECISION[c.moe_dtype]
    tokens = int(c.tokens_per_gpu) if float(c.tokens_per_gpu).is_integer() else sig(c.tokens_per_gpu, 6)
    source = f"NVIDIA aiconfigurator {aic_version} measured data, {c.source} ({c.kernel_source}, {c.moe_dtype}, distribution {c.distribution})"
    return "\n".join(
        [
            f"- id: {c.case_id}",
            f"  source: '{source}'",
            f"  model: {c.model}",
            f"  gpu: {c.gpu}",
            "  gpus_per_node: 8",
            f"  num_gpus: {n}",
            f"  phase: {c.phase}",
            f"  layout: {{attention_tp: 1, attention_dp: {n}, ep: {c.ep}, expert_tp: {c.tp}, pp: 1}}",
            f"  precision: {{weights: {w}, experts: {w}, kv: bf16, dispatch: fp8, combine: bf16}}",
            f"  workload: {{tokens_per_gpu: {tokens}}}",
            f"  options: {{overlap: none, redundant_experts: 0, kernel_path: {c.path}}}",
            f"  measured: {{metric: moe_layer_latency_ms, value: {sig(c.latency_ms, 4)}, unit: ms}}",
        ]
    )


def coverage(cases: list[Case]) -> list[str]:
    """Rows gpu, columns path x decode/prefill, then per-model counts."""
    cols = [(p, f) for p in ("deepep", "fused", "trtllm", "marlin") for f in ("decode", "prefill")]
    count = Counter((c.gpu, c.path, c.phase.removeprefix("moe_layer_")) for c in cases)
    head = "gpu        " + " ".join(f"{p[:6]}-{f[:3]:>3s}" for p, f in cols) + "  total"
    lines = [head]
    for gpu in dict.fromkeys(SYSTEMS.values()):
        n = [count[(gpu, p, f)] for p, f in cols]
        lines.append(f"{gpu:10s} " + " ".join(f"{v:>10d}" for v in n) + f"  {sum(n):5d}")
    models = Counter(c.model for c in cases)
    lines.append("per model: " + ", ".join(f"{m} {n}" for m, n in models.items()) + f"; all {len(cases)}")
    return lines


def write_cases(data: Path, aic_version: str, out: Path) -> list[Case]:
    print("model shapes vs catalog config.json:")
    check_models(ROOT / "catalogs")
    cases: list[Case] = []
    for system in SYSTEMS:
        found = moe_cases(data, system)
        dtypes = sorted({c.moe_dtype for c in found if c.model == "gpt-oss-120b"})
        print(f"  {system}: {len(found)} cases; gpt-oss dtype(s) taken: {dtypes or '-'}")
        cases += found
    ids = [c.case_id for c in cases]
    dup = [i for i, n in Counter(ids).items() if n > 1]
    if dup:
        raise SystemExit(f"duplicate case ids: {dup[:5]}")
    used: dict[tuple[str, str, str], dict[str, set[str]]] = {}
    for c in cases:
        entry = used.setdefault((c.path, c.kernel_source, c.source.split("/")[3]), {"dtypes": set(), "gpus": set()})
        entry["dtypes"].add(c.moe_dtype)
        entry["gpus"].add(c.gpu)
    kernels = [
        f"{p}: {k} {v} [{', '.join(sorted(e['dtypes']))}] on {', '.join(g for g in SYSTEMS.values() if g in e['gpus'])}"
        for (p, k, v), e in sorted(used.items())
    ]
    table = coverage(cases)
    print("coverage (cases):")
    print("\n".join("  " + line for line in table))
    header = [
        f"# Measured kernel latencies from NVIDIA aiconfigurator-core {aic_version} (Apache-2.0) perf database,",
        "# aiconfigurator_core/systems/data/<system>/moe/... (each case's source names the parquet file).",
        f"# Extracted {dt.date.today().isoformat()} by bench/extract_aic.py. Value: the routed experts' grouped GEMMs of one",
        "# MoE layer on one GPU (AIC 'latency' column, ms), no dispatch/combine. Distribution filter: only 'balanced'",
        "# (moe_perf) and 'uniform' (SGLang wide-EP) rows, never power_law; duplicated keys take the median.",
        "# Paths (options.kernel_path):",
        "#   deepep: SGLang DeepEP MoE (DeepGEMM masked grouped GEMM), wideep_{generation,context}_moe_perf; the table's",
        "#     num_tokens is tokens per rank x EP, so tokens_per_gpu = num_tokens / ep and t<N> in the id is per rank.",
        "#   fused: SGLang fused MoE (Triton; gpt-oss w4a16_mxfp4 on Hopper/Ada), moe_perf; trtllm: TRT-LLM MoE, moe_perf.",
        "#     num_tokens is the total entering the layer, seen by every rank: tokens_per_gpu = num_tokens / (ep x expert_tp)",
        "#     and t<N> in the id is that total. Phase: decode if tokens <= 512, prefill if >= 2048 (per rank for deepep,",
        "#     total for fused/trtllm). gpus_per_node is 8 everywhere (AIC measures within one node).",
        "# Kernels taken (path: kernel_source version [AIC moe_dtype] on GPUs):",
        *[f"#   {line}" for line in kernels],
        "# Coverage (cases per GPU, path and phase):",
        *[f"#   {line}" for line in table],
    ]
    out.write_text("\n".join(header) + "\n" + "\n".join(case_yaml(c, aic_version) for c in cases) + "\n")
    print(f"wrote {out.relative_to(ROOT)}: {len(cases)} cases")
    return cases


# ---------------------------------------------------------------- attention cases

ATTN_STACKS = ("trtllm", "sglang", "vllm")  # a table's framework: most grid cells, ties in this order
MLA_SYSTEMS = ("h100_sxm", "h200_sxm", "b200_sxm", "gb200", "b300_sxm", "gb300")  # DeepSeek-V3 fits 8 of these
KV_DTYPE = {"bfloat16": "bf16", "fp8": "fp8"}
AIC_KV = {v: k for k, v in KV_DTYPE.items()}


@dataclass(frozen=True)
class AttnModel:
    """Attention geometry of a catalog model as AIC keys its tables (GQA: heads, kv heads, head_dim)."""

    kind: str  # gqa | mla
    heads: int
    kv_heads: int  # GQA only
    head_dim: int  # GQA only
    moe: bool

    def per_gpu(self, tp: int) -> tuple[int, int]:
        """(q heads, kv heads) on one GPU: AIC's num_heads // tp and ceil(kv / tp) (MLA: one latent head)."""
        return self.heads // tp, (1 if self.kind == "mla" else -(-self.kv_heads // tp))


ATTN_MODELS: dict[str, AttnModel] = {
    "deepseek-v3": AttnModel("mla", 128, 1, 0, True),
    "qwen3-235b-a22b": AttnModel("gqa", 64, 4, 128, True),
    "llama-3-70b": AttnModel("gqa", 64, 8, 128, False),
}
# AIC's MLA tables are DeepSeek-V3 geometry only (collector/trtllm/collect_mla.py raises on any other).
MLA_GEOMETRY = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}

# Grids (a missing value takes the nearest available one, per batch, without repeats): the full grid for
# each model's main KV dtype, a 5-cell sub-grid for fp8 KV and for Llama (its GQA kernel is Qwen's).
FULL_GRID = ((1, 16, 64, 256), (1024, 8192, 32768), (1024, 4096, 16384))  # decode batches, contexts; prompts
SUB_GRID = ((1, 64), (8192, 32768), (16384,))
ATTN_PLAN: tuple[tuple[str, int, str, tuple[tuple[int, ...], ...]], ...] = (  # model, attention TP, KV, grid
    ("deepseek-v3", 8, "bf16", FULL_GRID),
    ("deepseek-v3", 8, "fp8", SUB_GRID),
    ("qwen3-235b-a22b", 4, "bf16", FULL_GRID),
    ("qwen3-235b-a22b", 4, "fp8", SUB_GRID),
    ("llama-3-70b", 8, "bf16", SUB_GRID),
)
# (kind, phase) -> (op folder, table file)
ATTN_TABLES = {
    ("gqa", "decode"): ("attention", "generation_attention_perf.parquet"),
    ("gqa", "prefill"): ("attention", "context_attention_perf.parquet"),
    ("mla", "decode"): ("mla", "generation_mla_perf.parquet"),
    ("mla", "prefill"): ("mla", "context_mla_perf.parquet"),
}


@dataclass(frozen=True)
class AttnCase:
    """One attention_latency_us case."""

    stack: str
    source: str
    kernel_source: str
    dtypes: str
    gpu: str
    model: str
    tp: int
    kv: str
    phase: str  # decode | prefill
    batch: int
    context: int
    latency_ms: float

    @property
    def case_id(self) -> str:
        return (
            f"aic-attn-{self.phase}-{self.stack}-{self.gpu}-{self.model}-tp{self.tp}"
            f"-b{self.batch}-ctx{self.context}-kv{self.kv}"
        )


def check_attn_models(catalog: Path) -> None:
    """Each ATTN_MODELS geometry equals the catalog model's config.json (raises otherwise)."""
    for model, m in ATTN_MODELS.items():
        cfg = json.loads((catalog / "models" / model / "config.json").read_text())
        cfg = cfg.get("text_config", cfg)
        heads = cfg["num_attention_heads"]
        if m.kind == "mla":
            got: tuple = (heads, *(cfg.get(k) for k in MLA_GEOMETRY))
            want: tuple = (m.heads, *MLA_GEOMETRY.values())
        else:
            got = (heads, cfg["num_key_value_heads"], cfg.get("head_dim") or cfg["hidden_size"] // heads)
            want = (m.heads, m.kv_heads, m.head_dim)
        status = "ok" if got == want else "MISMATCH"
        print(f"  {model:16s} {m.kind} attention {want} vs config.json {got}: {status}")
        if status != "ok":
            raise SystemExit(f"{model}: attention geometry mismatch")


def weights_dtype(catalog: Path, model: str) -> str:
    """fp8 for an FP8 checkpoint (config.json quantization_config), else bf16."""
    cfg = json.loads((catalog / "models" / model / "config.json").read_text())
    quant = cfg.get("quantization_config") or {}
    return "fp8" if quant.get("quant_method") == "fp8" else "bf16"


def attn_rows(df: pd.DataFrame, kind: str, phase: str) -> pd.DataFrame:
    """The table in common columns: kernel, heads, kv_heads, attn, kv, batch, ctx (decode: tokens cached =
    step; prefill: prompt = isl), latency (ms). GQA rows: head_dim 128, full attention (window 0), BF16 FMHA."""
    if kind == "gqa":
        window = df["window_size"] if "window_size" in df else 0
        df = df[(df["head_dim"] == 128) & (window == 0) & (df["attn_dtype"] == "bfloat16")]
        kv_heads, attn = df["num_key_value_heads"], df["attn_dtype"]
    else:
        df = df[df["mla_dtype"] == "bfloat16"]
        kv_heads, attn = 1, df["mla_dtype"]
    return pd.DataFrame(
        {
            "kernel": df["kernel_source"],
            "heads": df["num_heads"],
            "kv_heads": kv_heads,
            "attn": attn,
            "kv": df["kv_cache_dtype"].map(KV_DTYPE),
            "batch": df["batch_size"],
            "ctx": df["step"] if phase == "decode" else df["isl"],
            "latency": df["latency"],
        }
    )


def attn_cells(rows: pd.DataFrame, phase: str, grid: tuple[tuple[int, ...], ...]) -> list[tuple[int, int, bool]]:
    """(batch, ctx, exact) of each grid target, the nearest available batch then context, without repeats.
    Decode targets a context of N tokens with the row caching N - 1 (AIC's steps are 2^k - 1); prefill
    takes batch 1 (the planner's prompt is one sequence)."""
    batches, contexts, prompts = grid
    targets = [(b, c) for b in batches for c in contexts] if phase == "decode" else [(1, p) for p in prompts]
    shift = 1 if phase == "decode" else 0
    cells: dict[tuple[int, int], bool] = {}
    for b, c in targets:
        bb = nearest(rows["batch"].unique(), b)
        if bb is None:
            continue
        avail = rows.loc[rows["batch"] == bb, "ctx"].unique()
        cc = nearest([a for a in avail if a > 0], c - shift)
        if cc is not None:
            cells.setdefault((int(bb), int(cc)), bb == b and cc == c - shift)
    return [(b, c, exact) for (b, c), exact in cells.items()]


def plan_rows(rows: pd.DataFrame, model: str, tp: int, kv: str) -> pd.DataFrame:
    heads, kv_heads = ATTN_MODELS[model].per_gpu(tp)
    return rows[(rows["heads"] == heads) & (rows["kv_heads"] == kv_heads) & (rows["kv"] == kv)]


def table_cases(
    stack: str, rel: str, df: pd.DataFrame, system: str, kind: str, phase: str
) -> tuple[int, list[AttnCase]]:
    """(exact grid cells, cases) of one table: the kernel_source with the most exact cells (ties: most cases,
    then name); duplicated keys take the median."""
    rows = attn_rows(df, kind, phase)
    best: tuple[int, int, str, list[AttnCase]] | None = None
    for kernel in sorted(rows["kernel"].unique()):
        exact, cases = 0, []
        for model, tp, kv, grid in ATTN_PLAN:
            if ATTN_MODELS[model].kind != kind:
                continue
            sel = plan_rows(rows[rows["kernel"] == kernel], model, tp, kv)
            if sel.empty:
                continue
            sel = median_by(sel, ["attn", "batch", "ctx"])
            for b, c, hit in attn_cells(sel, phase, grid):
                lat = float(sel.loc[(sel["batch"] == b) & (sel["ctx"] == c), "latency"].iloc[0])
                attn = str(sel["attn"].iloc[0])
                dtypes = f"{'mla' if kind == 'mla' else 'attn'}_dtype {attn}, kv_cache_dtype {AIC_KV[kv]}"
                cases.append(AttnCase(stack, rel, kernel, dtypes, SYSTEMS[system], model, tp, kv, phase, b, c, lat))
                exact += hit
        if best is None or (exact, len(cases)) > best[:2]:
            best = (exact, len(cases), kernel, cases)
    return (best[0], best[3]) if best else (0, [])


def attention_cases(data: Path, system: str) -> tuple[list[AttnCase], list[str]]:
    """Cases of one GPU and a line per table taken (framework, version, kernel)."""
    cases: list[AttnCase] = []
    taken: list[str] = []
    for (kind, phase), (op, filename) in ATTN_TABLES.items():
        if kind == "mla" and system not in MLA_SYSTEMS:
            continue
        found = []
        for stack in ATTN_STACKS:
            table = newest_table(data, system, op, stack, filename)
            if table is not None:
                exact, got = table_cases(stack, *table, system, kind, phase)
                found.append((exact, len(got), -ATTN_STACKS.index(stack), got, table[0]))
        if not found or not max(found)[3]:
            print(f"  {system}: no {op} {filename} with the plan's shapes")
            continue
        exact, n, _, got, rel = max(found)
        cases += got
        others = ", ".join(f"{f[4].split('/')[2]} {f[0]}" for f in found if f[4] != rel)
        taken.append(f"{SYSTEMS[system]} {kind}-{phase}: {rel} [{got[0].kernel_source}] {exact}/{n} exact")
        print(f"  {taken[-1]} (others: {others or '-'})")
    return cases, taken


def attn_case_yaml(c: AttnCase, aic_version: str, weights: dict[str, str]) -> str:
    moe = ATTN_MODELS[c.model].moe
    ep, etp = (c.tp, 1) if moe else (1, c.tp)
    source = f"NVIDIA aiconfigurator {aic_version} measured data, {c.source} ({c.kernel_source}, {c.dtypes})"
    return "\n".join(
        [
            f"- id: {c.case_id}",
            f"  source: '{source}'",
            f"  model: {c.model}",
            f"  gpu: {c.gpu}",
            "  gpus_per_node: 8",
            f"  num_gpus: {c.tp}",
            f"  phase: attention_{c.phase}",
            f"  layout: {{attention_tp: {c.tp}, attention_dp: 1, ep: {ep}, expert_tp: {etp}, pp: 1}}",
            f"  precision: {{weights: {weights[c.model]}, kv: {c.kv}, dispatch: bf16, combine: bf16}}",
            f"  workload: {{batch: {c.batch}, context_len: {c.context}}}",
            f"  options: {{stack: {c.stack}}}",
            f"  measured: {{metric: attention_latency_us, value: {sig(c.latency_ms * 1000.0, 4)}, unit: us}}",
        ]
    )


def attn_coverage(cases: list[AttnCase]) -> list[str]:
    """Rows gpu, columns model x decode/prefill."""
    models = list(ATTN_MODELS)
    count = Counter((c.gpu, c.model, c.phase) for c in cases)
    head = "gpu        " + " ".join(f"{m[:15]:>15s} dec/pre" for m in models) + "  total"
    lines = [head]
    for gpu in dict.fromkeys(SYSTEMS.values()):
        cells = [(count[(gpu, m, "decode")], count[(gpu, m, "prefill")]) for m in models]
        total = sum(d + p for d, p in cells)
        lines.append(f"{gpu:10s} " + " ".join(f"{f'{d}/{p}':>23s}" for d, p in cells) + f"  {total:5d}")
    lines.append(f"all {len(cases)}")
    return lines


def write_attention_cases(data: Path, aic_version: str, out: Path) -> list[AttnCase]:
    print("attention geometry vs catalog config.json:")
    check_attn_models(ROOT / "catalogs")
    weights = {m: weights_dtype(ROOT / "catalogs", m) for m in ATTN_MODELS}
    cases: list[AttnCase] = []
    taken: list[str] = []
    for system in SYSTEMS:
        found, lines = attention_cases(data, system)
        cases += found
        taken += lines
    dup = [i for i, n in Counter(c.case_id for c in cases).items() if n > 1]
    if dup:
        raise SystemExit(f"duplicate case ids: {dup[:5]}")
    table = attn_coverage(cases)
    print("attention coverage (cases):")
    print("\n".join("  " + line for line in table))
    plan = [
        f"{m} TP {tp} ({'/'.join(map(str, ATTN_MODELS[m].per_gpu(tp)))} heads per GPU) kv {kv}: "
        + ("full grid" if grid == FULL_GRID else "sub-grid")
        for m, tp, kv, grid in ATTN_PLAN
    ]
    header = [
        f"# Measured attention-core latencies from NVIDIA aiconfigurator-core {aic_version} (Apache-2.0) perf database,",
        "# aiconfigurator_core/systems/data/<system>/{attention,mla}/<framework>/<version>/ (each case's source names the",
        f"# parquet file). Extracted {dt.date.today().isoformat()} by bench/extract_aic.py. Value: one layer's attention core on one GPU",
        "# (QK^T, softmax, PV over the KV cache; no q/k/v/o projections, no MLA absorption BMMs), the table's 'latency'",
        "# (ms, CUDA-graph replay mean) x 1000 -> us, 4 significant digits; duplicated keys would take the median.",
        "# Tables (checked against AIC's collectors and its Rust loader, perf_database/attention.rs):",
        "#   GQA decode: attention/*/generation_attention_perf; prefill: attention/*/context_attention_perf. num_heads and",
        "#     num_key_value_heads are PER GPU (AIC queries num_heads // tp, ceil(kv_heads / tp)); rows taken: head_dim 128,",
        "#     window_size 0, attn_dtype bfloat16 (FMHA in BF16; kv_cache_dtype bfloat16 or fp8). TRT-LLM's torch_flow row",
        "#     times its whole attention op (QKV preprocessing with fused RoPE + KV-cache append, then FMHA / XQA); AIC",
        "#     uses decode rows as they are and adds a RoPE + KV-write memory estimate to prefill rows.",
        "#   MLA (DeepSeek-V3 geometry) decode: mla/*/generation_mla_perf (absorbed MQA over the 576-wide latent cache);",
        "#     prefill: mla/*/context_mla_perf (FMHA, q/k head 192, v 128, per-head K/V). num_heads is per GPU; the",
        "#     tp_size column is only a label (equal num_heads rows at different tp_size are the same kernel, and the",
        "#     loader keys on num_heads): attention_tp = 128 / num_heads. mla_*_module_perf and SGLang's",
        "#     wideep_*_mla_perf time the whole MLA module (with q_b/kv_b/o projections): not used.",
        "#   Decode rows: isl 1, step = tokens already cached; the new token attends to step + 1 (AIC's kv length is",
        "#     isl + step). context_len = step (1023, 8191, ...: the grid's 1024, 8192, ... minus the new token).",
        "#   Prefill rows: isl = prompt length, causal, no cached prefix (step 0); batch 1, context_len = isl.",
        "# Framework: per GPU and table the one with the most exact grid cells (ties: trtllm, sglang, vllm), its newest",
        "# version with the shapes; options.stack names it. Layout: heads split over attention_tp; MoE models ep = tp.",
        "# No MLA cases on a100-80gb / l40s (DeepSeek-V3 does not fit 8 of them; their TRT-LLM 1.0.0 MLA rows are slow).",
        "# Grid: full = decode batch {1, 16, 64, 256} x context {1024, 8192, 32768}, prefill batch 1 x prompt {1024, 4096,",
        "# 16384}; sub = decode {1, 64} x {8192, 32768}, prefill {16384}; a missing cell takes the nearest available",
        "# (large batch x long context is uncollected), without repeats. Plan:",
        *[f"#   {line}" for line in plan],
        "# Tables taken (gpu kind-phase: file [kernel_source] exact cells / cases):",
        *[f"#   {line}" for line in taken],
        "# Coverage (cases per GPU, model and phase):",
        *[f"#   {line}" for line in table],
    ]
    body = "\n".join(attn_case_yaml(c, aic_version, weights) for c in cases)
    out.write_text("\n".join(header) + "\n" + body + "\n")
    print(f"wrote {out.relative_to(ROOT)}: {len(cases)} cases")
    return cases


# ---------------------------------------------------------------- dense GEMM cases

GEMM_STACKS = ("sglang", "trtllm")  # the first with a gemm table, its newest version
GEMM_M = (1, 16, 128, 1024, 8192)  # rows (tokens); a missing one takes the nearest available, without repeats
# (n, k): the weight is n x k (n output features); what the shape stands for in an MoE model.
GEMM_SHAPES: dict[tuple[int, int], str] = {
    (7168, 2048): "shared-expert / dense-FFN down (DeepSeek-V3 shared expert: 2048 -> 7168)",
    (4096, 7168): "shared-expert gate+up (DeepSeek-V3: 7168 -> 2 x 2048)",
    (16384, 1536): "q_b-like (DeepSeek-V3's q_b, 24576 x 1536, is not on AIC's grid)",
    (7168, 16384): "attention output (DeepSeek-V3 o_proj: 128 heads x 128 -> 7168)",
}
GEMM_PROBE = ((24576, 1536), (2048, 7168), (65536, 7168))  # only printed: on the grid or not
# Planner precision -> kernel choices in order: (kernel_source substring, gemm_dtype); "" matches any kernel.
GEMM_KERNELS: dict[str, tuple[tuple[str, str], ...]] = {
    "fp8": (("deepgemm", "fp8_block"), ("", "fp8"), ("", "fp8_block")),
    "bf16": (("torch_linear", "bfloat16"), ("", "bfloat16")),
}


@dataclass(frozen=True)
class GemmCase:
    """One gemm_latency_us case."""

    stack: str
    source: str
    kernel_source: str
    gemm_dtype: str
    gpu: str
    precision: str  # fp8 | bf16
    m: int
    n: int
    k: int
    latency_ms: float

    @property
    def case_id(self) -> str:
        return f"aic-gemm-{self.stack}-{self.gpu}-{self.precision}-m{self.m}-n{self.n}-k{self.k}"


def gemm_kernel(pairs: list[tuple[str, str]], precision: str) -> tuple[str, str] | None:
    """The (kernel_source, gemm_dtype) a precision takes: its first GEMM_KERNELS choice present (ties: name)."""
    for part, dtype in GEMM_KERNELS[precision]:
        hit = [(ks, d) for ks, d in pairs if d == dtype and part in ks.lower()]
        if hit:
            return hit[0]
    return None


def gemm_cases(data: Path, system: str) -> tuple[list[GemmCase], str]:
    """Cases of one GPU and a line naming the table and kernels taken."""
    gpu = SYSTEMS[system]
    found = next(
        ((s, t) for s in GEMM_STACKS if (t := newest_table(data, system, "gemm", s, "gemm_perf.parquet"))), None
    )
    if found is None:
        print(f"  {gpu}: no gemm table")
        return [], f"{gpu}: -"
    stack, (rel, df) = found
    pairs = sorted(set(zip(df["kernel_source"], df["gemm_dtype"], strict=True)))
    print(f"  {gpu}: {rel} has " + ", ".join(f"{ks} / {d}" for ks, d in pairs))
    cases: list[GemmCase] = []
    taken = []
    for precision in GEMM_KERNELS:
        pick = gemm_kernel(pairs, precision)
        if pick is None:
            print(f"    {precision}: none")
            continue
        rows = median_by(df[(df["kernel_source"] == pick[0]) & (df["gemm_dtype"] == pick[1])], ["m", "n", "k"])
        have = set(zip(rows["n"], rows["k"], strict=True))
        probe = ", ".join(f"{n}x{k} {'yes' if (n, k) in have else 'no'}" for n, k in (*GEMM_SHAPES, *GEMM_PROBE))
        print(f"    {precision}: took {pick[0]} / {pick[1]}; (n x k) on the grid: {probe}")
        taken.append(f"{precision} {pick[0]} [{pick[1]}]")
        for n, k in GEMM_SHAPES:
            sel = rows[(rows["n"] == n) & (rows["k"] == k)]
            ms = dict.fromkeys(nearest(sel["m"].unique(), m) for m in GEMM_M)
            for m in (m for m in ms if m is not None):
                lat = float(sel.loc[sel["m"] == m, "latency"].iloc[0])
                cases.append(GemmCase(stack, rel, pick[0], pick[1], gpu, precision, int(m), n, k, lat))
    return cases, f"{gpu}: {rel} " + (", ".join(taken) or "-")


def gemm_case_yaml(c: GemmCase, aic_version: str) -> str:
    source = f"NVIDIA aiconfigurator {aic_version} measured data, {c.source} ({c.kernel_source}, {c.gemm_dtype})"
    return "\n".join(
        [
            f"- id: {c.case_id}",
            f"  source: '{source}'",
            "  model: deepseek-v3",
            f"  gpu: {c.gpu}",
            "  gpus_per_node: 8",
            "  num_gpus: 1",
            "  phase: gemm",
            "  layout: {attention_tp: 1, attention_dp: 1, ep: 1, expert_tp: 1, pp: 1}",
            f"  precision: {{weights: {c.precision}, kv: bf16, dispatch: bf16, combine: bf16}}",
            f"  workload: {{m: {c.m}, n: {c.n}, k: {c.k}}}",
            f"  options: {{stack: {c.stack}}}",
            f"  measured: {{metric: gemm_latency_us, value: {sig(c.latency_ms * 1000.0, 4)}, unit: us}}",
        ]
    )


def gemm_coverage(cases: list[GemmCase]) -> list[str]:
    """Rows gpu, columns (n x k) with fp8/bf16 counts."""
    count = Counter((c.gpu, c.n, c.k, c.precision) for c in cases)
    head = "gpu        " + " ".join(f"{f'{n}x{k} fp8/bf16':>20s}" for n, k in GEMM_SHAPES) + "  total"
    lines = [head]
    for gpu in dict.fromkeys(SYSTEMS.values()):
        cells = [(count[(gpu, n, k, "fp8")], count[(gpu, n, k, "bf16")]) for n, k in GEMM_SHAPES]
        total = sum(a + b for a, b in cells)
        lines.append(f"{gpu:10s} " + " ".join(f"{f'{a}/{b}':>20s}" for a, b in cells) + f"  {total:5d}")
    lines.append(f"all {len(cases)}")
    return lines


def write_gemm_cases(data: Path, aic_version: str, out: Path) -> list[GemmCase]:
    print("dense GEMM tables (kernel_source / gemm_dtype) and the kernels taken:")
    cases: list[GemmCase] = []
    taken: list[str] = []
    for system in SYSTEMS:
        found, line = gemm_cases(data, system)
        cases += found
        taken.append(line)
    dup = [i for i, n in Counter(c.case_id for c in cases).items() if n > 1]
    if dup:
        raise SystemExit(f"duplicate case ids: {dup[:5]}")
    table = gemm_coverage(cases)
    print("dense GEMM coverage (cases):")
    print("\n".join("  " + line for line in table))
    header = [
        f"# Measured dense GEMM latencies from NVIDIA aiconfigurator-core {aic_version} (Apache-2.0) perf database,",
        "# aiconfigurator_core/systems/data/<system>/gemm/<framework>/<version>/gemm_perf.parquet (each case's source",
        f"# names the file). Extracted {dt.date.today().isoformat()} by bench/extract_aic.py. Value: one GEMM [m, k] x [k, n] (weight",
        "# n x k, BF16 output) on one GPU, the table's 'latency' (ms) x 1000 -> us, 4 significant digits; duplicated",
        "# keys would take the median. For the planner's dense_gemm family (attention projections, shared experts,",
        "# dense FFNs, LM head). Pending: rename to .yaml once the catalog knows phase gemm / gemm_latency_us.",
        "# What a row times (AIC collector/sglang/collect_gemm.py): the op on up to 6 weight copies run in turn (fewer",
        "#   when memory is short), latency = total / copies, so a weight stays in L2 only if 6 copies fit there.",
        "#   FP8 ops include the activations' quantization (DeepGEMM: per-token-group 1x128 quant, then gemm_nt with",
        "#   128x128 weight block scales; sgl_kernel fp8_scaled_mm: per-token quant, per-channel weight scales).",
        "#   BF16: torch F.linear (cuBLAS). precision.weights: fp8 for fp8_block / fp8 rows, bf16 for bfloat16 rows.",
        "# Framework: SGLang's newest version with a gemm table (else TRT-LLM); options.stack names it. Kernels: fp8 =",
        "#   DeepGEMM fp8_block where the table has it (Hopper, Blackwell), else the per-tensor-activation fp8 one",
        "#   (L40S); bf16 = torch_linear, else the table's one bfloat16 kernel (A100 SGLang 0.5.10: 'sglang'). No FP8 on A100.",
        "# Shapes (n x k): " + "; ".join(f"{n}x{k} {what}" for (n, k), what in GEMM_SHAPES.items()) + ".",
        f"#   m in {{{', '.join(map(str, GEMM_M))}}} (all on AIC's grid). model: deepseek-v3 only fills the schema.",
        "# Oddities: Hopper DeepGEMM spikes at some m (H100 4096x7168 m=768/1024: 145-161 us vs 77 us at m=1025 and",
        "#   78 us for BF16, H200 alike; 8192x7168 m=512): a config-heuristic pathology, kept as measured. Blackwell",
        "#   m<=128 sits on a ~7-13 us floor where FP8 (its quant kernel included) is no faster than BF16 below ~30 M",
        "#   weights. L40S FP8 7168x2048 m<=16 (7.4 us, ~2 TB/s of weights, over its 864 GB/s GDDR6): 6 FP8 copies",
        "#   (88 MB) fit its 96 MB L2.",
        "# Tables taken (gpu: file, precision kernel_source [gemm_dtype]):",
        *[f"#   {line}" for line in taken],
        "# Coverage (cases per GPU and shape, fp8/bf16):",
        *[f"#   {line}" for line in table],
    ]
    out.write_text("\n".join(header) + "\n" + "\n".join(gemm_case_yaml(c, aic_version) for c in cases) + "\n")
    print(f"wrote {out.relative_to(ROOT)}: {len(cases)} cases")
    return cases


# ---------------------------------------------------------------- main


def default_data_dir() -> Path:
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec and spec.origin:
        return Path(spec.origin).parent / "systems" / "data"
    return Path("/tmp/aicenv/lib/python3.11/site-packages/aiconfigurator_core/systems/data")


def aic_version_default() -> str:
    try:
        return importlib.metadata.version("aiconfigurator-core")
    except importlib.metadata.PackageNotFoundError:
        return "0.12.0"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=None, help="aiconfigurator_core/systems/data of an AIC install")
    ap.add_argument("--aic-version", default=None, help="AIC version named in the provenance (default: installed)")
    args = ap.parse_args(argv)
    data = args.data_dir or default_data_dir()
    version = args.aic_version or aic_version_default()
    if not data.is_dir():
        raise SystemExit(f"no AIC data folder at {data}")
    print(f"AIC {version} data: {data}")
    write_collectives(data, version, CSV_OUT)
    write_cases(data, version, CASES_OUT)
    write_attention_cases(data, version, ATTN_OUT)
    write_gemm_cases(data, version, GEMM_OUT)


if __name__ == "__main__":
    main()
