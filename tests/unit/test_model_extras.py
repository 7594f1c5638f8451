"""Model-level extras (core.model.extras): what is neither a layer's mixer nor its FFN, summed through one interface
(design review 3, item 6). DeepSeek-V4.1-Flash carries both kinds: two Engram lookup tables (layers 1 and 14,
384,006,168 and 384,016,682 rows of 256 parameters stored as 264 B, 24 rows per token each) and a causal encoder
(layers 0-19; the decoder replays each prompt's last 128 tokens). Hand values in the comments."""

import pytest

from core import perf
from core.catalog import load_catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout
from core.memory import budget, host_tables
from core.model import EXTRA_KINDS, TIERS, CausalEncoder, LookupTables, ModelSpec
from core.perf import kernels

cat = load_catalog()
V41 = cat.model("deepseek-v4.1-flash")
B200 = cat.gpu("b200")
ROWS = 384_006_168 + 384_016_682  # 768,022,850 rows over both tables


def _without(model, kind):
    return model.model_copy(update={"extras": tuple(e for e in model.extras if e.kind != kind)})


def test_the_registry_holds_each_kind_from_its_own_file():
    assert EXTRA_KINDS == {"causal_encoder": CausalEncoder, "lookup_tables": LookupTables}
    assert tuple(host_tables.TIERS) == TIERS == ("gpu", "host", "disk")
    assert [e.kind for e in V41.extras] == ["lookup_tables", "causal_encoder"]
    assert ModelSpec.model_validate_json(V41.model_dump_json()) == V41  # the discriminated union round-trips


def test_the_model_sums_its_extras():
    # 768,022,850 x 256 = 196,613,849,600 parameters ("196B Engram parameters"); x 264 B = 202,758,032,400 B
    assert V41.extra_params == 196_613_849_600 and V41.extra_bytes == 202_758_032_400
    assert [(lk.due_layer, lk.rows_per_token, lk.row_bytes) for lk in V41.lookups] == [(1, 24, 264), (14, 24, 264)]
    # in HBM, sharded over attention TP 4: 202,758,032,400 / 4; off the GPU: nothing
    assert V41.extra_hbm_bytes_per_rank("gpu", 4) == 50_689_508_100
    assert V41.extra_hbm_bytes_per_rank("host", 4) == V41.extra_hbm_bytes_per_rank("disk", 1) == 0
    # the causal encoder: layers 20-39 run 128 of an 8,192-token prompt (1/64), every token in decode
    assert V41.split_layer == 20 and V41.token_share("prefill", 8192) == 1 / 64
    assert V41.token_share("prefill", 100) == 1.0 and V41.token_share("decode", 8192) == 1.0
    plain = cat.model("deepseek-v4-flash")
    assert plain.extras == () and plain.lookups == () and plain.extra_bytes == 0
    assert plain.split_layer == plain.num_layers and plain.token_share("prefill", 8192) == 1.0


def test_the_old_field_names_still_build_the_extras():
    dump = V41.model_dump()
    no_encoder = ModelSpec.model_validate({**dump, "prefill_encoder_layers": 0, "prefill_replay_tokens": 0})
    assert [e.kind for e in no_encoder.extras] == ["lookup_tables"]
    encoder = ModelSpec.model_validate({**dump, "prefill_encoder_layers": 10, "prefill_replay_tokens": 64})
    assert (encoder.split_layer, encoder.token_share("prefill", 640)) == (10, 0.1)  # 64 / 640
    assert ModelSpec.model_validate({**dump, "host_tables": []}).lookups == ()


@pytest.mark.parametrize(
    ("extras", "match"),
    [
        ([{"kind": "causal_encoder", "encoder_layers": 40, "replay_tokens": 128}], r"needs 1\.\.39 encoder layers"),
        ([{"kind": "causal_encoder", "encoder_layers": 5, "replay_tokens": 8}] * 2, "one extra of each kind"),
        ([{"kind": "sparse_memory"}], "sparse_memory"),
    ],
)
def test_an_extra_that_does_not_fit_its_model_is_named(extras, match):
    with pytest.raises(ValueError, match=match):
        ModelSpec.model_validate({**V41.model_dump(), "extras": extras})


def test_layer_costs_carry_the_extras_reads():
    # one B200, attention TP 1, 64 decode tokens from host DRAM over PCIe Gen5 (64 GB/s x 0.5): 64 x 24 x 264 B =
    # 405,504 B per table, 12.672 us each, the layer-1 table first; 5 us of latency once
    d = Deployment(V41, B200, ParallelLayout())
    costs = kernels.layer_costs(d, perf.StepConfig("decode", 64, 4096))
    assert costs.extras.tier == "host" and costs.extras.due_layers == (1, 14)
    assert costs.extras.seconds == pytest.approx((405_504 / 32e9, 405_504 / 32e9), rel=1e-12)
    assert costs.extras.latency_s == 5e-6
    # a model whose extras read nothing carries no reads
    none = kernels.layer_costs(d.with_(model=_without(V41, "lookup_tables")), perf.StepConfig("decode", 64, 4096))
    assert none.extras.seconds == () and none.extras.latency_s == 0.0


def test_an_overlapped_step_waits_for_its_whole_micro_batchs_rows():
    # two-batch overlap prices each kernel on half the tokens, but the rows of all 8,192 tokens are fetched before
    # the first stage: the exposed reads are those of table_read at 8,192 tokens (disk tier: 2 x 196,608 random
    # reads at 1.5M/s per GPU, less what the compute before layers 1 and 14 hides)
    d = Deployment(V41, B200, ParallelLayout(attention_tp=1, attention_dp=8, ep=8), "fp8", cat.efficiency_for("b200"))
    cfg = perf.StepConfig("prefill", 8192, 4096, overlap="two_batch", table_tier="disk")
    st = perf.step_time(d, cfg)
    r = host_tables.table_read(d, "disk", 8192, st.compute_s, replayed=128 / 4096)
    assert st.components["host_tables"] == pytest.approx(r.exposed_s, rel=1e-12) and r.exposed_s > 0.1


def test_the_memory_budget_sums_the_extras_in_the_tier_they_live_in(monkeypatch):
    d = Deployment(V41, B200, ParallelLayout(attention_tp=8, ep=8, pp=2), "fp8")
    # the planner keeps lookup tables in host DRAM: no GPU memory for them
    assert all("model_extras" not in m.components for m in budget.stage_memories(d))
    # kept in HBM instead, the first stage's GPUs hold 202,758,032,400 B / attention TP 8 = 25,344,754,050 B each
    monkeypatch.setattr(budget, "DEFAULT_TIER", "gpu")
    first, second = budget.stage_memories(d)
    assert first.components["model_extras"] == 25_344_754_050 and "model_extras" not in second.components
