"""DeepSeek-V4.1-Flash's Engram tables on the Fit and Single box pages (issue 22: say where they live and what
reading them costs). Hand values: tests/unit/test_table_reads.py."""

from tests.page._util import run_page

Q = {"model": "deepseek-v4.1-flash", "gpu": "b200", "nodes": "2", "gpn": "8", "w": "fp8"}


def test_fit_shows_the_tables_beside_the_budget():
    at = run_page("pages/1_Fit.py", **Q)
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    # (384,006,168 + 384,016,682) x 264 B = 202.8 GB; 2 x 24 x 264 = 12,672 B per token
    assert "**202.8 GB**" in text and "**12,672 B per token**" in text and "host DRAM" in text
    frame = next(d.value for d in at.dataframe if "tier" in d.value.columns)
    # in HBM the whole 202.8 GB would sit on each GPU (attention TP 1 shards nothing), more than a B200's 191.5 GB:
    # the GPU tier is shown as not fitting, without step times (numbers audit 3 B6.5)
    assert list(frame["tier"]) == ["gpu: does not fit", "host (priced)", "disk"]
    gpu_tier = frame.set_index("tier").loc["gpu: does not fit"]
    assert round(gpu_tier["HBM per GPU (GB)"], 1) == 202.8 and gpu_tier.filter(like="(ms)").isna().all()
    (warning,) = [w.value for w in at.warning if "The GPU tier does not fit" in w.value]
    assert "202.8 GB of HBM on each GPU (sharded over attention TP 1)" in warning
    host = frame.set_index("tier").loc["host (priced)"]
    assert round(host["host DRAM per node (GB)"], 1) == 202.8 and host["HBM per GPU (GB)"] == 0
    disk = frame.set_index("tier").loc["disk"]
    assert disk["prefill chunk: exposed (ms)"] > host["prefill chunk: exposed (ms)"]  # NVMe random reads cost


def test_the_gpu_tier_fits_once_attention_tp_shards_the_tables():
    # attention TP 8: 202.76 GB / 8 = 25.34 GB of tables per GPU, inside what the weights leave: a working option
    at = run_page("pages/1_Fit.py", tp="8", etp="1", **Q)
    frame = next(d.value for d in at.dataframe if "tier" in d.value.columns).set_index("tier")
    assert list(frame.index) == ["gpu", "host (priced)", "disk"]
    assert frame.loc["gpu", "HBM per GPU (GB)"] == (384_006_168 + 384_016_682) * 264 / 8 / 1e9
    assert frame.loc["gpu", "decode step (ms)"] > 0
    assert not [w for w in at.warning if "GPU tier does not fit" in w.value]


def test_a_model_without_tables_shows_no_such_section():
    at = run_page("pages/1_Fit.py")
    assert not any("tier" in d.value.columns for d in at.dataframe)


def test_single_box_says_the_tables_are_not_in_its_placement():
    at = run_page("pages/11_Single_box.py", model="deepseek-v4.1-flash")
    assert not at.exception
    assert any("n-gram tables, 202.8 GB" in w.value and "48 random reads per token" in w.value for w in at.warning)
