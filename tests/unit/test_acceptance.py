"""Measured acceptance curves (issue #20): ``catalogs/acceptance.yaml`` and ``core/speculative/acceptance.py``."""

from __future__ import annotations

import pytest
import yaml

from core.catalog import load_catalog
from core.speculative.acceptance import (
    ACCEPTANCE_PATH,
    CONFIDENCES,
    METHODS,
    AcceptanceCurve,
    accepted_length,
    constant_alpha_length,
    curves_for,
    load_curves,
    per_position_acceptance,
)

CURVES = load_curves()
BY_ID = {c.id: c for c in CURVES}


def _curve(**kw) -> AcceptanceCurve:
    base = dict(
        model_id="m",
        method="mtp",
        thinking=None,
        accepted_length={1: 1.8, 2: 2.4},
        source="test",
        confidence="published table",
        id="test/entry",
    )
    return AcceptanceCurve(**{**base, **kw})


# ------------------------------------------------------------------------------------------ the catalog


def test_every_entry_loads_with_a_source_and_a_known_method():
    assert len(CURVES) >= 20
    assert len(BY_ID) == len(CURVES), "entry ids must be unique"
    for c in CURVES:
        assert c.method in METHODS and c.confidence in CONFIDENCES and c.source.strip(), c.id
        assert list(c.accepted_length) == sorted(c.accepted_length), c.id
        assert all(1.0 <= v <= k + 1 for k, v in c.accepted_length.items()), c.id


def test_catalog_model_ids_exist_and_the_others_do_not():
    """An entry that claims a planner catalog id names a real model; one marked catalog_model: false must not
    shadow a catalog id (it would then belong to that model)."""
    models = load_catalog().models
    claimed = {c.model_id for c in CURVES if c.catalog_model}
    assert claimed <= set(models), sorted(claimed - set(models))
    published_names = {c.model_id for c in CURVES if not c.catalog_model}
    assert not published_names & set(models), sorted(published_names & set(models))


def test_inferencex_tables_keep_every_published_point():
    """Each InferenceX golden table publishes k = 1..8: what the curve does not use is in published_beyond,
    verbatim (nothing dropped silently)."""
    golden = [c for c in CURVES if c.id.endswith("/inferencex")]
    assert len(golden) == 14
    for c in golden:
        assert sorted([*c.accepted_length, *c.published_beyond]) == list(range(1, 9)), c.id
    assert BY_ID["deepseek-v4-pro/mtp/thinking-on/inferencex"].published_beyond == {7: 2.54, 8: 2.58}
    assert BY_ID["deepseek-v4-pro/dspark/thinking-on/inferencex"].published_beyond == {7: 3.73, 8: 3.47}


def test_mtp_entries_say_how_many_modules_the_checkpoint_has():
    for c in CURVES:
        if c.method == "mtp":
            assert c.module_depth == 1, c.id  # every MTP checkpoint recorded here ships one module
        else:
            assert c.module_depth is None, c.id


def test_engine_knobs_are_recorded_with_sources():
    doc = yaml.safe_load(ACCEPTANCE_PATH.read_text(encoding="utf-8"))
    for engine in ("vllm", "sglang", "tensorrt_llm"):
        knobs = doc["engine_knobs"][engine]
        assert knobs["num_speculative_tokens"] and knobs["forced_acceptance"] and knobs["sources"], engine
    assert "synthetic_acceptance_length" in doc["engine_knobs"]["vllm"]["forced_acceptance"]
    assert "SGLANG_SIMULATE_ACC_LEN" in doc["engine_knobs"]["sglang"]["forced_acceptance"]
    assert "L - 1" in doc["engine_knobs"]["tensorrt_llm"]["forced_acceptance"]  # draft tokens only


# ------------------------------------------------------------------------------ per-position acceptance


