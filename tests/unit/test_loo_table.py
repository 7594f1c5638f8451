"""The shipped leave-one-out table (core.validation.loo_table; written by `python -m bench.calibrate --write`): current, and
refused once its inputs change. The full leave-one-out takes ~20 s and more; these checks take a few seconds:
the fingerprint of the inputs, every in-sample prediction (cheap) and a fresh leave-one-out of one case per
family (the pattern of test_comms_perf_validation's step_error.yaml check, cut to a handful of cases)."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from core import validation
from core.catalog import CATALOG_DIR, load_catalog
from core.validation.loo_table import LOO_TABLE, format_loo_table, inputs_fingerprint, read_loo_table

cat = load_catalog()
REGENERATE = "run `python -m bench.calibrate --write` to regenerate catalogs/validation/loo_predictions.csv"


def test_shipped_loo_table_is_current():
    shipped, why = read_loo_table(cat)
    assert why == "" and shipped is not None, f"{why}: {REGENERATE}"
    assert [r.id for r in shipped] == [str(c["id"]) for c in cat.validation_cases]
    # every case's in-sample prediction (all of them: 0.3 s) and measured value: catches a change in the step-time
    # model, a GPU or a model that the fingerprint (case files and efficiency factors) does not cover
    for r, c in zip(shipped, cat.validation_cases, strict=True):
        assert r.measured == float(c["measured"]["value"]), r.id
        assert r.family == validation.case_family(c, cat) and r.metric == c["measured"]["metric"], r.id
        assert r.predicted == pytest.approx(validation.predict_with(c, cat.efficiency, cat), rel=1e-9), (
            r.id,
            REGENERATE,
        )
    # the leave-one-out itself, refitted fresh on every other case, for the first case of each family
    first: dict[str, str] = {}
    for c in cat.validation_cases:
        first.setdefault(validation.case_family(c, cat), str(c["id"]))
    assert len(first) == 9  # 6 kernel families, 2 all-to-all kinds, the whole step
    fresh = validation.leave_one_out(list(cat.validation_cases), cat.efficiency, cat, only=set(first.values()))
    assert sorted(r.id for r in fresh) == sorted(first.values())
    table = {r.id: r for r in shipped}
    for r in fresh:
        assert table[r.id].loo_predicted == pytest.approx(r.loo_predicted, rel=1e-9), (r.id, REGENERATE)
        assert table[r.id].predicted == r.predicted


def test_fingerprint_covers_the_case_files_the_efficiency_factors_and_the_served_costs(tmp_path):
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / "a.yaml").write_bytes(b"- 1\n")
    (tmp_path / "validation" / "notes.csv").write_bytes(b"not an input\n")  # only *.yaml cases count
    (tmp_path / "efficiency.yaml").write_bytes(b"profiles: []\n")
    (tmp_path / "served_step.yaml").write_bytes(b"fits: []\n")  # an aggregated case's served step reads them
    (tmp_path / "engines.yaml").write_bytes(b"vllm: {}\n")  # and its engine's attention-DP pacing
    # by hand, the documented construction (path, NUL, bytes, NUL per file; cases first, by name):
    # printf 'validation/a.yaml\0- 1\n\0efficiency.yaml\0profiles: []\n\0served_step.yaml\0fits: []\n\0engines.yaml\0vllm:
    # {}\n\0' | sha256sum
    fake = dataclasses.replace(cat, root=tmp_path)
    assert inputs_fingerprint(fake) == "11b1adc17f287254a8f2ff58bd45feee6c88604eeb93eb3f9e7b4adfce57b301"
    (tmp_path / "efficiency.yaml").unlink()
    with pytest.raises(ValueError, match=r"efficiency\.yaml: cannot be read"):
        inputs_fingerprint(fake)


def test_a_changed_input_makes_the_shipped_table_stale(tmp_path):
    """A copy of the shipped inputs and table: usable as is; stale after a case file or the efficiency factors
    change or a row goes; missing without the file. Each answer says which."""
    (tmp_path / "validation").mkdir()
    for p in (CATALOG_DIR / "validation").glob("*.yaml"):
        shutil.copy(p, tmp_path / "validation" / p.name)
    for name in ("efficiency.yaml", "served_step.yaml", "engines.yaml"):
        shutil.copy(CATALOG_DIR / name, tmp_path / name)
    shutil.copy(CATALOG_DIR / LOO_TABLE, tmp_path / LOO_TABLE)
    copy = dataclasses.replace(cat, root=tmp_path)
    rows, why = read_loo_table(copy)
    assert why == "" and rows is not None and len(rows) == len(cat.validation_cases)

    eff = tmp_path / "efficiency.yaml"
    original = eff.read_bytes()
    eff.write_bytes(original.replace(b"mem_eff: 0.", b"mem_eff: 0.0", 1))  # one factor moved
    assert read_loo_table(copy) == (
        None,
        "stale: the validation cases, the efficiency factors or the served costs changed since it was written",
    )
    eff.write_bytes(original)
    served = tmp_path / "served_step.yaml"
    served.write_bytes(served.read_bytes() + b"\n")  # the served costs an aggregated case is priced with
    assert read_loo_table(copy)[1].startswith("stale: ")
    shutil.copy(CATALOG_DIR / "served_step.yaml", served)
    published = tmp_path / "validation" / "published_cases.yaml"
    published.write_bytes(published.read_bytes() + b"\n")  # even a blank line: the bytes are the input
    assert read_loo_table(copy)[1].startswith("stale: ")
    shutil.copy(CATALOG_DIR / "validation" / "published_cases.yaml", published)

    table = tmp_path / LOO_TABLE
    lines = table.read_text().splitlines(keepends=True)
    table.write_text("".join(lines[:-1]))  # the last case's row lost
    n = len(cat.validation_cases)
    assert read_loo_table(copy) == (None, f"stale: {n - 1} rows for {n} cases")
    table.write_text("".join(lines).replace(",attention_latency_us,", ",attention_latency_us,,", 1))
    assert read_loo_table(copy)[1].startswith("unreadable: a row does not parse")
    table.unlink()
    assert read_loo_table(copy) == (None, "missing: no table is shipped with this catalog")


def test_table_text_round_trips_exactly(tmp_path):
    r = validation.CaseResult("x", "attention_latency_us", "attention_decode", "h200", 16.18, 0.1 + 0.2, None)
    text = format_loo_table([r], "0" * 64)
    assert "x,attention_latency_us,attention_decode,h200,16.18,0.30000000000000004,\n" in text  # repr: exact
    with pytest.raises(ValueError, match="fingerprint must be 64 lowercase hex digits"):
        format_loo_table([r], "abc")
