"""Fit the efficiency factors on the validation cases and print leave-one-out errors.

    python -m bench.calibrate            # print the fit and the leave-one-out table
    python -m bench.calibrate --write    # also write the fitted factors into catalogs/efficiency.yaml, the
                                         # per-phase error into catalogs/step_error.yaml and the per-case
                                         # leave-one-out table into catalogs/validation/loo_predictions.csv

Kernel families are fitted per GPU profile on the kernel-level cases, the whole-step factors on the
system-level cases (core.validation.calibrate). The fit starts from the documented values with every
fitted family removed, so it is reproducible; tests/unit/test_validation.py checks the YAML is current.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEADER = """# Efficiency factors per GPU type and serving stack (core/perf/step.py). Each profile names the stack it
# describes; a family a profile leaves out is inherited from `inherits` (the closest relative), and
# the app says so. Two kinds of values (see each profile's `provenance`):
#   documented: read from a published kernel benchmark (docs/kernel_reference.md)
#   fitted:     fitted by core.validation.calibrate() on the cases in catalogs/validation/
#               (`python -m bench.calibrate --write` regenerates them; a test checks they are current)
# Never one factor per case: one set per GPU type and kernel family.
"""


# the stack a kernel path's measurements describe (aiconfigurator's tables; catalogs/validation/AIC_DATA.md)
PATH_STACKS = {
    "fused": "SGLang fused Triton MoE (NVIDIA aiconfigurator measurements)",
    "trtllm": "TensorRT-LLM MoE kernels (NVIDIA aiconfigurator measurements)",
    "marlin": "SGLang Marlin W4A16 MoE for int4 experts (NVIDIA aiconfigurator measurements)",
}


def fitted_profiles(cat):
    from core import validation

    base = validation.strip_fitted(cat.efficiency, cat.validation_cases, cat)
    return validation.calibrate(cat.validation_cases, base, cat)


def step_error(cat, results) -> dict[str, dict]:
    """The whole-step ("system") cases' median and 90th-percentile leave-one-out |error| per phase, with the case
    count (``write_step_error`` adds where they come from: ``STEP_ERROR_SOURCE``)."""
    from core import validation

    phase = {str(c["id"]): c.get("phase") for c in cat.validation_cases}
    out = {}
    for ph in ("decode", "prefill"):
        errs = [r for r in results if r.family == "system" and phase.get(r.id) == ph]
        s = validation.error_summary(errs).get("system", {})
        out[ph] = {
            "median_loo_error": round(float(s.get("median", 0.0)), 4),
            "p90_loo_error": round(float(s.get("p90", 0.0)), 4),
            "cases": int(s.get("n", 0)),
        }
    return out


STEP_ERROR_SOURCE = (
    "the loo_predicted column of catalogs/validation/loo_predictions.csv, family system (whole-step cases), split by "
    "each case's phase; p90 is the ceil(0.9 n)-th smallest |error| (core.validation.error_summary)"
)


def write_step_error(cat, results, path) -> None:
    data = {**step_error(cat, results), "source": STEP_ERROR_SOURCE}
    head = (
        "# The step-time model's measured error per phase: the median and 90th-percentile leave-one-out |error| of\n"
        "# the whole-step (system) validation cases of that phase. The Layouts page treats plans within the median\n"
        "# of the best as equivalent (tier 1) and those within the 90th percentile as not ruled out (tier 2).\n"
        "# Written by `python -m bench.calibrate --write`; do not edit by hand.\n"
    )
    path.write_text(head + yaml.safe_dump(data, sort_keys=True))
    print(f"wrote {path}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    from core import validation
    from core.catalog import CATALOG_DIR, load_catalog

    cat = load_catalog()
    profiles = fitted_profiles(cat)
    fams = validation.fitted_families(cat.validation_cases, cat)
    for owner, fam in sorted(fams):
        print(f"{owner:10s} {fam:22s} {getattr(profiles[owner], fam).model_dump()}")
    results = validation.leave_one_out(list(cat.validation_cases), profiles, cat)
    print(f"\n{'case':46s} {'measured':>10s} {'fit':>8s} {'LOO':>8s}")
    for r in results:
        print(f"{r.id:46s} {r.measured:10.4g} {r.error:+8.1%} {r.loo_error:+8.1%}")
    for fam, s in validation.error_summary(results).items():
        print(f"LOO {fam:22s} n={s['n']:2d} median {s['median']:.1%} p90 {s['p90']:.1%} max {s['max']:.1%}")
    if args.write:
        write_step_error(cat, results, CATALOG_DIR / "step_error.yaml")
        path = CATALOG_DIR / "efficiency.yaml"
        data = yaml.safe_load(path.read_text())
        by_key = {p["gpu"] + (f"@{p['path']}" if p.get("path") else ""): p for p in data["profiles"]}
        for owner, fam in sorted(fams):
            gpu, _, kpath = owner.partition("@")
            entry = by_key.get(owner)
            if entry is None:  # a kernel path's profile: placed after its GPU's
                entry = {"gpu": gpu, "path": kpath, "stack": PATH_STACKS[kpath]}
                at = max(i for i, p in enumerate(data["profiles"]) if p["gpu"] == gpu)
                data["profiles"].insert(at + 1, entry)
                by_key[owner] = entry
            entry[fam] = getattr(profiles[owner], fam).model_dump()
            ids = sorted(
                str(c["id"])
                for c in cat.validation_cases
                if validation.case_family(c, cat) == fam and validation.owner_of(c, fam) == owner
            )
            note = "fitted on " + ", ".join(ids)
            if len(ids) > 6:  # kernel tables: name the table and the count, not every case
                note = f"fitted on {len(ids)} measured kernel cases ({ids[0]} ... {ids[-1]})"
            if fam == "grouped_gemm_prefill":
                note = (
                    "compute_eff, compute_eff_16bit, floor_us, row_bytes, pair_bytes (floor + roofline + the activations' "
                    "traffic, issue 35) " + note + " by `python -m bench.calibrate --write`"
                )
            if fam == "system":
                note = (
                    "token_overhead_ps_per_channel and overlap_eff " + note + " (one set for every GPU generation: the "
                    "whole-step residual no kernel case explains); layer_overhead_us: assumption (launch gaps and "
                    "~3 us of add-norm kernels per layer at batch 1, aiconfigurator)"
                )
            entry.setdefault("provenance", {})[fam] = note
        text = HEADER + yaml.safe_dump(data, sort_keys=False, width=120, allow_unicode=True)
        path.write_text(text)
        print(f"\nwrote {path}")
        write_loo_table(results, CATALOG_DIR)


def write_loo_table(results, root) -> None:
    """The per-case leave-one-out table the Validation page reads, fingerprinted with the files just written
    (core.validation.loo_table). The results were computed with the fitted profiles: check that the efficiency.yaml
    now on disk gives the same in-sample predictions, so the fingerprint describes what the table holds."""
    from core import catalog as catalog_mod
    from core import validation
    from core.validation.loo_table import LOO_TABLE, format_loo_table, inputs_fingerprint

    catalog_mod._load.cache_clear()  # re-read the efficiency.yaml written above
    cat = catalog_mod.load_catalog(root)
    cases = {str(c["id"]): c for c in cat.validation_cases}
    for r in results:
        again = validation.predict_with(cases[r.id], cat.efficiency, cat)
        if abs(again - r.predicted) > 1e-9 * max(abs(r.predicted), 1e-30):
            raise SystemExit(f"{r.id}: the written efficiency.yaml predicts {again!r}, the fit {r.predicted!r}")
    path = root / LOO_TABLE
    path.write_text(format_loo_table(results, inputs_fingerprint(cat)))
    print(f"wrote {path} ({len(results)} cases)")


if __name__ == "__main__":
    main()
