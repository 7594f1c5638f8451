"""DeepSeek-V4.1 (``deepseek_v41``, ``DeepseekV41ForCausalLM``): V4's backbone with CSA2 attention.

The sizes, the MoE (every layer, ``sqrtsoftplus`` + ``noaux_tc``) and the hyper-connections read as V4's
(:func:`core.hf.deepseek.dsv4`, on ``text_config``); the attention is CSA2
(:class:`core.model.mixers.csa2.CSA2Attention`): ``compress_ratios`` gives each layer the ratio of the
compressed cache it reads (0 = window only), ``kv_source_layer_ids`` the layers that write those caches,
``index_source_layer_ids`` the layers that run an indexer; an index source after
``candidate_source_layer_id`` scans only ``candidate_topk_blocks`` x ``candidate_block_size`` candidates.

Cache entries are SGLang's DeepSeek-V4 serving format (584 B entries, 68 B FP4 index keys), which its V4.1
pool reuses; the paper's FP4 cache (890 B per token over the four sources) is a narrower entry that no
engine we model serves yet. Not read here: the Engram n-gram tables (``engram_*``, ~197B parameters meant
to live off the GPU), the DSpark draft stages (``num_nextn_predict_layers`` with their own 128-expert MoE,
which an MTP copy of the main layer would miscount, so no MTP layer is declared) and the vision tower.
"""

from __future__ import annotations

from typing import Any

from core.hf.deepseek import DSV4_ENTRY_BYTES, DSV4_INDEX_BYTES, dsv4, v4_geometry
from core.hf.fields import Fields
from core.hf.registry import reader
from core.model import group_layers
from core.model.mixers.csa2 import CSA2Attention

__all__ = ["dsv41"]


def _sources(t: Fields, ratios: list[int]) -> tuple[set[int], set[int]]:
    """The KV-source and index-source layers, checked: every layer with a ratio reads the last KV source
    before it (same ratio) through the last index source since that source, so a config that names an
    impossible layout says which layer is wrong."""
    layers = len(ratios)
    kv = t.int_list("kv_source_layer_ids")
    idx = t.int_list("index_source_layer_ids")
    for key, ids in (("kv_source_layer_ids", kv), ("index_source_layer_ids", idx)):
        bad = [i for i in ids if not 0 <= i < layers or not ratios[i]]
        if bad:
            raise t.error(f"{key} names layer {bad[0]}, which is not a compressed layer (0..{layers - 1}, ratio > 0)")
    if not set(kv) <= set(idx):
        raise t.error("every layer of kv_source_layer_ids must also be in index_source_layer_ids")
    last_kv = last_idx = None
    for i, r in enumerate(ratios):
        last_kv = i if i in kv else last_kv
        last_idx = i if i in idx else last_idx
        if not r:
            continue
        if last_kv is None:
            raise t.error(f"layer {i} has compress ratio {r} but no KV source at or before it")
        if ratios[last_kv] != r:
            raise t.error(f"layer {i} (ratio {r}) reads KV source layer {last_kv} (ratio {ratios[last_kv]})")
        if last_idx is None or last_idx < last_kv:
            raise t.error(f"layer {i} has no index source between its KV source (layer {last_kv}) and itself")
    return set(kv), set(idx)


@reader("deepseek_v41", archs=("DeepseekV41ForCausalLM",))
def dsv41(f: Fields) -> dict[str, Any]:
    t = f.section("text_config", family="deepseek_v41", or_self=True)
    out = dsv4(t)
    layers = out["num_layers"]
    ratios = t.int_list("compress_ratios")[:layers]
    kv, idx = _sources(t, ratios)
    candidate = t.int("candidate_source_layer_id", default=-1, minimum=-1, maximum=layers - 1)
    cap = (
        t.int("candidate_topk_blocks", default=0, minimum=0) * t.int("candidate_block_size", default=0, minimum=0)
        if candidate >= 0
        else 0
    )
    geometry = dict(**v4_geometry(t), window_entry_bytes=DSV4_ENTRY_BYTES)
    compressed = dict(
        entry_bytes=DSV4_ENTRY_BYTES,
        index_heads=t.int("index_n_heads"),
        index_head_dim=t.int("index_head_dim"),
        index_key_bytes=DSV4_INDEX_BYTES,
        topk_tokens=t.int("index_topk"),
    )
    if cap and cap < compressed["topk_tokens"]:
        raise t.error(f"candidate_topk_blocks x candidate_block_size ({cap:,}) is below index_topk")

    def mixer_of(i: int) -> CSA2Attention:
        if not ratios[i]:
            return CSA2Attention(**geometry)
        return CSA2Attention(
            **geometry,
            **compressed,
            ratio=ratios[i],
            kv_source=i in kv,
            index_source=i in idx,
            index_scan_cap=cap if i in idx and i not in kv and 0 <= candidate < i else 0,
        )

    out.update(mixers=group_layers(layers, mixer_of), mtp_mixer=None, num_mtp_layers=0)
    return out
