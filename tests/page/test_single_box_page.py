"""AppTest runs of the Single box page (issue 11)."""

import pytest

from tests.page._util import metrics, qp, run_page


def run(**query):
    return run_page("pages/11_Single_box.py", timeout=120, **query)


def test_default_page_places_deepseek_v3_on_a_server_socket_and_a_4090():
    at = run()
    m = metrics(at)
    assert m["Decode"].endswith(" tok/s") and m["Prompt processing"].endswith(" tok/s")
    assert m["Weights"].endswith(" GB") and m["Host RAM used"].endswith(" GB")
    assert at.success and at.success[0].value.startswith("**Fits.**")
    # placement diagram, memory pools, speed vs offload
    assert len(at.get("vega_lite_chart")) == 3
    # every single-box option: 7 CPU hosts x (1, 2 x RTX 4090, 1, 2 x RTX 5090) + 4 unified machines
    option_table = at.dataframe[-3].value
    assert len(option_table) == 7 * 4 + 4


def test_iq4_with_every_expert_on_the_host():
    at = run(host="server-ddr5-8ch-512", bgpu="rtx-4090", bn="1", q="iq4_xs", ncm="61", bctx="4096")
    m = metrics(at)
    # 653,908,770,816 routed weights x 4.25 / 8 = 347.4 GB + 8 GB reserved for the OS
    assert m["Host RAM used"] == "355.4 GB"
    # the caption states the flag and the layer count (58 MoE layers: 0-2 are dense)
    assert any("`--n-cpu-moe 61`: routed experts of 58 of 58 MoE layers" in c.value for c in at.caption)


def test_switching_to_a_unified_machine_updates_the_url():
    at = run()
    at.selectbox(key="_w_box_host").set_value("apple-m3-ultra-512").run()
    assert not at.exception
    q = qp(at)
    assert q["host"] == "apple-m3-ultra-512" and q["bgpu"] == "none"
    m = metrics(at)
    assert m["Pool bandwidth"] == "819 GB/s"  # 1024-bit LPDDR5-6400: 128 B x 6400 MT/s
    assert len(at.get("vega_lite_chart")) == 2  # no offload sweep on a unified pool


def test_manual_n_cpu_moe_goes_into_the_url():
    at = run(model="mixtral-8x7b", host="desktop-ddr5-2ch-96", bgpu="rtx-4090")
    at.toggle(key="_w_box_auto").set_value(False).run()
    at.slider(key="_w_box_ncm").set_value(20).run()
    assert not at.exception
    assert qp(at)["ncm"] == "20"
    assert any("`--n-cpu-moe 20`: routed experts of 20 of 32 MoE layers" in c.value for c in at.caption)


def test_dense_model_is_explained():
    at = run(model="llama-3-70b")
    assert at.info and "dense model" in at.info[0].value


def test_bad_box_url_falls_back_with_a_warning():
    at = run(host="nope", ncm="abc", q="q9_k")
    warnings = " ".join(w.value for w in at.sidebar.warning)
    assert "host='nope' is not a known host id" in warnings
    assert "ncm='abc' is not a whole number" in warnings
    assert "q='q9_k' is not a known quantisation" in warnings
    assert metrics(at)["Decode"].endswith(" tok/s")


# issue 37 (probe 3, CR-2): the URL allows ncm 0-10,000 for any model; above the model's layers it is clamped
@pytest.mark.parametrize(
    "model_id, ncm, layers, moe_layers",
    [
        ("deepseek-v3", "62", 61, 58),  # 61 layers, the first 3 dense
        ("deepseek-v3", "10000", 61, 58),  # the README's maximum
        ("mixtral-8x7b", "33", 32, 32),
        ("qwen3-30b-a3b", "49", 48, 48),
    ],
)
def test_ncm_above_the_models_layers_is_clamped_with_a_warning(model_id, ncm, layers, moe_layers):
    at = run(model=model_id, ncm=ncm)
    warnings = " ".join(w.value for w in at.sidebar.warning)
    assert f"URL key ncm={int(ncm):,}" in warnings and f"{layers:,} layers; using {layers:,}" in warnings
    assert f"Allowed for this model: 0-{layers:,}" in warnings
    assert qp(at)["ncm"] == str(layers)
    assert any(f"`--n-cpu-moe {layers}`: routed experts of {moe_layers} of {moe_layers} MoE layers" in c.value
               for c in at.caption)  # fmt: skip
    assert at.slider(key="_w_box_ncm").value == layers


def test_ncm_within_the_models_layers_is_kept_without_a_warning():
    at = run(model="mixtral-8x7b", ncm="32")
    assert not any("ncm" in w.value for w in at.sidebar.warning)
    assert qp(at)["ncm"] == "32"
