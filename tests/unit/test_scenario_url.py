from hypothesis import given, settings
from hypothesis import strategies as st

from core.catalog import load_catalog
from core.deployment.specs import Precision, Scenario, Workload
from core.scenario import DEFAULT_SCENARIO, URL_KEYS, scenario_from_params, scenario_to_params

cat = load_catalog()


def test_round_trip_is_exact():
    s = Scenario(
        model_id="llama-4-maverick",
        gpu_id="mi300x",
        num_nodes=4,
        gpus_per_node=8,
        precision=Precision(weights="bf16", routed_experts="int4", kv_cache="fp8", dispatch="fp8"),
        workload=Workload(batch=300, input_len=8192, output_len=100),
    )
    params = scenario_to_params(s)
    assert params["ex"] == "int4" and params["gpn"] == "8"
    back, warnings = scenario_from_params(params, cat)
    assert back == s and warnings == []


def test_empty_query_is_the_default():
    assert scenario_from_params({}, cat) == (DEFAULT_SCENARIO, [])


def test_a_repeated_key_uses_the_last_value_and_says_so():
    # the last, as st.query_params[key] and Python's dict(parse_qsl(...)) (the CLI) read a repeated key
    s, w = scenario_from_params({"model": ["mixtral-8x7b", "grok-1"]}, cat)
    assert s.model_id == "grok-1"
    assert w == ["URL key 'model' is given 2 times; using the last value, 'grok-1'"]
    # the same value twice is not a conflict: nothing to say
    assert scenario_from_params({"gpu": ["h100-sxm", "h100-sxm"]}, cat) == (
        scenario_from_params({"gpu": "h100-sxm"}, cat)[0],
        [],
    )
    # several repeated keys: one warning naming each
    _, w = scenario_from_params({"model": ["grok-1", "mixtral-8x7b"], "nodes": ["1", "2", "3"]}, cat)
    assert w == [
        "URL key 'model' is given 2 times; using the last value, 'mixtral-8x7b'; "
        "URL key 'nodes' is given 3 times; using the last value, '3'"
    ]


def test_unknown_keys_are_named_with_the_known_ones():
    known = "known keys: " + ", ".join(URL_KEYS)
    s, w = scenario_from_params({"model": "grok-1", "gpus": "64", "precision": "fp8"}, cat)
    # gpus= is not gpn= and precision= is not w=: the default 1 x 8 GPUs and fp8 weights stay
    assert s.model_id == "grok-1" and s.total_gpus == 8
    assert w == [f"unknown URL keys 'gpus' (did you mean 'gpu'?), 'precision' ignored; {known}"]
    _, w = scenario_from_params({"gpus": "64"}, cat)
    assert w == [f"unknown URL key 'gpus' (did you mean 'gpu'?) ignored; {known}"]
    # a hostile key is shown shortened, and at most five are listed
    _, w = scenario_from_params({"k" * 10_000: "1", **{f"x{i}": "1" for i in range(9)}}, cat)
    assert len(w) == 1 and "'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...'" in w[0] and "and 5 more" in w[0]
    assert len(w[0]) < 500


def test_expert_dtype_equal_to_weights_is_dropped():
    s, _ = scenario_from_params({"w": "fp8", "ex": "fp8"}, cat)
    assert s.precision.routed_experts is None and "ex" not in scenario_to_params(s)


def test_too_many_gpus_falls_back_with_a_warning():
    s, w = scenario_from_params({"nodes": "4096", "gpn": "1024"}, cat)
    assert s.total_gpus == 8 and "65,536" in w[0]


def test_close_ids_are_suggested():
    _, w = scenario_from_params({"model": "deepseek-v3.1"}, cat)
    assert "Closest: deepseek-v3" in w[0]


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([*URL_KEYS, "junk"]),
        st.one_of(st.text(max_size=300), st.lists(st.text(max_size=20), max_size=3)),
    )
)
def test_any_query_gives_a_valid_scenario_and_one_warning_per_bad_field(query):
    s, warnings = scenario_from_params(query, cat)
    assert isinstance(s, Scenario)
    assert s.model_id in cat.models and s.gpu_id in cat.gpus
    # one per bad field, one for the unknown keys, one for the repeated ones
    assert len(warnings) <= len(URL_KEYS) + 2
    assert all(len(w) < 700 for w in warnings)
    # what is written back reads back identically, with no warning
    assert scenario_from_params(scenario_to_params(s), cat) == (s, [])


def test_layout_speculative_and_assumptions_round_trip():
    params = {
        "model": "deepseek-v3",
        "gpu": "h800",
        "nodes": "4",
        "gpn": "8",
        "tp": "1",
        "etp": "1",
        "pp": "1",
        "dp": "1",
        "sd": "mtp",
        "gamma": "2",
        "util": "0.85",
        "red": "32",
    }
    s, w = scenario_from_params(params, cat)
    assert w == []
    assert (s.layout.attention_dp, s.layout.ep, s.layout.attention_tp) == (32, 32, 1)
    assert s.spec.method == "mtp" and s.spec.num_speculative_tokens == 2
    assert s.memory.gpu_memory_utilization == 0.85 and s.memory.redundant_experts == 32
    assert scenario_from_params(scenario_to_params(s), cat) == (s, [])


