"""AppTest runs of the Fit page: verdicts, widgets that edit the scenario, bad input."""

import re

import pytest

from tests.page._util import metrics, qp, run_page


def frame_with(at, column):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_default_scenario_fits():
    at = run()
    assert at.success and at.success[0].value.startswith("**Fits.**")
    # the default layout is the Layouts page's best decode plan for DeepSeek-V3 on 8 x H200: DP-attention x EP8
    assert at.selectbox(key="_w_tp").value == 1 and at.selectbox(key="_w_etp").value == 1
    at = run(tp="8", etp="1")
    m = metrics(at)
    # DeepSeek-V3 FP8 on 8 x H200, TP 8 / EP 8: 85.1 GB of weights per GPU (hand: see test_memory)
    assert m["Weights per GPU"] == "85.1 GB"
    # 64 sequences x 2,560 tokens x 70,272 B (MLA latent, whole on every TP rank) = 11.5 GB
    assert m["KV cache for the workload"] == "11.5 GB"
    charts = at.get("vega_lite_chart")
    assert len(charts) == 3  # memory per GPU, sequences vs context, cache per layer type
    min_gpus = frame_with(at, "GPU").set_index("GPU")
    assert min_gpus.loc["NVIDIA H200 SXM 141GB", "fp8"] == "8"
    assert min_gpus.loc["NVIDIA H100 SXM5 80GB", "fp8"] == "16"
    assert min_gpus.loc["NVIDIA A100 SXM4 80GB", "fp8"] == "16 *"  # no FP8 tensor cores: marked


def test_does_not_fit_in_bf16_on_8_h100():
    at = run(gpu="h100-sxm", w="bf16")
    assert at.error and "Does not fit" in at.error[0].value
    # 1,342 GB of bf16 weights / 8 = 168 GB per GPU against 0.9 x 85.05 GB (what CUDA reports) = 76.5 GB usable
    assert "76.5 GB of the 85.0 GB are usable" in at.error[0].value


def test_workload_too_big_for_the_kv_cache():
    at = run(batch="4096", isl="8192", osl="1024")
    assert at.warning and "The weights fit, the workload does not" in at.warning[0].value


def test_context_beyond_model_positions_is_an_error_message():
    at = run(model="llama-3-70b", gpu="h100-sxm", isl="16000", osl="1000")
    assert any("exceeds Llama-3-70B's 8,192 positions" in e.value for e in at.error)


def test_emulated_precision_is_marked():
    at = run(model="mixtral-8x7b", gpu="a100-80gb", w="fp8")
    assert any("Emulated precision (weights)" in w.value and "no fp8 tensor cores" in w.value for w in at.warning)
    at = run(model="mixtral-8x7b", gpu="h100-sxm", w="nvfp4")
    assert any("no native nvfp4" in w.value for w in at.warning)


def test_layout_widget_writes_the_url_and_changes_the_numbers():
    at = run(tp="8", etp="1")
    before = metrics(at)["Max sequences at 2,560 tokens"]
    at.selectbox(key="_w_tp").set_value(1).run()  # DP attention: TP 1 x DP-attn 8, EP 8
    assert not at.exception
    assert qp(at)["tp"] == "1" and qp(at)["etp"] == "1"
    after = metrics(at)["Max sequences at 2,560 tokens"]
    # each DP rank keeps its own sequences instead of a replicated latent: several times more
    assert int(after.replace(",", "")) > 4 * int(before.replace(",", ""))
    at.button[0].click().run()  # back to the default layout
    assert "tp" not in qp(at)


def test_invalid_layout_from_url_falls_back_with_warning():
    at = run(model="llama-3-70b", gpu="h100-sxm", tp="3", etp="1", pp="1", dp="1")
    assert any("tp 3 must divide the 8 GPUs" in w.value for w in at.sidebar.warning)


def test_model_change_resets_a_layout_that_no_longer_fits_the_model():
    at = run(model="deepseek-v3", tp="1", etp="1", pp="1", dp="1", nodes="4", gpn="8")  # EP 32
    at.sidebar.selectbox(key="_w_model").set_value("mixtral-8x7b").run()  # 8 experts: EP 32 impossible
    assert not at.exception and "tp" not in qp(at)
    assert any("layout was reset" in i.value for i in at.sidebar.info)


def test_draft_model_adds_weights_and_kv():
    at = run(
        model="llama-3-70b",
        gpu="h100-sxm",
        nodes="1",
        gpn="2",
        w="fp8",
        kv="fp8",
        batch="16",
        isl="1536",
        osl="512",
        sd="draft_model",
        draft="llama-3-8b",
        gamma="5",
    )
    assert not at.error
    text = " ".join(md.value for md in at.markdown)
    # Llama-3 8B in FP8 over TP 2: embedding + head + norms (1,050,939,392) stay bf16 = 2.10 GB, the other
    # 6,979,321,856 parameters at 1 + 4/16384 bytes = 6.98 GB; 9.08 GB / 2 = 4.54 GB of draft weights per GPU
    assert "**Draft (draft model, γ = 5):** 4.54 GB of weights" in text
    assert at.success  # batch 16 at 2,048 tokens fits with an FP8 KV cache


