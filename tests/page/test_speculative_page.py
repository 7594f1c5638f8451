"""AppTest runs of the Speculative page."""

import pytest

from tests.page._util import metrics, qp, run_page


def closed_form(at) -> str:
    """The closed-form speedup E / (γc + 1) the page shows beside its batch-1 speedup."""
    delta = next(m.delta for m in at.metric if m.label == "Speedup at batch 1")
    return delta.removeprefix("closed form E / (γc + 1) = ")


def step_model_at_batch1(**query) -> float:
    """What the speedup-vs-batch chart draws at one sequence: core.speculative.batch_speedup on the scenario."""
    from core import speculative as sd
    from core.catalog import load_catalog
    from core.scenario import scenario_from_params
    from core.scenario.deploy import resolve

    cat = load_catalog()
    s, _ = scenario_from_params(query, cat)
    alpha = sd.resolved_alpha_cost(s.spec, cat.draft_methods)
    r = sd.batch_speedup(
        resolve(s, cat), [1], alpha=alpha[0], gamma=s.spec.num_speculative_tokens,
        context_len=s.workload.decode_context_len, draft_cost=alpha[1],
    )  # fmt: skip
    return float(r.speedup[0])


def test_sources_example_alpha_075():
    at = run(model="llama-3-70b", gpu="h100-sxm", gpn="2", sd="eagle3", alpha="0.75", c="0.1", gamma="5")
    m = metrics(at)
    assert m["Tokens per step"] == "3.29" and closed_form(at) == "2.19×"
    assert m["Ceiling (tokens/step)"] == "4.00"  # 1 / (1 - 0.75)
    # nothing is published for this draft: the best length is the closed form's (5 here, the scenario's own), and
    # its speedup is the same batch-1 figure as the headline, not a second number for the same length
    best = next(x for x in at.metric if x.label == "Best γ")
    assert best.value == "5" and best.delta.startswith(m["Speedup at batch 1"] + " there")
    assert len(at.get("vega_lite_chart")) == 5  # the simulator's chart comes on request (below)


def test_alpha_085():
    at = run(model="llama-3-70b", gpu="h100-sxm", gpn="2", sd="eagle3", alpha="0.85", c="0.1", gamma="5")
    m = metrics(at)
    assert m["Tokens per step"] == "4.15" and closed_form(at) == "2.77×"


def test_off_suggests_mtp_for_deepseek_and_eagle3_otherwise():
    at = run(model="deepseek-v3")
    assert at.selectbox(key="_w_sd_page").value == "mtp"
    assert "It is **off** in this scenario" in at.markdown[0].value
    at = run(model="qwen3-235b-a22b")
    assert at.selectbox(key="_w_sd_page").value == "eagle3"
    assert "mtp" not in at.selectbox(key="_w_sd_page").options


def test_picking_a_method_fills_its_defaults_and_turns_it_on():
    at = run(model="llama-3-70b", gpu="h100-sxm", gpn="2")
    at.selectbox(key="_w_sd_page").set_value("ngram").run()
    assert qp(at)["sd"] == "ngram"
    from core.catalog import load_catalog

    ngram = load_catalog().draft_method("ngram")
    assert at.slider(key="_w_alpha").value == pytest.approx(ngram.default_alpha)
    assert at.number_input(key="_w_gamma_page").value == ngram.default_gamma


def test_worked_example_preset_loads_the_scenario():
    at = run()
    # the chapter's code assistant (core.speculative.worked_example): 0.7 x 0.88 + 0.3 x 0.72 = 0.832
    blended = next(mm for mm in at.metric if mm.label == "Blended α")
    assert blended.value == "0.832" and blended.delta == "3.98 tokens/step, 2.53× at γ 5, c 16/140"
    assert at.button[0].label.startswith("Load this example as the scenario (Llama-3-70B + Llama-3-8B draft on 2 × ")
    at.button[0].click().run()
    q = qp(at)
    assert (q["model"], q["gpu"], q["gpn"], q["sd"], q["draft"], q["gamma"]) == (
        "llama-3-70b",
        "h100-sxm",
        "2",
        "draft_model",
        "llama-3-8b",
        "5",
    )
    assert float(q["alpha"]) == pytest.approx(0.832)
    m = metrics(at)
    # blended alpha 0.832, gamma 5, c = 16/140: (1 - 0.832^6) / 0.168 = 3.98 tokens; / 1.571 = 2.53x
    assert m["Tokens per step"] == "3.98" and closed_form(at) == "2.53×"