def test_defaults_stay_out_of_the_url():
    p = scenario_to_params(DEFAULT_SCENARIO)
    assert not {"tp", "sd", "util", "red", "draft"} & set(p)


def test_bad_layout_and_spec_fall_back_with_warnings():
    s, w = scenario_from_params({"tp": "3", "sd": "draft_model", "util": "nan"}, cat)
    assert s.layout is None and not s.spec.enabled and s.memory.gpu_memory_utilization == 0.9
    text = " | ".join(w)
    assert "tp 3 must divide the 8 GPUs" in text
    assert "sd=draft_model needs draft=" in text
    assert "util=nan is outside" in text


def test_layout_from_sizes():
    from core.scenario import layout_from_sizes

    lay = layout_from_sizes(16, tp=8, etp=1, pp=2, dp=1)
    assert (lay.attention_tp, lay.attention_dp, lay.ep, lay.expert_tp, lay.pp) == (8, 1, 8, 1, 2)
    import pytest

    with pytest.raises(ValueError, match=r"pp x dp \(3 x 1\) must divide the 16 GPUs"):
        layout_from_sizes(16, tp=1, etp=1, pp=3, dp=1)


def test_serving_stack_round_trips_and_bad_values_warn():
    from core.catalog import load_catalog
    from core.scenario import scenario_from_params, scenario_to_params

    cat = load_catalog()
    s, warnings = scenario_from_params({"stack": "vllm"}, cat)
    assert s.serving_stack == "vllm" and warnings == []
    assert scenario_to_params(s)["stack"] == "vllm"
    assert "stack" not in scenario_to_params(scenario_from_params({}, cat)[0])  # sglang, the default
    s, warnings = scenario_from_params({"stack": "tgi"}, cat)
    assert s.serving_stack == "sglang"
    assert len(warnings) == 1 and "stack='tgi'" in warnings[0] and "sglang, vllm, trtllm" in warnings[0]


def test_a_link_starts_each_speculative_method_at_its_one_default_draft_length():
    from core import speculative as sd
    from core.catalog import load_catalog
    from core.scenario import SPEC_METHODS, scenario_from_params

    cat = load_catalog()
    # DeepSeek-V3 has one MTP module (num_nextn_predict_layers 1): MTP starts at one draft token
    s, _ = scenario_from_params({"sd": "mtp"}, cat)
    assert s.spec.num_speculative_tokens == 1
    for method in SPEC_METHODS:
        if method in ("none", "draft_model"):
            continue
        s, warnings = scenario_from_params({"sd": method}, cat)
        assert not warnings and s.spec.num_speculative_tokens == sd.default_gamma(method, cat.draft_methods)
        # an explicit gamma still wins
        s, _ = scenario_from_params({"sd": method, "gamma": "7"}, cat)
        assert s.spec.num_speculative_tokens == 7


def test_mtp_on_a_model_without_an_mtp_module_is_refused_with_a_reason():
    # Mixtral-8x7B's config has no next-n module (num_nextn_predict_layers absent = 0): the URL cannot turn MTP on
    s, warnings = scenario_from_params({"model": "mixtral-8x7b", "sd": "mtp"}, cat)
    assert s.spec.method == "none"
    assert any("sd=mtp" in w and "no MTP module" in w for w in warnings)
    # DeepSeek-V3 ships one MTP module: accepted, no warning
    s, warnings = scenario_from_params({"model": "deepseek-v3", "sd": "mtp"}, cat)
    assert s.spec.method == "mtp" and warnings == []


def test_speculative_knobs_without_a_method_are_named_not_dropped_silently():
    s, warnings = scenario_from_params({"gamma": "3", "alpha": "0.8", "c": "0.05"}, cat)
    assert s.spec.method == "none"
    assert len(warnings) == 1 and warnings[0].startswith("URL gamma, alpha, c ignored: no speculative method")


def test_the_util_help_text_states_the_range_the_url_reader_accepts():
    """Issue 37 (probe 3 minor note): URL_KEYS said "above 0 up to 1" while the reader refuses below 0.05."""
    assert URL_KEYS["util"] == "gpu_memory_utilization, 0.05-1"
    for value, kept in (("0.05", True), ("1", True), ("0.049", False), ("0.01", False), ("1.01", False)):
        s, warnings = scenario_from_params({"util": value}, cat)
        assert (s.memory.gpu_memory_utilization == float(value)) is kept and bool(warnings) is not kept, value
        if not kept:
            assert f"util={value} is outside 0.05-1" in warnings[0]