def test_tokenizer_mismatch_warns():
    at = run(model="llama-3-70b", gpu="h100-sxm", sd="draft_model", draft="qwen3-0.6b")
    assert any("does not share" in w.value and "corrupt the output" in w.value for w in at.sidebar.warning)


def test_mtp_only_offered_when_the_model_has_it():
    at = run(model="mixtral-8x7b")
    from core.catalog import load_catalog

    mtp = load_catalog().draft_methods["mtp"].name  # the sidebar names each method as the draft-method catalog does
    assert mtp not in at.sidebar.selectbox(key="_w_sd").options
    at = run(model="deepseek-v3", sd="mtp", gamma="1")
    assert at.sidebar.selectbox(key="_w_sd").value == "mtp"
    assert mtp in at.sidebar.selectbox(key="_w_sd").options
    text = " ".join(md.value for md in at.markdown)
    assert "(with its MTP module)" in text


def test_assumption_widgets_round_trip_through_the_url():
    at = run()
    at.slider(key="_w_util").set_value(0.8).run()
    assert qp(at)["util"] == "0.8"
    at2 = run(**qp(at))
    assert at2.slider(key="_w_util").value == pytest.approx(0.8)


@pytest.mark.parametrize(
    "model_id",
    [
        "grok-1",
        "hunyuan-large",
        "gpt-oss-20b",
        "llama-4-maverick",
        "qwen3-0.6b",
        "deepseek-v3.2-exp",
        "snowflake-arctic",
    ],
)
def test_every_family_renders(model_id):
    # 16 x B200 (172.4 GB usable each) hold every one of these: the largest, DeepSeek-V3.2-Exp (685 B params, FP8
    # weights as published, ~0.69 TB), needs ~43 GB of weights per GPU; the verdict is "Fits", never an error
    at = run(model=model_id, gpu="b200", nodes="2", gpn="8")
    assert not at.error, [e.value for e in at.error]
    assert [s.value[:9] for s in at.success] == ["**Fits.**"]
    assert len(at.get("vega_lite_chart")) >= 1


def _all_ids():
    from core.catalog import load_catalog

    cat = load_catalog()
    return sorted(cat.models), sorted(cat.gpus)


@pytest.mark.parametrize("model_id", _all_ids()[0])
def test_every_model_on_a_rack_of_gb200(model_id):
    # 72 x GB200 (~186 GB each, 13.4 TB): the catalog's largest model, Kimi-K3 (2.78 T params), needs at most
    # 2.78e12 x 2 B / 72 = 77 GB of weights per GPU even in bf16, so every model fits the rack
    at = run(model=model_id, gpu="gb200", nodes="18", gpn="4")
    assert not at.error, [e.value for e in at.error]
    assert [s.value[:9] for s in at.success] == ["**Fits.**"]


@pytest.mark.parametrize("gpu_id", _all_ids()[1])
def test_every_gpu_with_qwen3_30b(gpu_id):
    # Qwen3-30B-A3B: 30.5 B params, 61 GB in bf16, 7.6 GB per GPU over 8 GPUs: below the smallest catalog GPU
    # (RTX 4090, 24 GB), so every GPU type fits it
    at = run(model="qwen3-30b-a3b", gpu=gpu_id, nodes="1", gpn="8")
    assert not at.error, [e.value for e in at.error]
    assert [s.value[:9] for s in at.success] == ["**Fits.**"]


def run(**query):
    return run_page("pages/1_Fit.py", timeout=60, **query)


def test_linear_attention_model_shows_its_fixed_state():
    at = run(model="qwen3.5-397b-a17b", w="fp8")
    # 45 Gated DeltaNet layers x 4,268,032 B = 192.1 MB (decimal, as every figure); / (15 x 2,048 B per token) = 6,252
    # tokens of K/V
    cap = next(c.value for c in at.caption if "linear-attention layers hold" in c.value)
    assert "The 45 linear-attention layers hold 192.1 MB per sequence" in cap and "6,252 tokens of K/V" in cap


def test_mtp_on_a_model_without_an_mtp_module_says_so_and_sizes_without_the_draft():
    # issue 21: ?model=mixtral-8x7b&sd=mtp raised "has no MTP module" as an uncaught exception
    at = run(model="mixtral-8x7b", sd="mtp", gamma="2")
    assert any(
        "Mixtral-8x7B has no MTP module" in w.value and "speculative decoding left off" in w.value for w in at.warning
    )
    assert "sd" not in qp(at)
    # the numbers are those of the same scenario without speculative decoding (the sidebar shows 'off')
    assert metrics(at) == metrics(run(model="mixtral-8x7b"))
    assert not any("**Draft (" in md.value for md in at.markdown)


