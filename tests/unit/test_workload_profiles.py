"""Workload profiles (issue 23, core/serving/workload_profiles.py): the catalog's loader, its validation messages and
what a profile gives the planner. The shipped profiles' figures are checked against their sources in
test_workload_catalog below."""

import textwrap

import pytest

from core.serving import workload_profiles as wp

GOOD = """
profiles:
  - id: agentic
    name: Agentic multi-turn
    description: long shared prefixes
    input_tokens: {median: 67000, p90: 120000, mean: 70000}
    output_tokens: {median: 400, p90: 1200, mean: null}
    prefix_reuse: 0.9
    turns: 20
    source: test
    confidence: assumption
"""


def _write(tmp_path, text, name="workloads.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def test_a_profile_gives_the_planner_its_workload(tmp_path):
    (p,) = wp.load_profiles(_write(tmp_path, GOOD))
    # the mean where published (input 70,000), else the median (output 400)
    w = p.workload(batch=8)
    assert (w.batch, w.input_len, w.output_len, w.prefix_reuse) == (8, 70_000, 400, 0.9)
    # a warm prefix cache serves 90%: 7,000 of the 70,000 prompt tokens are computed
    assert p.computed_input_tokens == pytest.approx(7_000)
    assert wp.profile("agentic", _write(tmp_path, GOOD, "b.yaml")).turns == 20


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("median: 67000, p90: 120000", "median: 67000, p90: 60000"), "p90 (60,000) is below the median (67,000)"),
        (("prefix_reuse: 0.9", "prefix_reuse: 1.5"), "prefix_reuse"),
        (("id: agentic", "id: agentic-2"), "id"),
        (("turns: 20", "turns: 0.5"), "turns"),
        (("confidence: assumption", "confidence: sure"), "confidence"),
    ],
)
def test_a_bad_entry_names_the_profile_and_the_field(tmp_path, change, message):
    with pytest.raises(ValueError, match=r"workloads\.yaml: profile") as err:
        wp.load_profiles(_write(tmp_path, GOOD.replace(*change)))
    assert message in str(err.value)


def test_a_bad_file_is_named(tmp_path):
    with pytest.raises(ValueError, match="one key, 'profiles'"):
        wp.load_profiles(_write(tmp_path, "profiles: {}\n"))
    with pytest.raises(ValueError, match="appear more than once"):
        wp.load_profiles(_write(tmp_path, GOOD + GOOD.split("profiles:\n", 1)[1]))
    with pytest.raises(ValueError, match="no workload catalog there"):
        wp.load_profiles(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match="unknown workload profile 'chatty'"):
        wp.profile("chatty", _write(tmp_path, GOOD, "c.yaml"))


def test_workload_catalog():
    """The shipped profiles against their sources (catalogs/workloads.yaml cites each), by hand."""
    got = {p.id: p for p in wp.load_profiles()}
    assert tuple(got) == wp.PROFILE_IDS
    assert all(p.source and p.confidence for p in got.values())
    # batch / offline: InferenceX's 1k/1k shape, lengths uniform on 819..1,024 (range ratio 0.8 of 1,024): mean
    # (819 + 1,024) / 2 = 921.5 -> 922, median the same, p90 819 + 0.9 x 205 = 1,003.5 -> 1,004; random prompts
    batch = got["batch_offline"]
    assert (batch.input_tokens.median, batch.input_tokens.p90, batch.input_tokens.mean) == (922, 1004, 922)
    assert batch.prefix_reuse == 0.0 and batch.turns == 1.0
    # chat: the Splitwise (Azure 2023) conversation trace's ~1K-token prompts and 129-token median outputs;
    # Mooncake's conversation trace: 40% of prompt tokens from the prefix cache
    chat = got["chat"]
    assert (chat.input_tokens.median, chat.output_tokens.median, chat.prefix_reuse) == (1020, 129, 0.40)
    # agentic (TraceLab, Codex): 216,823 steps over 1,589 sessions = 136.45 requests per session; 95.7% of prompt
    # tokens cached, inside the 85.8-96.8% every agentic source reports; a warm cache computes 4.3% of a
    # 121,906-token mean prompt: 121,906 - round(0.957 x 121,906 = 116,664.04) = 5,242 tokens (the planner's count)
    agent = got["agentic"]
    assert agent.turns == pytest.approx(216_823 / 1_589, abs=0.005)
    assert 0.858 <= agent.prefix_reuse <= 0.968
    assert agent.computed_input_tokens == 121_906 - 116_664 == 5_242
    # long documents (Mooncake's synthetic long-context workload): Table 2's cache ratio 66%
    assert got["long_document"].prefix_reuse == 0.66