def test_per_position_deepseek_v4_pro_mtp_thinking_on():
    # L(0..6) = 1, 1.79, 2.27, 2.49, 2.54, 2.55, 2.55 (L(-1) = 0)
    # a1 = 1.79 - 1                      = 0.79
    # a2 = (2.27 - 1.79) / (1.79 - 1)    = 0.48 / 0.79 = 0.607595
    # a3 = (2.49 - 2.27) / (2.27 - 1.79) = 0.22 / 0.48 = 0.458333
    # a4 = (2.54 - 2.49) / 0.22          = 0.05 / 0.22 = 0.227273
    # a5 = (2.55 - 2.54) / 0.05          = 0.01 / 0.05 = 0.2
    # a6 = (2.55 - 2.55) / 0.01          = 0
    a = per_position_acceptance(BY_ID["deepseek-v4-pro/mtp/thinking-on/inferencex"])
    assert list(a) == [1, 2, 3, 4, 5, 6]
    expected = [0.79, 0.607595, 0.458333, 0.227273, 0.2, 0.0]
    assert [a[i] for i in a] == pytest.approx(expected, abs=1e-6)


def test_per_position_gpt_oss_20b_eagle3_vllm_ci():
    # L = 1.7165, 2.2285, 2.5622 (1 + cumulative published rates 0.7165, 0.5120, 0.3337)
    # a1 = 0.7165
    # a2 = 0.5120 / 0.7165 = 0.714585
    # a3 = 0.3337 / 0.5120 = 0.651758
    a = per_position_acceptance(BY_ID["gpt-oss-20b/eagle3/vllm-ci"])
    assert [a[1], a[2], a[3]] == pytest.approx([0.7165, 0.714585, 0.651758], abs=1e-6)


def test_per_position_qwen35_mtp_thinking_on():
    # L = 1.93, 2.73, 3.39, 3.97, 4.41, 4.80, 5.04, 5.21 -> gains 0.93, 0.80, 0.66, 0.58, 0.44, 0.39, 0.24, 0.17
    # a = 0.93, 0.80/0.93, 0.66/0.80, 0.58/0.66, 0.44/0.58, 0.39/0.44, 0.24/0.39, 0.17/0.24
    a = per_position_acceptance(BY_ID["qwen3.5-397b-a17b/mtp/thinking-on/inferencex"])
    expected = [0.93, 0.860215, 0.825, 0.878788, 0.758621, 0.886364, 0.615385, 0.708333]
    assert [a[i] for i in range(1, 9)] == pytest.approx(expected, abs=1e-6)


def test_per_position_refuses_a_table_whose_gain_grows_again():
    # Kimi-K2.5 EAGLE-3 thinking off: L(6..8) = 3.43, 3.46, 3.51 -> a8 = 0.05 / 0.03 = 1.67 > 1
    with pytest.raises(ValueError, match=r"kimi-k2\.5/eagle3/thinking-off/inferencex.*position 8"):
        per_position_acceptance(BY_ID["kimi-k2.5/eagle3/thinking-off/inferencex"])


def test_per_position_uses_only_the_consecutive_run_from_k1():
    # published k = 1, 2, 3, 5: positions 1-3 only (a4 and a5 would need L(4))
    a = per_position_acceptance(_curve(accepted_length={1: 1.8, 2: 2.44, 3: 2.95, 5: 3.5}))
    assert list(a) == [1, 2, 3]
    assert a[3] == pytest.approx(0.51 / 0.64)
    # a single point at k = 7 (the Nebius card) gives none
    assert per_position_acceptance(BY_ID["deepseek-v3/mtp/nebius-card/t1"]) == {}
    # a plateau: nothing reaches position 3, so positions after it are undefined
    assert per_position_acceptance(_curve(accepted_length={1: 1.5, 2: 1.5, 3: 1.5})) == {1: 0.5, 2: 0.0}


