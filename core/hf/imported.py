"""A config.json a user pastes or uploads: a stable id, the ModelSpec, and a compact form for the URL."""

from __future__ import annotations

import base64
import hashlib
import json
import zlib

from core.hf.build import model_from_hf_config
from core.hf.fields import MAX_CONFIG_BYTES, parse_config_text
from core.model import ModelSpec

__all__ = ["MAX_URL_CONFIG_CHARS", "decode_config", "encode_config", "imported_model_id", "model_from_config_text"]

MAX_URL_CONFIG_CHARS = 16_000


def imported_model_id(text: str) -> str:
    """A stable id for an imported config: ``custom-`` and the first 10 hex digits of its SHA-256."""
    if not isinstance(text, str):
        raise ValueError(f"the config must be text, not {type(text).__name__}")
    return "custom-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def model_from_config_text(text: str | bytes, *, name: str | None = None) -> tuple[ModelSpec, str]:
    """Parse a pasted or uploaded config.json (size- and depth-limited) into a ModelSpec with a stable
    ``custom-...`` id. Returns the spec and the normalised JSON text (what the URL and the store carry)."""
    data = parse_config_text(text)
    normalised = json.dumps(data, sort_keys=True, separators=(",", ":"))
    mid = imported_model_id(normalised)
    label = name or str(data.get("_name_or_path") or "").split("/")[-1] or mid
    label = label[:80] or mid
    return model_from_hf_config(
        data, model_id=mid, name=f"{label} (imported)", meta={"config_source": "imported config.json"}
    ), normalised


def encode_config(text: str) -> str:
    """A compact URL-safe form of a config.json (zlib + base64url) so a URL can carry an imported model."""
    if not isinstance(text, str):
        raise ValueError(f"the config must be text, not {type(text).__name__}")
    if len(text) > MAX_CONFIG_BYTES:
        raise ValueError(
            f"this config is too large to carry in a URL ({len(text):,} characters; limit "
            f"{MAX_CONFIG_BYTES:,} before compression); save the scenario instead"
        )
    token = base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")
    if len(token) > MAX_URL_CONFIG_CHARS:
        raise ValueError(
            f"this config is too large to carry in a URL ({len(token):,} characters; limit "
            f"{MAX_URL_CONFIG_CHARS:,}); save the scenario instead"
        )
    return token


def decode_config(token: str) -> str:
    """Inverse of :func:`encode_config`, refusing anything malformed or that inflates beyond the size limit."""
    if not isinstance(token, str) or not token or len(token) > MAX_URL_CONFIG_CHARS:
        raise ValueError("the URL's imported config is missing or too long")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        d = zlib.decompressobj()
        out = d.decompress(raw, MAX_CONFIG_BYTES + 1)
        if len(out) > MAX_CONFIG_BYTES or d.unconsumed_tail:
            raise ValueError("the URL's imported config inflates beyond the size limit")
        if not out or not d.eof:
            raise ValueError("truncated")
        return out.decode("utf-8")
    except (ValueError, zlib.error, UnicodeDecodeError) as e:
        if "size limit" in str(e):
            raise
        raise ValueError("the URL's imported config is not a valid encoded config.json") from None
