import shutil

import pytest

from core.catalog import CATALOG_DIR, CatalogError, load_catalog

cat = load_catalog()

REQUIRED_GPUS = {
    # late 2026 (issue 22): Rubin, DGX Spark's GB10, H20, A40, MI455X, TPU v7, Trainium3
    "vr200",
    "gb10",
    "h20",
    "a40",
    "mi455x",
    "tpu-v7",
    "trainium3",
    "rtx-4090",
    "rtx-5090",
    "l40s",
    "a100-80gb",
    "h100-sxm",
    "h100-pcie",
    "h800",
    "h200",
    "b200",
    "b300",
    "gb200",
    "gb300",
    "mi300x",
    "mi325x",
    "mi355x",
}
REQUIRED_LINKS = {"nvlink3", "nvlink4", "nvlink5", "ib-hdr", "ib-ndr", "ib-xdr", "roce-400g", "pcie4", "pcie5", "pcie6"}


def test_load_is_cached():
    assert load_catalog() is cat


def test_every_entry_has_a_source():
    for m in cat.models.values():
        assert m.source and m.published.source, m.id
    for g in cat.gpus.values():
        assert g.sources, g.id
    for link in cat.interconnects.values():
        assert link.source, link.id


def test_required_gpus_and_links():
    assert REQUIRED_GPUS <= set(cat.gpus)
    assert REQUIRED_LINKS <= set(cat.interconnects)


def test_gpu_datasheet_values():
    # H100 SXM: 80 GB, 3.35 TB/s, 989 dense BF16 TFLOPS -> ridge 295 FLOP/byte; H200 4.8 TB/s -> 206
    h100, h200 = cat.gpu("h100-sxm"), cat.gpu("h200")
    assert (h100.hbm_capacity_gb, h100.hbm_bandwidth_gbps, h100.dense_tflops["bf16"]) == (80, 3350, 989)
    assert h100.ridge_point_flop_per_byte("bf16") == pytest.approx(295, abs=1)
    assert h200.ridge_point_flop_per_byte("bf16") == pytest.approx(206, abs=1)
    assert cat.gpu("gb200").scale_up_domain_gpus == 72
    assert not cat.gpu("a100-80gb").supports("fp8")
    assert not cat.gpu("h100-sxm").supports("fp4") and cat.gpu("b200").supports("fp4")


def test_unknown_id_lists_closest():
    with pytest.raises(ValueError, match=r"unknown model id 'deepseek-v4'.*deepseek-v3"):
        cat.model("deepseek-v4")
    with pytest.raises(ValueError, match=r"unknown GPU id 'h100'.*h100-sxm"):
        cat.gpu("h100")


def _copy_catalog(tmp_path):
    dst = tmp_path / "catalogs"
    shutil.copytree(CATALOG_DIR, dst)
    return dst


def test_malformed_gpu_file_names_file_and_field(tmp_path):
    root = _copy_catalog(tmp_path)
    p = root / "gpus" / "h200.yaml"
    p.write_text(p.read_text().replace("hbm_bandwidth_gbps: 4800", "hbm_bandwidth_gbps: -1"))
    with pytest.raises(CatalogError, match=r"h200\.yaml: hbm_bandwidth_gbps: Input should be greater than 0"):
        load_catalog(root)


def test_malformed_model_config_names_file_and_field(tmp_path):
    root = _copy_catalog(tmp_path)
    p = root / "models" / "mixtral-8x7b" / "config.json"
    p.write_text(p.read_text().replace('"num_local_experts": 8', '"num_local_experts": "eight"'))
    with pytest.raises(
        CatalogError, match=r"mixtral-8x7b: config.json \(mixtral\): field 'num_local_experts' must be an integer"
    ):
        load_catalog(root)


def test_broken_yaml_and_missing_file(tmp_path):
    root = _copy_catalog(tmp_path)
    (root / "models" / "grok-1" / "model.yaml").write_text("id: grok-1\nname: [unclosed\n")
    with pytest.raises(CatalogError, match=r"grok-1/model.yaml: not valid YAML"):
        load_catalog(root)
    (root / "models" / "grok-1" / "model.yaml").unlink()
    with pytest.raises(CatalogError, match=r"grok-1/model.yaml: missing"):
        load_catalog(root)


def test_model_yaml_id_and_unknown_fields(tmp_path):
    root = _copy_catalog(tmp_path)
    p = root / "models" / "qwen3-32b" / "model.yaml"
    text = p.read_text()
    p.write_text(text + "\nfavourite_colour: blue\n")
    with pytest.raises(CatalogError, match=r"unknown field.*favourite_colour"):
        load_catalog(root)
    p.write_text(text.replace("id: qwen3-32b", "id: qwen3-33b"))
    with pytest.raises(CatalogError, match="must equal the folder name"):
        load_catalog(root)


def test_gpu_link_must_exist(tmp_path):
    root = _copy_catalog(tmp_path)
    p = root / "gpus" / "h100-sxm.yaml"
    p.write_text(p.read_text().replace("scale_up_link: nvlink4", "scale_up_link: nvlink9"))
    with pytest.raises(CatalogError, match=r"scale_up_link.*nvlink9"):
        load_catalog(root)


def test_yaml_reader_is_safe_and_uses_libyaml():
    """Every catalog file goes through core._util.checks.load_yaml: libyaml's C parser where PyYAML has it (the
    1,128 validation cases in 0.4 s instead of 2.4 s, bench/RESULTS.md), with safe constructors only."""
    import yaml

    from core._util.checks import load_yaml

    assert load_yaml("a: 1\nb: [x, 2.5]") == {"a": 1, "b": ["x", 2.5]}
    with pytest.raises(yaml.YAMLError):  # a python object tag is refused, as by yaml.safe_load
        load_yaml("!!python/object/apply:os.system ['echo hi']")
    if hasattr(yaml, "CSafeLoader"):
        from core._util import checks as _checks

        assert _checks._SAFE_LOADER is yaml.CSafeLoader


def test_efficiency_owner_names_the_profile_each_factor_comes_from():
    # catalogs/efficiency.yaml: mi300x has no factor of its own and `inherits: h200`; h200 has its own
    # attention_decode (measured); a100-80gb sets attention_decode itself. The owner is the profile id
    # without the stack or the "inherited by" note.
    from core.catalog import load_catalog

    cat = load_catalog()
    mi = cat.efficiency_for("mi300x", "sglang")
    assert mi.owner_of("attention_decode") == "h200"
    assert mi.owner_gpu("attention_decode") == "h200"
    assert cat.efficiency_for("a100-80gb", "sglang").owner_of("attention_decode") == "a100-80gb"
    rows = {(r["family"], r["path"]): r for r in mi.describe()}
    assert rows[("attention_decode", "any")]["owner"] == "h200"
    assert rows[("attention_decode", "any")]["from"].startswith("h200 (")
