"""Fit the efficiency factors on the validation cases and print leave-one-out errors.

    python -m bench.calibrate            # print the fit and the leave-one-out table
    python -m bench.calibrate --write    # also write the fitted factors into catalogs/efficiency.yaml

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

HEADER = """# Efficiency factors per GPU type and serving stack (core/perf.py). Each profile names the stack it
# describes; a family a profile leaves out is inherited from `inherits` (the closest relative), and
# the app says so. Two kinds of values (see each profile's `provenance`):
#   documented: read from a published kernel benchmark (docs/kernel_reference.md)
#   fitted:     fitted by core.validation.calibrate() on the cases in catalogs/validation/
#               (`python -m bench.calibrate --write` regenerates them; a test checks they are current)
# Never one factor per case: one set per GPU type and kernel family.
"""


def fitted_profiles(cat):
    from core import validation

    base = validation.strip_fitted(cat.efficiency, cat.validation_cases)
    return validation.calibrate(cat.validation_cases, base, cat)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    from core import validation
    from core.catalog import CATALOG_DIR, load_catalog

    cat = load_catalog()
    profiles = fitted_profiles(cat)
    fams = validation.fitted_families(cat.validation_cases)
    for owner, fam in sorted(fams):
        print(f"{owner:10s} {fam:22s} {getattr(profiles[owner], fam).model_dump()}")
    results = validation.leave_one_out(list(cat.validation_cases), profiles, cat)
    print(f"\n{'case':46s} {'measured':>10s} {'fit':>8s} {'LOO':>8s}")
    for r in results:
        print(f"{r.id:46s} {r.measured:10.4g} {r.error:+8.1%} {r.loo_error:+8.1%}")
    for fam, s in validation.error_summary(results).items():
        print(f"LOO {fam:22s} n={s['n']:2d} median {s['median']:.1%} p90 {s['p90']:.1%} max {s['max']:.1%}")
    if args.write:
        path = CATALOG_DIR / "efficiency.yaml"
        data = yaml.safe_load(path.read_text())
        by_gpu = {p["gpu"]: p for p in data["profiles"]}
        for owner, fam in sorted(fams):
            entry = by_gpu.setdefault(owner, {"gpu": owner, "stack": "calibration", "inherits": "default"})
            entry[fam] = getattr(profiles[owner], fam).model_dump()
            ids = sorted(
                str(c["id"])
                for c in cat.validation_cases
                if validation.case_family(c) == fam and (owner == "default" or str(c["gpu"]) == owner)
            )
            note = "fitted on " + ", ".join(ids)
            if fam == "system":  # the pipeline figures are not fitted: no validation case has pipeline stages
                note = (
                    "layer_overhead_us and overlap_eff " + note + "; decode / prefill_microbatches_per_stage: "
                    "assumption (continuous batching keeps ~2 micro-batches per stage in flight in decode, "
                    "chunked prompts ~8 in prefill)"
                )
            entry.setdefault("provenance", {})[fam] = note
        text = HEADER + yaml.safe_dump(data, sort_keys=False, width=120, allow_unicode=True)
        path.write_text(text)
        print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