def test_per_position_reproduces_a_constant_alpha_chain():
    lengths = {k: constant_alpha_length(0.7, k) for k in range(1, 9)}
    a = per_position_acceptance(_curve(accepted_length=lengths))
    assert list(a.values()) == pytest.approx([0.7] * 8)


# --------------------------------------------------------------------------- lengths and the closed form


def test_accepted_length_is_the_published_value_and_nothing_else():
    c = BY_ID["deepseek-v4-pro/mtp/thinking-on/inferencex"]
    assert accepted_length(c, 0) == 1.0
    assert accepted_length(c, 3) == 2.49
    with pytest.raises(ValueError, match=r"k = 7 was not measured \(published k: 1, 2, 3, 4, 5, 6\)"):
        accepted_length(c, 7)  # published (2.54) but after the table's fall: in published_beyond, unused
    with pytest.raises(ValueError, match="k = 3 was not measured"):
        accepted_length(BY_ID["deepseek-v3/mtp/nebius-card/t0"], 3)
    with pytest.raises(ValueError, match="whole number"):
        accepted_length(c, 2.5)


def test_constant_alpha_closed_form():
    # (1 - 0.8^6) / (1 - 0.8) = (1 - 0.262144) / 0.2 = 3.68928
    assert constant_alpha_length(0.8, 5) == pytest.approx(3.689, abs=5e-4)
    assert constant_alpha_length(0.8, 5) == pytest.approx(1 + 0.8 + 0.64 + 0.512 + 0.4096 + 0.32768)
    assert constant_alpha_length(1.0, 4) == 5.0
    assert constant_alpha_length(0.0, 4) == 1.0
    assert constant_alpha_length(0.5, 0) == 1.0
    for bad in (-0.1, 1.5, float("nan"), float("inf"), True, "0.8"):
        with pytest.raises(ValueError, match="alpha"):
            constant_alpha_length(bad, 3)


def test_one_alpha_overstates_deep_mtp_drafts():
    """The issue's point: alpha 0.87 (DeepSeek-V3's first MTP position) at every position gives
    (1 - 0.87^8) / 0.13 = 5.17 tokens at k = 7; the original MTP module reused 7 times measures 3.09-3.20."""
    assert constant_alpha_length(0.87, 7) == pytest.approx(5.168, abs=1e-3)
    for t in ("t0", "t1"):
        assert accepted_length(BY_ID[f"deepseek-v3/mtp/nebius-card/{t}"], 7) < constant_alpha_length(0.87, 7) - 1.9


def test_curves_for():
    mtp = curves_for("deepseek-v4-pro", "mtp")
    assert [c.thinking for c in mtp] == [True, False]
    assert [c.id for c in curves_for("deepseek-v4-pro", "dspark")] == ["deepseek-v4-pro/dspark/thinking-on/inferencex"]
    assert curves_for("mixtral-8x7b", "eagle3") == []
    assert curves_for("m", "mtp", [_curve()])[0].id == "test/entry"
    with pytest.raises(ValueError, match="unknown speculative method"):
        curves_for("deepseek-v4-pro", "mtp2")
    with pytest.raises(ValueError, match="AcceptanceCurve"):
        curves_for("m", "mtp", [1])


# ------------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(accepted_length={1: 2.5}), r"accepted_length\[1\] = 2.5 is outside \[1, 2\]"),
        (dict(accepted_length={3: 0.9}), r"accepted_length\[3\] = 0.9 is outside \[1, 4\]"),
        (dict(accepted_length={1: 1.8, 2: 1.7}), "decreases from 1.8 at k = 1 to 1.7 at k = 2"),
        (dict(method="medusa2"), "unknown method 'medusa2'"),
        (dict(accepted_length={}), "at least one k"),
        (dict(accepted_length={0: 1.0}), "key must be a whole number in 1..64"),
        (dict(accepted_length={1: float("nan")}), "outside"),
        (dict(accepted_length={True: 1.5}), "whole number"),
        (dict(confidence="vibes"), "confidence must be one of"),
        (dict(source=" "), "source is required"),
        (dict(method="eagle3", module_depth=1), "module_depth applies to method mtp only"),
        (dict(published_beyond={2: 2.0}), "published_beyond must only hold k > 2"),
        (dict(thinking="yes"), "thinking must be true, false or null"),
    ],
)
def test_bad_entries_are_refused_with_the_entry_named(kw, match):
    with pytest.raises(ValueError, match=match) as e:
        _curve(**kw)
    assert "test/entry" in str(e.value) or "acceptance curve" in str(e.value)


