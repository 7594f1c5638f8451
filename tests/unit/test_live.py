import math

import pytest

from core import speculative as sd
from core.speculative import live

VLLM = """# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 1000.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 5000.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 2600.0
vllm:num_requests_running{engine="0"} 12
"""


def test_vllm_acceptance():
    o = live.spec_observation(VLLM)
    # 2,600 accepted of 5,000 proposed; 1 + 2,600 / 1,000 drafts = 3.6 tokens per step; gamma = 5
    assert (o.engine, o.acceptance_rate, o.tokens_per_step, o.gamma) == ("vLLM", 0.52, 3.6, 5.0)
    # vLLM's acceptance is per proposed token, a lower bound on the chain alpha: E(0.52, 5) = 2.07 < 3.6
    assert sd.expected_tokens(0.52, 5) < o.tokens_per_step


def test_sglang_and_errors():
    o = live.spec_observation('sglang:spec_accept_length{model_name="x"} 3.2\n')
    assert o.engine == "SGLang" and o.tokens_per_step == 3.2 and math.isnan(o.acceptance_rate)
    with pytest.raises(ValueError, match="no speculative-decoding metrics"):
        live.spec_observation("up 1\n")
    with pytest.raises(ValueError, match="line 2: not a Prometheus sample"):
        live.spec_observation("up 1\n{{{\n")


def test_implied_alpha_inverts_the_closed_form():
    a = live.implied_alpha(3.6, 5)
    assert sd.expected_tokens(a, 5) == pytest.approx(3.6, abs=1e-9)
    assert 0.78 < a < 0.80  # (1 - a^6) / (1 - a) = 3.6 at a = 0.789
    with pytest.raises(ValueError, match="within 1 and gamma"):
        live.implied_alpha(7, 5)


def test_sglang_accept_length_is_averaged_over_ranks():
    # a gauge per tensor-parallel rank: two ranks at 3.0 and 4.0 tokens per step are 3.5 on average, not 7
    text = 'sglang:spec_accept_length{tp_rank="0"} 3.0\nsglang:spec_accept_length{tp_rank="1"} 4.0\n'
    obs = live.spec_observation(text)
    assert obs.engine == "SGLang" and obs.tokens_per_step == 3.5


def _vllm(accepted: float, draft_tokens: float, drafts: float) -> str:
    return (
        f"vllm:spec_decode_num_drafts_total {drafts}\n"
        f"vllm:spec_decode_num_draft_tokens_total {draft_tokens}\n"
        f"vllm:spec_decode_num_accepted_tokens_total {accepted}\n"
    )


def test_drafts_per_step_outside_1_64_is_a_message():
    """The Speculative page fed gamma = draft tokens / drafts to implied_alpha, which raised for gamma > 64
    or gamma < 0.5 (rounded to 0): the reader now refuses it naming the value and the range."""
    # 100,000 draft tokens over 1,000 drafts = 100 per step
    with pytest.raises(ValueError, match=r"imply 100 draft tokens per step .*allowed: 1-64"):
        live.spec_observation(_vllm(500, 100_000, 1_000))
    # 300 / 1,000 = 0.3 per step (rounds to 0)
    with pytest.raises(ValueError, match=r"imply 0\.3 draft tokens per step .*allowed: 1-64"):
        live.spec_observation(_vllm(100, 300, 1_000))
    # 64.4 rounds to 64 (in range); 1 + 6,000 / 1,000 = 7 tokens per step
    o = live.spec_observation(_vllm(6_000, 64_400, 1_000))
    assert o.gamma == pytest.approx(64.4) and o.tokens_per_step == 7.0
    assert 0 < live.implied_alpha(o.tokens_per_step, round(o.gamma)) < 1


def test_byte_order_mark_is_accepted():
    o = live.spec_observation("\ufeff" + VLLM)
    assert o.tokens_per_step == 3.6  # 1 + 2,600 / 1,000, as without the BOM


def test_an_openmetrics_exemplar_is_read_past():
    # reliability probe 3, minor note: "... 1 # {trace_id="a"} 1" was refused as "not a Prometheus sample". The
    # exemplar after " # " names a trace, not the sample: the sample's value (here 7) is what counts.
    from core.balance import parse_prometheus_loads

    text = 'sglang_spec_accept_length{model="m"} 2.5 # {trace_id="a"} 1\n'
    assert live.parse_samples(text)["sglang_spec_accept_length"] == 2.5
    loads, _ = parse_prometheus_loads(
        'expert_load{layer="0",expert="0"} 7 # {trace_id="a"} 1 1700000000\nexpert_load{layer="0",expert="1"} 3\n'
    )
    assert loads.tolist() == [[7.0, 3.0]]
