"""DeepSeek-V4.1 (``deepseek_v41``, ``DeepseekV41ForCausalLM``): V4's backbone with CSA2 attention.

The sizes, the MoE (every layer, ``sqrtsoftplus`` + ``noaux_tc``) and the hyper-connections read as V4's
(:func:`core.hf.deepseek.dsv4`, on ``text_config``); the attention is CSA2
(:class:`core.model.mixers.csa2.CSA2Attention`): ``compress_ratios`` gives each layer the ratio of the
compressed cache it reads (0 = window only), ``kv_source_layer_ids`` the layers that write those caches,
``index_source_layer_ids`` the layers that run an indexer; an index source after
``candidate_source_layer_id`` scans only ``candidate_topk_blocks`` x ``candidate_block_size`` candidates.

Cache entries are SGLang's DeepSeek-V4 serving format (584 B entries, 68 B FP4 index keys), which its V4.1
pool reuses; the paper's FP4 cache (890 B per token over the four sources) is a narrower entry that no
engine we model serves yet.

Engram (``engram_layer_ids``, 0-based): one n-gram table per Engram layer, a :class:`core.model.HostTable` of the
model's :class:`core.model.LookupTables` extra, meant to live off the GPU and kept out of the backbone's counts. A
token hashes its n-grams of orders 2..``engram_max_ngram_size`` into ``engram_n_heads`` heads each; every (order,
head) pair owns a prime-sized slice of its layer's table (``engram_num_embeddings`` rows in all), so a token reads
(max_ngram_size - 1) x n_heads rows per table, one ``engram_head_dim``-wide row per head (n_heads x head_dim
is the width of one order; the rows a token reads concatenate to (max_ngram_size - 1) x n_heads x head_dim).
Rows are stored E4M3 with one E8M0 scale per 32 values. The Engram layer's GPU side (``wkv``: that
concatenation -> hc_mult keys + one value of hidden_size; ``q_weight``, ``k_weight``: hc_mult x hidden_size
gains) is backbone weight every token multiplies, counted with the model's extras. Sources: the V4.1 tech
report section 2.4.2 (orders {2, 3, 4}, 8 heads, 2048 per order, ~16M entries per head, prime table sizes);
ROCm/ATOM atom/model_ops/engram_layer.py (the six tensors per Engram layer and their shapes); vLLM's Engram
config ("Native V4.1 rows contain 256 E4M3 bytes and eight E8M0 scale bytes").

Causal encoder-decoder (tech report 2.2, 3.2.2): the layers before the first ``compress_ratios`` = 1 layer are a
causal encoder every prompt token runs; the decoder layers after it project their global KV from the encoder's
output and replay only each prompt's last ``sliding_window`` tokens (a :class:`core.model.CausalEncoder` extra: the
step-time model prices prefill that way, :func:`core.perf.step_time`).

Not read here: the DSpark draft stages (``num_nextn_predict_layers`` with their own 128-expert MoE, which an
MTP copy of the main layer would miscount, so no MTP layer is declared) and the vision tower.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.hf._common import MAX_HEAD_DIM
from core.hf.deepseek import DSV4_ENTRY_BYTES, DSV4_INDEX_BYTES, dsv4, v4_geometry
from core.hf.fields import Fields
from core.hf.registry import reader
from core.model import CausalEncoder, HostTable, LookupTables, group_layers
from core.model.mixers.csa2 import CSA2Attention

__all__ = ["dsv41"]

# Engram rows as the checkpoint stores them: E4M3 values, one E8M0 scale per 32 (ATOM: embed.weight [rows, 256]
# F8_E4M3, embed.scale [rows, 8] F8_E8M0); a checkpoint without a quantization_config is taken as bf16 rows.
ENGRAM_SCALE_BLOCK = 32
_MAX_NGRAM = 16
_MAX_ENGRAM_HEADS = 1024


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


def _engram(f: Fields, t: Fields, layers: int, hidden: int, streams: int) -> tuple[tuple[HostTable, ...], int]:
    """The Engram tables (one per Engram layer, off the GPU) and the parameters of the Engram layers' GPU side:
    per layer ``wkv`` (max_ngram - 1) x n_heads x head_dim -> (hc_mult + 1) x hidden, plus ``q_weight`` and
    ``k_weight`` of hc_mult x hidden each."""
    ids = t.int_list("engram_layer_ids")
    if not ids:
        return (), 0
    rows = t.int_list("engram_num_embeddings")
    if len(rows) != len(ids):
        raise t.error(
            f"field 'engram_num_embeddings' must give one row count per layer of 'engram_layer_ids' "
            f"({len(ids)}), got {len(rows)}"
        )
    bad = [i for i in ids if not 0 <= i < layers]
    if bad:
        raise t.error(f"field 'engram_layer_ids' names layer {bad[0]}, outside 0..{layers - 1} (0-based)")
    if len(set(ids)) != len(ids):
        raise t.error("field 'engram_layer_ids' lists a layer twice")
    order = t.int("engram_max_ngram_size", minimum=2, maximum=_MAX_NGRAM, why="n-gram orders 2 to 16")
    heads = t.int("engram_n_heads", maximum=_MAX_ENGRAM_HEADS, why="at most 1,024 hash heads per n-gram order")
    head_dim = t.int("engram_head_dim", maximum=MAX_HEAD_DIM)
    vocab = t.int("engram_vocab_size", default=1)
    t.int("engram_compressed_vocab_size", default=None)
    t.int("engram_pad_token_id", default=None, minimum=0)
    per_token = (order - 1) * heads
    least = per_token * max(vocab - 1, 1)  # every (order, head) slice is a prime >= engram_vocab_size - 1
    for r in rows:
        if not least <= r <= 10**12:
            raise t.error(
                f"field 'engram_num_embeddings' lists {r:,}; each table needs {least:,} to 10^12 rows "
                f"({per_token} hash heads of at least engram_vocab_size - 1 rows)"
            )
    quantized = isinstance(f.cfg.get("quantization_config"), Mapping)
    row_bytes = head_dim + -(-head_dim // ENGRAM_SCALE_BLOCK) if quantized else 2 * head_dim
    tables = tuple(
        HostTable(
            name=f"Engram (layer {i})",
            rows=r,
            row_width=head_dim,
            row_bytes=row_bytes,
            rows_per_token=per_token,
            layer_ids=(i,),
        )
        for i, r in zip(ids, rows, strict=True)
    )
    gpu = len(ids) * (per_token * head_dim * (streams + 1) * hidden + 2 * streams * hidden)
    return tables, gpu


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

    tables, engram_gpu = _engram(f, t, layers, out["hidden_size"], out["residual_streams"])
    # Causal encoder-decoder: the encoder is the layers before the first ratio-1 layer; prompt tokens run only
    # those, the decoder replays each prompt's last sliding_window tokens (tech report 2.2, 3.2.2)
    encoder = next((i for i, r in enumerate(ratios) if r == 1), 0)
    replay = t.int("sliding_window", default=0, minimum=0) if encoder else 0
    out.update(
        mixers=group_layers(layers, mixer_of),
        mtp_mixer=None,
        num_mtp_layers=0,
        extras=((LookupTables(tables=tables),) if tables else ())
        + ((CausalEncoder(encoder_layers=encoder, replay_tokens=replay),) if replay else ()),
        model_extra_params=out["model_extra_params"] + engram_gpu,
    )
    return out
