"""Published batch-1 / low-concurrency served steps against the planner's kernel step, and the per-step costs
fitted on them (issue 35, "A served step").

    python -m bench.served_step            # the table: measured, kernel-only and served steps, errors before/after
    python -m bench.served_step --write    # also write the fits into catalogs/served_step.yaml

The measured step of a point is its TPOT (``1000 / tok/s/user`` where the source gives a speed); with
speculative decoding it is one verification cycle, ``AL x TPOT`` (the source's mean accepted length AL). The
kernel step is the planner's decode step for the point's deployment at its concurrency (``kernel_step_ms``, the
one call into the step model), plus, at ``c > 1`` clients of a colocated engine, the prefill of the other ``c - 1``
clients' prompts spread over an output length (a disaggregated decode pool prefills nothing). A stack's served step
adds ``fixed + per_layer x layers + per_indexer x indexer layers + per_draft x draft passes + rocm`` (``rocm``: 1 on a
point measured on an AMD GPU, the engine's ROCm build, usable where the stack has such points); each stack's form is,
among those with at most two terms (non-negative least squares of the relative error), the one that puts the most
points within 20% under leave-one-out (the issue's batch-1 target), then the lowest median, then the lowest max,
fitted on its attention-TP points. (The median alone ranked first until the InferenceX DeepSeek-R1 sweeps came in:
ten points without an indexer or an AMD GPU then favoured a plain fixed cost that left GLM-5 and the MI355X points
24-41% short for half a point of median.) Where a stack has fitted points with attention DP > 1
(rank synchronisation), ``dp_attention`` replaces ``fixed`` for them: fitted on those points alone with the other
terms as fitted (leave-one-out too). Only points with ``fit: true`` are fitted; the others are printed with their
error (the reason is in the file).

Where a stack's chosen form has no draft term, its draft passes are priced from same-source pairs instead: a drafting
point whose entry names, in ``draft_pair``, a plain point the same source measured on the same image, model,
layout and lengths. The pair's per-draft cost is ``((cycle - plain) measured - (cycle - plain) kernel) / draft
passes``: whatever the image pays per step on top of the kernels appears in both steps and cancels, which is why a
pair may stand on an image too old for the absolute fit (``fit: false``). The stack's ``paired_draft_s`` is the mean
over its pairs. It is evidence, not a drafting mode: a pair at one draft length cannot tell a cost per draft pass
from one per verification cycle (a draft-extend pass, a host sync), and priced per pass it would turn the
Speculative page's best draft length for SGLang from its recipes' 3 to 1. The frontier cases that draft on SGLang
take it as their ``draft_cost`` (per pass / the pair's plain step), with the source.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.hardware.served_step import SERVED_STEP_PATH, draft_passes, indexer_kinds, indexer_layers  # noqa: E402

TERMS = ("fixed", "per_layer", "per_draft", "per_indexer", "rocm")  # regressors: 1, layers, draft passes, indexer
# layers, 1 on an AMD GPU (the engine's ROCm build)
DEFAULT_CONTEXT = (2048, 512)  # isl, osl where the source states none (said in each point's note)
NOT_FITTED = {
    "eager": "no published batch-1 measurement with CUDA graphs off was found for a current engine version",
    "dp_attention": "data-parallel attention is not a mode: a fit's dp_attention_s replaces fixed_s for layouts with "
    "attention DP > 1 where the stack has low-concurrency DP-attention points (TensorRT-LLM's disaggregated DEP decode); "
    "SGLang's and vLLM's published batch-1 recipes are all attention TP, so their DP layouts pay fixed_s",
}


def load(path: Path = SERVED_STEP_PATH) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["measurements"]


def measured_step_ms(m: dict) -> float:
    """The measured step: TPOT, or one verification cycle (AL x TPOT) with speculative decoding."""
    got = m["measured"]
    tpot = got["tpot_ms"] if "tpot_ms" in got else 1000.0 / got["tokens_per_s_per_user"]
    spec = m["speculative"]
    return tpot * (spec["accepted_length"] if spec["method"] != "none" else 1.0)


def passes(m: dict) -> int:
    spec = m["speculative"]
    return draft_passes(spec["method"], spec.get("draft_tokens", 0))


def _lengths(m: dict) -> tuple[float, float]:
    f = m.get("length_factor", 1.0)
    return (m["isl"] * f, m["osl"] * f) if m.get("isl") and m.get("osl") else DEFAULT_CONTEXT


def kernel_step_ms(m: dict) -> float:
    """The planner's kernel step for the point (the only call into the step model): ``core.validation.predict``
    (DESIGN's public API) of a ``decode_step`` case, batch = the concurrency, ``k + 1`` query tokens per sequence
    when verifying ``k`` drafts, over the mean context; at ``c > 1`` plus ``(c - 1) / osl`` of a ``prefill_step``
    of one prompt (the other clients' prompts, each prefilled once per output length)."""
    from core.validation import predict

    isl, osl = _lengths(m)
    spec = m["speculative"]
    new = 1 + (spec.get("draft_tokens", 0) if spec["method"] != "none" else 0)
    base = {
        "id": m["id"],
        "model": m["model"],
        "gpu": m["gpu"],
        "num_gpus": m["gpus"],
        "layout": m["layout"],
        "precision": m["precision"],
        # the MoE kernel path the engine ran where it is not the stack's for the layout (the point's reading)
        "options": {"stack": m["engine"], **({"kernel_path": m["kernel_path"]} if m.get("kernel_path") else {})},
        "measured": {"metric": "step_latency_ms"},
    }
    c = m["concurrency"]
    batch = c / m["layout"].get("attention_dp", 1)  # requests per attention group (DP ranks share the clients)
    ms = predict(
        {
            **base,
            "phase": "decode_step",
            "workload": {"batch": batch, "new_tokens": new, "past_kv_len": int(isl + osl / 2)},
        }
    )
    if c > 1 and not m.get("disaggregated"):
        prompt = {"batch": 1, "new_tokens": int(isl), "past_kv_len": 0}
        ms += (c - 1) / osl * predict({**base, "phase": "prefill_step", "workload": prompt})
    return ms


def draft_pairs(points: list[dict], engine: str) -> list[dict]:
    """The stack's same-source pairs (see the module docstring): each with both steps, measured and kernel, and the
    per-draft cost in ms they give."""
    by_id = {p["id"]: p for p in points}
    out = []
    for d in points:
        plain_id = d["m"].get("draft_pair")
        if d["m"]["engine"] != engine or not plain_id:
            continue
        p = by_id[plain_id]
        extra_ms = (d["measured_step_ms"] - p["measured_step_ms"]) - (d["kernel_step_ms"] - p["kernel_step_ms"])
        out.append(
            {
                "id": d["id"],
                "plain": plain_id,
                "method": d["m"]["speculative"]["method"],
                "draft_passes": d["draft_passes"],
                "measured_ms": (round(d["measured_step_ms"], 4), round(p["measured_step_ms"], 4)),
                "kernel_ms": (round(d["kernel_step_ms"], 4), round(p["kernel_step_ms"], 4)),
                "per_draft_ms": extra_ms / d["draft_passes"],
            }
        )
    return out


def features(p: dict, terms: tuple[str, ...]) -> list[float]:
    x = {
        "fixed": 1.0,
        "per_layer": float(p["num_layers"]),
        "per_draft": float(p["draft_passes"]),
        "per_indexer": float(p["indexer_layers"]),
        "rocm": 1.0 if p["amd"] else 0.0,
    }
    return [x[t] for t in terms]


def fit_terms(points: list[dict], terms: tuple[str, ...]) -> dict[str, float]:
    """Non-negative least squares of the relative error ``(kernel + overhead) / measured - 1`` (ms per term)."""
    if not terms:
        return {}
    a = np.array([features(p, terms) for p in points]) / np.array([[p["measured_step_ms"]] for p in points])
    b = np.array([1.0 - p["kernel_step_ms"] / p["measured_step_ms"] for p in points])
    best, best_cost = None, np.inf
    for k in range(len(terms), -1, -1):  # the unconstrained solution, then every subset with the rest at 0
        for keep in combinations(range(len(terms)), k):
            x = np.zeros(len(terms))
            if keep:
                x[list(keep)] = np.linalg.lstsq(a[:, list(keep)], b, rcond=None)[0]
            cost = float(np.sum((a @ x - b) ** 2))
            if np.all(x >= 0) and cost < best_cost - 1e-15:
                best, best_cost = x, cost
    return dict(zip(terms, (float(v) for v in best), strict=True))


def served_ms(p: dict, params: dict[str, float], dp_ms: float | None = None) -> float:
    """The kernel step + the stack's terms; ``dp_ms`` in place of the fixed term for a DP-attention point."""
    dp = p["attention_dp"] > 1 and dp_ms is not None
    return (
        p["kernel_step_ms"]
        + sum(v * features(p, (t,))[0] for t, v in params.items() if not (dp and t == "fixed"))
        + (dp_ms if dp else 0.0)
    )


def fit_dp(points: list[dict], params: dict[str, float]) -> float:
    """The fixed term of DP-attention points (ms), the others as fitted: least squares of the relative error, >= 0."""
    a = np.array([1.0 / p["measured_step_ms"] for p in points])
    b = np.array(
        [1.0 - served_ms(p, {k: v for k, v in params.items() if k != "fixed"}) / p["measured_step_ms"] for p in points]
    )
    return max(0.0, float(a @ b / (a @ a)))


def loo_errors(points: list[dict], terms: tuple[str, ...]) -> list[float]:
    out = []
    for i, p in enumerate(points):
        params = fit_terms(points[:i] + points[i + 1 :], terms)
        out.append(served_ms(p, params) / p["measured_step_ms"] - 1.0)
    return out


def forms(points: list[dict]) -> list[tuple[str, ...]]:
    """Every form of at most two terms; the draft term only where the stack has drafting points."""
    usable = [
        t
        for t in TERMS
        if (t != "per_draft" or any(p["draft_passes"] for p in points))
        and (t != "per_indexer" or any(p["indexer_layers"] for p in points))
        and (t != "rocm" or any(p["amd"] for p in points))
    ]
    return [()] + [c for k in (1, 2) for c in combinations(usable, k)]


WITHIN = 0.20  # the batch-1 target: every published step within 20%


def choose(points: list[dict]) -> tuple[tuple[str, ...], list[float], dict]:
    """The form with the most points within :data:`WITHIN` under leave-one-out (the target's own measure), then the
    lowest median, then the lowest max, then the fewest terms. ``tried``: form -> (median, max, points within)."""
    tried = {}
    for terms in forms(points):
        errs = [abs(e) for e in loo_errors(points, terms)] if len(points) > 1 else [0.0]
        tried[terms] = (statistics.median(errs), max(errs), sum(e <= WITHIN for e in errs))
    best = min(tried, key=lambda t: (-tried[t][2], round(tried[t][0], 3), round(tried[t][1], 3), len(t)))
    return best, loo_errors(points, best), tried


def form_text(terms: tuple[str, ...]) -> str:
    names = {
        "fixed": "fixed_s",
        "per_layer": "per_layer_s x num_layers",
        "per_draft": "per_draft_s x draft passes",
        "per_indexer": "per_indexer_s x indexer layers",
        "rocm": "rocm_s on AMD GPUs",
    }
    return " + ".join(names[t] for t in terms) or "0 (the kernel step alone)"


def evaluate(measurements: list[dict]) -> tuple[list[dict], dict[str, dict]]:
    """Every point with its kernel and measured step, and each stack's fit on its ``fit: true`` points."""
    from core.catalog import load_catalog

    cat = load_catalog()
    points = []
    for m in measurements:
        points.append(
            {
                "m": m,
                "id": m["id"],
                "measured_step_ms": measured_step_ms(m),
                "kernel_step_ms": kernel_step_ms(m),
                "num_layers": cat.model(m["model"]).num_layers,
                "indexer_layers": indexer_layers(cat.model(m["model"])),
                "indexer_mixers": indexer_kinds(cat.model(m["model"])),
                "draft_passes": passes(m),
                "attention_dp": m["layout"].get("attention_dp", 1),
                "amd": cat.gpu(m["gpu"]).vendor == "amd",
            }
        )
    fits = {}
    for engine in sorted({p["m"]["engine"] for p in points}):
        fitted = [p for p in points if p["m"]["engine"] == engine and p["m"]["fit"]]
        own = [p for p in fitted if p["attention_dp"] == 1]
        dp = [p for p in fitted if p["attention_dp"] > 1]
        if not own:
            continue
        terms, loo, tried = choose(own)
        params = fit_terms(own, terms)
        for p, e in zip(own, loo, strict=True):
            p["loo_error"] = e
        pairs = draft_pairs(points, engine) if "per_draft" not in terms else []
        fits[engine] = {
            "terms": terms,
            "params": params,
            "points": own,
            "loo": loo,
            "tried": tried,
            "dp": None,
            "pairs": pairs,
            "paired_ms": max(0.0, statistics.mean(q["per_draft_ms"] for q in pairs)) if pairs else None,
        }
        if dp:
            for i, p in enumerate(dp):  # leave-one-out: the TP fit without nothing, the DP term without the point
                p["loo_error"] = (
                    served_ms(p, params, fit_dp(dp[:i] + dp[i + 1 :], params) if len(dp) > 1 else None)
                    / (p["measured_step_ms"])
                    - 1.0
                )
            fits[engine]["dp"] = {"ms": fit_dp(dp, params), "points": dp}
    for p in points:
        f = fits.get(p["m"]["engine"])
        dp_ms = f["dp"]["ms"] if f and f["dp"] else None
        p["served_ms"] = served_ms(p, f["params"], dp_ms) if f else p["kernel_step_ms"]
        if f and any(q["id"] == p["id"] for q in f["pairs"]):
            p["served_ms"] += f["paired_ms"] * p["draft_passes"]  # the pair's own drafting point, at the pair's cost
    return points, fits


def _abs_summary(errs: list[float]) -> str:
    a = [abs(e) for e in errs]
    return f"median {statistics.median(a):.0%}, max {max(a):.0%}" if a else "-"


def report(points: list[dict], fits: dict[str, dict]) -> str:
    lines = [
        f"{'measurement':50s} {'eng':6s} {'gpu':8s} {'c':>2s} {'k':>2s} {'meas ms':>8s} {'kernel':>7s} "
        f"{'err':>6s} {'served':>7s} {'err':>6s} {'LOO':>6s}"
    ]
    for p in points:
        m, meas = p["m"], p["measured_step_ms"]
        before, after = p["kernel_step_ms"] / meas - 1, p["served_ms"] / meas - 1
        loo = f"{p['loo_error']:+6.0%}" if "loo_error" in p else "   n/f"
        k = m["speculative"].get("draft_tokens", 0) if m["speculative"]["method"] != "none" else 0
        lines.append(
            f"{p['id'][:50]:50s} {m['engine']:6s} {m['gpu']:8s} {m['concurrency']:2d} {k:2d} {meas:8.2f} "
            f"{p['kernel_step_ms']:7.2f} {before:+6.0%} {p['served_ms']:7.2f} {after:+6.0%} {loo}"
        )
    lines.append("(n/f: not fitted, see excluded_because; err = predicted / measured - 1; LOO = refitted without it)")
    for engine, f in fits.items():
        ms = f["params"]
        lines.append(
            f"{engine}: {form_text(f['terms'])} = "
            + (", ".join(f"{t} {v * 1000:.0f} us" for t, v in ms.items()) or "0")
            + f" on {len(f['points'])} points; leave-one-out {_abs_summary(f['loo'])}"
        )
        for q in f["pairs"]:
            lines.append(
                f"{engine} draft pass from the pair {q['id']} / {q['plain']}: measured {q['measured_ms'][0]:.2f} - "
                f"{q['measured_ms'][1]:.2f} ms, kernel {q['kernel_ms'][0]:.2f} - {q['kernel_ms'][1]:.2f} ms, over "
                f"{q['draft_passes']} passes = {q['per_draft_ms']:.2f} ms per draft pass"
            )
        if f["dp"]:
            dp = f["dp"]
            lines.append(
                f"{engine} with attention DP: dp_attention {dp['ms'] * 1000:.0f} us in place of fixed on "
                f"{len(dp['points'])} points; leave-one-out {_abs_summary([p['loo_error'] for p in dp['points']])}"
            )
    fitted = [p for p in points if "loo_error" in p]
    lines.append(
        "fitted points: kernel only "
        + _abs_summary([p["kernel_step_ms"] / p["measured_step_ms"] - 1 for p in fitted])
        + "; served (in-sample) "
        + _abs_summary([p["served_ms"] / p["measured_step_ms"] - 1 for p in fitted])
        + "; served (leave-one-out) "
        + _abs_summary([p["loo_error"] for p in fitted])
    )
    lines.append(
        "all points: kernel only "
        + _abs_summary([p["kernel_step_ms"] / p["measured_step_ms"] - 1 for p in points])
        + "; served "
        + _abs_summary([p["served_ms"] / p["measured_step_ms"] - 1 for p in points])
    )
    within = sum(abs(p["loo_error"]) <= 0.20 for p in fitted)
    lines.append(f"fitted points within 20% (leave-one-out): {within} of {len(fitted)}")
    return "\n".join(lines)


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _point(p: dict) -> dict:
    return {
        "id": p["id"],
        "measured_step_ms": round(p["measured_step_ms"], 4),
        "kernel_step_ms": round(p["kernel_step_ms"], 4),
        "num_layers": p["num_layers"],
        "indexer_layers": p["indexer_layers"],
        "draft_passes": p["draft_passes"],
        "attention_dp": p["attention_dp"],
        "loo_error": round(p["loo_error"], 4),
    }


def fits_yaml(fits: dict[str, dict]) -> str:
    """The ``not_fitted`` and ``fits`` blocks of catalogs/served_step.yaml."""
    out = []
    for engine, f in fits.items():
        pts = f["points"]
        dp = f["dp"]
        versions = sorted({p["m"]["engine_version"] for p in pts + (dp["points"] if dp else [])})
        dates = sorted(str(p["m"]["date"]) for p in pts + (dp["points"] if dp else []))
        # a drafting mode is offered only where the chosen form prices its drafts (else the draft's own cost applies)
        drafting = (
            sorted({p["m"]["speculative"]["method"] for p in pts} - {"none"}) if "per_draft" in f["terms"] else []
        )
        params = {t: f["params"].get(t, 0.0) / 1000.0 for t in TERMS}
        kernel_only = [abs(p["kernel_step_ms"] / p["measured_step_ms"] - 1) for p in pts]
        loo = [abs(e) for e in f["loo"]]
        out.append(
            {
                "engine": engine,
                "form": form_text(f["terms"]),
                "fixed_s": round(params["fixed"], 7),
                "per_layer_s": round(params["per_layer"], 8),
                "per_draft_s": round(params["per_draft"], 7),
                "per_indexer_s": round(params["per_indexer"], 7),
                "rocm_s": round(params["rocm"], 7),
                # the indexer kinds the fitted points ran: the per-indexer cost is charged to those kinds only
                "indexer_mixers": sorted({k for p in pts for k in p["indexer_mixers"]}),
                "dp_attention_s": round(dp["ms"] / 1000.0, 7) if dp else None,
                "paired_draft_s": round(f["paired_ms"] / 1000.0, 7) if f["paired_ms"] is not None else None,
                "drafting_modes": drafting,
                "holds_for": {"versions": "; ".join(versions), "dates": f"{dates[0]} .. {dates[-1]}"},
                "kernel_model": f"core.validation.predict at commit {_commit()} (bench/served_step.py kernel_step_ms)",
                "kernel_only_median_error": round(statistics.median(kernel_only), 4),
                "kernel_only_max_error": round(max(kernel_only), 4),
                "loo_median_error": round(statistics.median(loo), 4),
                "loo_max_error": round(max(loo), 4),
                "forms_tried": {
                    form_text(t): {"loo_median": round(a, 4), "loo_max": round(b, 4), "loo_within_20pct": n}
                    for t, (a, b, n) in f["tried"].items()
                },
                "points": [_point(p) for p in pts],
                "dp_attention_points": [_point(p) for p in dp["points"]] if dp else [],
                "draft_pairs": [
                    {
                        **q,
                        "measured_ms": list(q["measured_ms"]),
                        "kernel_ms": list(q["kernel_ms"]),
                        "per_draft_ms": round(q["per_draft_ms"], 4),
                    }
                    for q in f["pairs"]
                ],
            }
        )
    dump = {"sort_keys": False, "width": 120, "allow_unicode": True}
    text = yaml.safe_dump({"not_fitted": NOT_FITTED}, **dump)
    return text + yaml.safe_dump({"fits": out}, default_flow_style=None, **dump)


STAMP = "# fits: written by `python -m bench.served_step --write` (do not edit by hand)\n"


def write(fits: dict[str, dict], path: Path = SERVED_STEP_PATH) -> None:
    """Replace everything from the fits' stamp (or ``not_fitted:`` / ``fits:``) down with the new fits."""
    lines = path.read_text(encoding="utf-8").splitlines()
    cut = next(i for i, line in enumerate(lines) if line.startswith(("# fits:", "not_fitted:", "fits:")))
    path.write_text("\n".join(lines[:cut]) + "\n" + STAMP + fits_yaml(fits), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write the fits into catalogs/served_step.yaml")
    args = ap.parse_args(argv)
    points, fits = evaluate(load())
    print(report(points, fits))
    if args.write:
        write(fits)
        print(f"wrote {SERVED_STEP_PATH.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