def test_temperature_lowers_alpha():
    at = run(model="llama-3-70b", gpu="h100-sxm", gpn="2", sd="eagle3", alpha="0.85", c="0.1", gamma="5")
    at.slider[1].set_value(1.0).run()  # sampling temperature
    assert any("α = 0.85 − 0.125 × 1 = **0.725**" in i.value for i in at.info)


def test_simulator_agrees_with_the_closed_form():
    at = run()
    assert not any(mm.label == "Tokens per step (simulated)" for mm in at.metric)  # on request only
    charts = len(at.get("vega_lite_chart"))
    at.toggle(key="spec_sim").set_value(True).run()
    assert len(at.get("vega_lite_chart")) == charts + 1
    sim_tokens = next(mm for mm in at.metric if mm.label == "Tokens per step (simulated)")
    closed = float(sim_tokens.delta.split()[-1])
    assert float(sim_tokens.value) == pytest.approx(closed, abs=0.03)


def test_bad_url_alpha_warns():
    at = run(sd="eagle3", alpha="1.7")
    assert any("alpha=1.7 is outside 0-1" in w.value for w in at.sidebar.warning)


def run(**query):
    return run_page("pages/4_Speculative.py", timeout=60, **query)


def test_live_scrape_gives_implied_alpha():
    at = run(model="llama-3-70b", gpu="h100-sxm", gpn="2", sd="eagle3", alpha="0.75", c="0.1", gamma="5")
    at.text_area(key="live_scrape").input(
        "vllm:spec_decode_num_drafts_total 1000\nvllm:spec_decode_num_draft_tokens_total 5000\n"
        "vllm:spec_decode_num_accepted_tokens_total 2600\n"
    ).run()
    m = metrics(at)
    assert m["Observed tokens per step"] == "3.60"
    assert m["Implied chain α"] == "0.789"
    at.text_area(key="live_scrape").input("garbage {{{").run()
    assert any("Could not read the scrape" in e.value for e in at.error)


def test_live_scrape_with_drafts_per_step_outside_1_64_is_a_message():
    """Issue #21: 100 or 0.3 draft tokens per step (draft tokens / drafts) raised in implied_alpha."""
    at = run(model="llama-3-70b", gpu="h100-sxm", gpn="2", sd="eagle3", gamma="5")
    assert at.text_area(key="live_scrape").max_chars == 5_000_000  # the reader's limit, kept by the browser
    for draft_tokens, shown in ((100_000, "100"), (300, "0.3")):  # over 1,000 drafts
        at.text_area(key="live_scrape").input(
            f"vllm:spec_decode_num_drafts_total 1000\nvllm:spec_decode_num_draft_tokens_total {draft_tokens}\n"
            "vllm:spec_decode_num_accepted_tokens_total 200\n"
        ).run()
        assert not at.exception
        assert any(f"imply {shown} draft tokens per step" in e.value and "allowed: 1-64" in e.value for e in at.error)
        assert "Implied chain α" not in metrics(at)


def test_4096_gpus_get_a_layout_the_model_runs():
    """512 x 8 GPUs is within the README's limits; the default layout there (PP 4,096 on 61 layers) raised in
    the measured-acceptance view. Pipelines now stop at the layer count (PP 32 x DP 16 at TP 8)."""
    at = run(nodes="512", gpn="8")
    assert not at.exception and not at.error
    assert next(x for x in at.metric if x.label == "Best γ").value == "1"  # DeepSeek-V3 MTP, measured at k = 1


