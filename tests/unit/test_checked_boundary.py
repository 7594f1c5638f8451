"""Validation at the boundary: the communication primitives users and pages call with raw numbers check them
(:mod:`core.comms`, :mod:`core.hardware.collectives`, :mod:`core.perf.dispatch`'s public functions); the step
model, whose deployment and step are validated where they are made, calls the same formulas unchecked."""

import pytest

from core import comms, perf
from core._util import checks
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout
from core.hardware import collectives
from core.hardware.efficiency import LinkFactors
from core.perf import dispatch

CAT = load_catalog()
V3 = CAT.model("deepseek-v3")
H200 = CAT.gpu("h200")
LINK = LinkFactors(scale_up_eff=0.8, scale_out_eff=0.8, latency_us=10.0)


def test_the_unchecked_formulas_by_hand():
    # 10 us + 1 GB over 100 GB/s at 50% = 10 us + 20 ms
    assert comms.link_time_s_unchecked(1e9, 100.0, 0.5, 1e-5) == pytest.approx(0.02001)
    assert comms.pp_send_bytes_unchecked(4.0, 7168) == 4 * 7168 * 2  # bf16 activations
    assert comms.fp8_scale_bytes_unchecked(7168) == 224  # 56 fp32 scales
    s = comms.alltoall_split_unchecked(72e6, 72, 8)  # 1/72 local, 7/72 over NVLink, 64/72 over the network
    assert (s.local, s.scale_up, s.scale_out) == pytest.approx((1e6, 7e6, 64e6))
    # the slower side: 64 MB over 50 GB/s x 0.8 = 1.6 ms (7 MB over 450 GB/s is 15.6 us), plus 10 us
    t = comms.alltoall_time_s_unchecked(s, 450.0, 50.0, scale_up_eff=1.0, scale_out_eff=0.8, latency_s=1e-5)
    assert t == pytest.approx(1.61e-3)
    # no table: one latency + 2 x 7/8 of 1 GB over 900 GB/s x 0.8 = 10 us + 2.4306 ms
    ar = collectives.collective_s_unchecked(
        "all_reduce",
        1e9,
        8,
        table=None,
        stack="sglang",
        graph=True,
        scale_up_gbps=900.0,
        scale_out_gbps=50.0,
        domain_gpus=8,
        link=LINK,
    )
    assert ar == pytest.approx(10e-6 + 1.75e9 / 720e9)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: comms.link_time_s(1.0, 0), r"bandwidth \(GB/s\) must be a finite number in \(0, 1e\+09\]"),
        (lambda: comms.link_time_s(float("nan"), 100), "bytes must be finite and >= 0"),
        (lambda: comms.alltoall_split(1e308, 72, 8), "scale-up bytes overflows"),
        (lambda: comms.fp8_scale_bytes(7168.0), "d_model must be a whole number"),
        (lambda: comms.pp_send_bytes(-1.0, 7168), "tokens must be finite and >= 0"),
        (
            lambda: comms.alltoall_time_s(comms.AllToAllSplit(0, 1, 1), 450, 50, scale_out_eff=2.0),
            r"scale-out efficiency must be a finite number in \(0, 1.5\]",
        ),
        (lambda: comms.bin_touch_probability(256, 8, 32, 8, 9), r"topk_groups must be in \[1, n_groups\]"),
        (
            lambda: collectives.collective_s(
                "all_reduce",
                -1.0,
                8,
                table=None,
                stack="sglang",
                graph=True,
                scale_up_gbps=900.0,
                scale_out_gbps=50.0,
                domain_gpus=8,
                link=LINK,
            ),
            "message bytes must be finite and >= 0",
        ),
        (lambda: dispatch.token_copy_bytes(0, "fp8"), "d_model must be a whole number in 1..10,000,000"),
        (lambda: dispatch.normal_kernel_fanout(V3, 32, 8, (8,)), r"routing_groups must be \(groups, groups per"),
        # a routing group given as 4.0 is refused where it is given, not only where a bin happens to use it
        (lambda: dispatch.normal_kernel_fanout(V3, 3, 8, (4.0, 2)), "n_groups must be a whole number"),
        (
            lambda: dispatch.alltoall_call_split(V3, ParallelLayout(attention_dp=32, ep=32), 1e13, "fp8", "normal", 8),
            r"tokens_per_gpu must be a finite number in \[0, 1e\+12\]",
        ),
        (
            lambda: dispatch.alltoall_call_s(
                Deployment(V3, H200, ParallelLayout(attention_dp=32, ep=32), domain_gpus=8),
                128.0,
                "fp8",
                "normal",
                LINK,
                routing_groups=(8, 9),
            ),
            r"topk_groups must be in \[1, n_groups\]",
        ),
        (
            lambda: dispatch.alltoall_call_s(
                Deployment(V3, H200, ParallelLayout(attention_dp=32, ep=32), domain_gpus=8),
                128.0,
                "fp8",
                "fast",
                LINK,
            ),
            "kind must be low_latency or normal",
        ),
    ],
)
def test_the_public_primitives_still_check_raw_numbers(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_models_expert_groups_are_checked_where_the_touch_probability_is_computed():
    # a model read from a config may route to 9 of 8 groups (the model spec does not compare the two): the unchecked
    # touch probability still answers with a ValueError, not a division by C(8, 9) = 0
    with pytest.raises(ValueError, match=r"topk_groups must be in \[1, n_groups\]"):
        comms.bin_touch_probability_unchecked(256, 8, 4, 8, 9)
    # DeepSeek-V3's 256 experts, k = 8, 4 of 8 groups, one GPU of EP32 (8 experts, an eighth of a group):
    # its group is chosen with probability 4/8, then 1 - C(120, 8) / C(128, 8) = 0.4122 (comms' docstring: 0.2061)
    assert comms.bin_touch_probability_unchecked(256, 8, 32, 8, 4) == pytest.approx(0.2061, abs=1e-4)


CHECKS = ("whole", "amount", "nonneg", "nonneg_array", "no_overflow")
MODULES = (comms, collectives, dispatch)


@pytest.fixture
def check_calls(monkeypatch):
    """The checks each of the communication modules calls, counted by name."""
    calls: list[str] = []
    for mod in MODULES:
        for name in CHECKS:
            if hasattr(mod, name):
                real = getattr(checks, name)

                def spy(*a, _real=real, _name=f"{mod.__name__}.{name}", **k):
                    calls.append(_name)
                    return _real(*a, **k)

                monkeypatch.setattr(mod, name, spy)
    return calls


def test_the_spies_see_the_checked_primitives(check_calls):
    comms.link_time_s(1e9, 100.0)
    dispatch.token_copy_bytes(7168, "fp8")
    assert "core.comms.amount" in check_calls and "core.perf.dispatch.whole" in check_calls


@pytest.mark.parametrize(
    ("layout", "phase", "parts"),
    [
        # DP attention, experts by EP on DeepEP: a low-latency dispatch and combine in decode, normal in prefill
        (ParallelLayout(attention_dp=16, ep=16), "decode", {"dispatch", "combine"}),
        (ParallelLayout(attention_dp=16, ep=16), "prefill", {"dispatch", "combine"}),
        # TP attention: the all-reduces; DP attention with expert TP: the all-gather / reduce-scatter
        (ParallelLayout(attention_tp=16, ep=16), "decode", {"allreduce"}),
        (ParallelLayout(attention_tp=2, attention_dp=8, ep=4, expert_tp=4), "decode", {"expert_tp_comm"}),
    ],
)
def test_the_step_model_checks_no_communication_number_again(check_calls, layout, phase, parts):
    # one pipeline stage: the stage-to-stage send is timed by core.perf.kernels (its own change)
    d = Deployment(V3, H200, layout, "fp8", CAT.efficiency_for("h200", "sglang"), domain_gpus=8)
    st = perf.step_time(d, perf.StepConfig(phase, 64.0 if phase == "decode" else 2048.0, 4096))
    assert parts <= {k for k, v in st.components.items() if v > 0}
    assert check_calls == []
