"""Off-GPU lookup tables: DeepSeek-V4.1's Engram n-gram memory (two tables of ~384M rows, 203 GB), Qwen3.8-Flash-
Next's n-gram embedding (PLE, 51B parameters). Neither weights every token multiplies nor KV: counted apart from the
backbone, sized in bytes as stored, and read at ``rows_per_token`` rows of ``row_bytes`` each per token, due at the
first layer that consumes them (the step-time model prices that read from the tier the tables live in,
:mod:`core.memory.host_tables`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.model.extras.base import Lookup, ModelExtra

__all__ = ["HostTable", "LookupTables"]


class HostTable(BaseModel):
    """One lookup table the model reads a few rows of per token."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=80, description="what the model calls it: 'Engram', 'n-gram (PLE)'")
    rows: Annotated[int, Field(gt=0, le=10**12)]
    row_width: Annotated[int, Field(gt=0, le=1_000_000)] = Field(description="parameters per row")
    row_bytes: Annotated[int, Field(gt=0, le=10**7)] = Field(description="bytes per row as stored, scales included")
    rows_per_token: Annotated[int, Field(gt=0, le=100_000)] = Field(
        description="rows read per token (all orders, heads)"
    )
    layer_ids: tuple[int, ...] = Field((), description="layers that consume the looked-up rows (0-based)")

    @property
    def params(self) -> int:
        return self.rows * self.row_width

    @property
    def bytes(self) -> int:
        return self.rows * self.row_bytes


class LookupTables(ModelExtra):
    """A model's n-gram lookup tables, meant to live off the GPU (their rows are fetched as one queue, the rows due
    first fetched first)."""

    kind: Literal["lookup_tables"] = "lookup_tables"
    tables: tuple[HostTable, ...] = Field(min_length=1)

    def label(self) -> str:
        return f"{len(self.tables)} n-gram table(s)"

    def describe(self) -> str:
        return ", ".join(f"{t.name} ({t.rows:,} rows × {t.row_bytes} B)" for t in self.tables)

    @property
    def params(self) -> int:
        return sum(t.params for t in self.tables)

    @property
    def stored_bytes(self) -> int:
        return sum(t.bytes for t in self.tables)

    def lookups(self) -> tuple[Lookup, ...]:
        return tuple(Lookup(t.name, min(t.layer_ids, default=0), t.rows_per_token, t.row_bytes) for t in self.tables)

    def problems(self, num_layers: int) -> list[str]:
        out = []
        for ti, t in enumerate(self.tables):
            bad = [i for i in t.layer_ids if not 0 <= i < num_layers]
            if bad:
                out.append(f"host_tables[{ti}].layer_ids {bad[:5]} outside 0..{num_layers - 1}")
        return out