def test_prefix_cache_tiers_with_reuse():
    # Llama-3-8B on 8 x H100 (default layout: 8 replicas of one GPU), 32,768-token prompts 90% cached: 29,491 cached
    # tokens x 32 layers x 2 x 8 KV heads x 128 x 2 B = 3,865,444,352 B per GPU; host DRAM 1,024 GB per node / 8 =
    # 128 GB per GPU over PCIe Gen5 (64 GB/s x 0.8): 10 us + 75.50 ms per prefix, 33.1 prefixes
    at = run_page("pages/1_Fit.py", model="llama-3-8b", gpu="h100-sxm", isl="32768", reuse="90")
    (tiers,) = [d.value for d in at.dataframe if "load one prefix (ms)" in d.value.columns]
    host = tiers.set_index("tier").loc["host"]
    assert host["load one prefix (ms)"] == pytest.approx(1e3 * (10e-6 + 3_865_444_352 / 51.2e9), rel=1e-9)
    assert host["sessions' prefixes held per GPU"] == pytest.approx(128e9 / 3_865_444_352, rel=1e-9)
    assert list(tiers["tier"]) == ["hbm", "host"]  # no store unless one is given
    # without reuse the section is absent
    at = run_page("pages/1_Fit.py", model="llama-3-8b", gpu="h100-sxm")
    assert not [d for d in at.dataframe if "load one prefix (ms)" in d.value.columns]


# the probe's crash URLs (issue 37, CR-1): prefix reuse where the weights leave no KV budget
NO_BUDGET_URLS = [
    dict(model="deepseek-v3", gpu="h100-sxm", nodes="1", gpn="8", reuse="90"),
    dict(model="qwen3-235b-a22b", gpu="rtx-4090", nodes="1", gpn="8", reuse="40"),
    dict(reuse="1", util="0.05"),
    dict(reuse="10", red="100000"),
    dict(reuse="99", reserve="1000"),
]


@pytest.mark.parametrize("query", NO_BUDGET_URLS, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()))
def test_prefix_reuse_without_a_kv_budget_is_explained_not_a_crash(query):
    """A negative KV budget raised ValueError in core.serving.kv_tiers (kv_budget_bytes_per_gpu must be in [0, 1e15]):
    now the verdict stands and the prefix tiers say why they are not drawn."""
    at = run_page("pages/1_Fit.py", **query)
    assert at.error and at.error[0].value.startswith("**Does not fit.**")
    (note,) = [i.value for i in at.info if "No KV budget left on the GPU" in i.value]
    assert "The prefix tiers need a KV budget above 0 GB per GPU" in note
    assert not [d for d in at.dataframe if "load one prefix (ms)" in d.value.columns]
    # the shortfall it states is the verdict's: needed - usable
    need, usable = (float(x.replace(",", "")) for x in re.findall(r"([\d,.]+) GB", at.error[0].value)[:2])
    over = float(re.search(r"take ([\d,.]+) GB more", note).group(1).replace(",", ""))
    assert over == pytest.approx(need - usable, abs=0.11)


def test_deepseek_v41_flash_at_tp8_uses_its_own_32_wide_fp8_blocks():
    # numbers audit 3, B6.6: the checkpoint's weight_block_size is [32, 32], so TP 8 (288 = 9 x 32) is a valid
    # layout; this URL used to print the verdict, then raise "not whole 128-wide fp8 blocks" in a later section
    at = run(model="deepseek-v4.1-flash", gpu="h200", tp="8", etp="1")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [s.value[:9] for s in at.success] == ["**Fits.**"]


K26 = dict(model="kimi-k2.6", gpu="b200", w="nvfp4", kv="fp8", isl="67600", osl="400", reuse="90", stack="vllm")


def test_prefix_sessions_are_counted_per_the_gpus_that_share_them():
    # numbers audit 3 B2.5: under TP8 (and DCP8) every GPU of the attention group holds a share of the SAME sessions,
    # so the sessions column is per replica there; under attention DP each GPU holds its own sessions (per GPU).
    # K26 TP8: 60,840 cached tokens x 35,136 B (576 x 61 layers x 1 B fp8) = 2.138 GB per session (MLA's latent is
    # replicated over TP: all 8 GPUs keep the same sessions); host DRAM 1,024 GB / 8 = 128 GB per GPU:
    # 128 / 2.138 = 59.9 sessions per replica, not 8 x 59.9
    at = run_page("pages/1_Fit.py", timeout=120, tp="8", etp="1", **K26)
    (tiers,) = [d.value for d in at.dataframe if "load one prefix (ms)" in d.value.columns]
    assert "sessions' prefixes held per replica" in tiers.columns
    assert "sessions' prefixes held per GPU" not in tiers.columns
    host = tiers.set_index("tier").loc["host"]
    assert host["sessions' prefixes held per replica"] == pytest.approx(128e9 / (60_840 * 35_136), rel=1e-9)
    caption = " ".join(c.value for c in at.caption)
    assert "split over the 8 GPUs of its attention group, so they are counted per group, not per GPU" in caption
    # the default DP-attention layout: whole prefixes on each GPU, counted per GPU
    at = run_page("pages/1_Fit.py", timeout=120, **K26)
    (tiers,) = [d.value for d in at.dataframe if "load one prefix (ms)" in d.value.columns]
    assert "sessions' prefixes held per GPU" in tiers.columns