def _write(tmp_path, curves, **top):
    p = tmp_path / f"acceptance-{len(list(tmp_path.iterdir()))}.yaml"  # a new file each time
    p.write_text(yaml.safe_dump({"curves": curves, **top}), encoding="utf-8")
    return p


ENTRY = dict(
    id="x/mtp/a",
    model_id="x",
    method="mtp",
    thinking=None,
    accepted_length={1: 1.8, 2: 2.3},
    source="s",
    confidence="published table",
)


def test_load_names_the_file_and_the_entry(tmp_path):
    assert load_curves(_write(tmp_path, [ENTRY]))[0].accepted_length == {1: 1.8, 2: 2.3}
    with pytest.raises(ValueError, match=r"acceptance-\d+\.yaml: entry x/mtp/b: .*decreases"):
        load_curves(_write(tmp_path, [{**ENTRY, "id": "x/mtp/b", "accepted_length": {1: 1.8, 2: 1.6}}]))
    with pytest.raises(ValueError, match=r"entry x/mtp/c: .*outside \[1, 2\]"):
        load_curves(_write(tmp_path, [{**ENTRY, "id": "x/mtp/c", "accepted_length": {1: 2.2}}]))
    with pytest.raises(ValueError, match=r"entry x/mtp/d: .*unknown method"):
        load_curves(_write(tmp_path, [{**ENTRY, "id": "x/mtp/d", "method": "magic"}]))
    with pytest.raises(ValueError, match=r"entry x/mtp/e: unknown field\(s\) alpha"):
        load_curves(_write(tmp_path, [{**ENTRY, "id": "x/mtp/e", "alpha": 0.8}]))
    with pytest.raises(ValueError, match=r"entry x/mtp/f: missing field\(s\) source"):
        load_curves(_write(tmp_path, [{k: v for k, v in {**ENTRY, "id": "x/mtp/f"}.items() if k != "source"}]))
    with pytest.raises(ValueError, match="appears twice"):
        load_curves(_write(tmp_path, [{**ENTRY, "id": "x/mtp/g"}, {**ENTRY, "id": "x/mtp/g"}]))
    with pytest.raises(ValueError, match="unknown top-level"):
        load_curves(_write(tmp_path, [{**ENTRY, "id": "x/mtp/h"}], extra=1))
    bad = tmp_path / "broken.yaml"
    bad.write_text("curves: [unclosed\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.yaml: not valid YAML"):
        load_curves(bad)
    with pytest.raises(ValueError, match="no acceptance catalog"):
        load_curves(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match="no acceptance catalog"):
        load_curves(tmp_path)  # a directory


def test_an_edited_file_is_read_again(tmp_path):
    """The cache is per file version: rewriting the file reloads it (the default catalog loads once)."""
    p = tmp_path / "acceptance.yaml"
    p.write_text(yaml.safe_dump({"curves": [ENTRY]}), encoding="utf-8")
    assert load_curves(p)[0].accepted_length[2] == 2.3
    p.write_text(
        yaml.safe_dump({"curves": [{**ENTRY, "accepted_length": {1: 1.8, 2: 2.45, 3: 2.9}}]}), encoding="utf-8"
    )
    assert load_curves(p)[0].accepted_length == {1: 1.8, 2: 2.45, 3: 2.9}
    assert load_curves() is load_curves()