def test_one_default_per_method_by_link_sidebar_page_and_cli(capsys):
    import json

    import cli.main as cli

    # DeepSeek-V3 has one MTP module: gamma 1 however MTP is switched on (the link used to give gamma 3: 2.93x)
    link = run(model="deepseek-v3", sd="mtp")
    side = run(model="deepseek-v3")
    side.selectbox(key="_w_sd").set_value("mtp").run()
    page = run(model="deepseek-v3")  # speculation off: the page explores the model's MTP at its defaults
    assert page.selectbox(key="_w_sd_page").value == "mtp" and page.number_input(key="_w_gamma_page").value == 1
    for at in (link, side):
        assert not at.exception
        assert qp(at)["sd"] == "mtp" and qp(at)["gamma"] == "1"
    # alpha 0.87, gamma 1, c 0.04 (catalog defaults): E = 1 + 0.87 = 1.87 tokens, 1.87 / 1.04 = 1.80x
    assert {closed_form(at) for at in (link, side, page)} == {"1.80×"}
    # one speedup at batch 1 on every page: the step-time model's, the same on the page's metric and its chart
    assert len({metrics(at)["Speedup at batch 1"] for at in (link, side, page)}) == 1
    assert metrics(link)["Speedup at batch 1"] == f"{step_model_at_batch1(model='deepseek-v3', sd='mtp'):.2f}×"
    assert cli.main(["--url", "model=deepseek-v3&sd=mtp", "--format", "json", "--no-layouts"]) == 0
    report = json.loads(capsys.readouterr().out)
    figures = next(s for s in report["sections"] if s["title"] == "Speculative decoding")["figures"]
    assert figures["Speedup at batch 1"].startswith(metrics(link)["Speedup at batch 1"] + " (step-time model")
    assert (
        figures["Speedup at batch 1"].endswith("closed form E / (γc + 1) gives 1.80×)") and "γ 1" in figures["Assumed"]
    )
    # the Disaggregation page starts from the same scenario's speedup by link and by sidebar
    d_link = run_page("pages/7_Disaggregation_and_cost.py", timeout=120, model="deepseek-v3", sd="mtp")
    d_side = run_page("pages/7_Disaggregation_and_cost.py", timeout=120, model="deepseek-v3")
    d_side.selectbox(key="_w_sd").set_value("mtp").run()
    k = "Speculative decode speedup (×)"
    values = [next(n.value for n in at.number_input if n.label == k) for at in (d_link, d_side)]
    assert values[0] == values[1] > 1.0


def test_best_gamma_follows_the_measured_curve_or_the_module_depth():
    # DeepSeek-V3 MTP: SGLang measured 1.9 tokens per step at one draft token, Nebius 3.20 at seven; the constant
    # alpha = 0.87 closed form said "best gamma 12 -> 4.35x". The page recommends the best measured length over
    # every published curve: on the default DP-attention 8 / EP8 layout the k = 7 card gives 1.93x against the
    # k = 1 curve's 1.73x (numbers audit 3, B4.8)
    at = run(model="deepseek-v3", sd="mtp")
    best = next(x for x in at.metric if x.label == "Best γ")
    assert best.value == "7" and "measured (deepseek-v3/mtp/nebius-card/t0" in best.delta
    assert best.delta.startswith("1.93×")
    # and it no longer says "+0.63x from +1 gamma": nothing published measures a second token at k = 2
    assert next(x for x in at.metric if x.label == "Gain from +0.05 α").delta.startswith("vs unmeasured")
    assert any("Measured acceptance" in h.value for h in at.subheader)
    # GLM-5 has one MTP module and no published curve: held to it, and one more token gains nothing measured
    at = run(model="glm-5", sd="mtp", gamma="1")
    best = next(x for x in at.metric if x.label == "Best γ")
    assert best.value == "1" and "1-module MTP depth" in best.delta
    gain = next(x for x in at.metric if x.label == "Gain from +0.05 α")
    assert gain.delta.startswith("vs unmeasured from +1 γ")


def test_best_gamma_by_batch_from_the_measured_curve():
    # Qwen3.5-397B MTP (InferenceX, thinking on: 1.93 ... 5.21 tokens at k = 1..8): the page lists the best
    # published length at batch 1, 8, 32 and 128, and the batch-1 entry is the "Best γ" it recommends
    import re

    at = run(model="qwen3.5-397b-a17b", gpu="b200", sd="mtp")
    assert not at.exception
    row = next(c.value for c in at.caption if c.value.startswith("Best γ as the batch grows"))
    found = re.findall(r"batch (\d+): γ (\d+) \(([\d.]+)×\)", row)
    assert [int(b) for b, _, _ in found] == [1, 8, 32, 128]
    assert all(1 <= int(g) <= 8 and float(x) > 1 for _, g, x in found)
    best = next(x for x in at.metric if x.label == "Best γ")
    assert best.value == found[0][1] and best.delta.startswith(f"{found[0][2]}×")
