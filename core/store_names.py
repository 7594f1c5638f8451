"""Names of saved scenarios: how a name is stored, and when two names count as the same.

**Stored form** (:func:`normalize_name`): Unicode NFC, surrounding whitespace stripped, 1-100 characters,
no control characters and no invisible formatting characters (bidirectional overrides such as U+202E,
zero-width spaces, byte-order marks, line and paragraph separators, private-use and unassigned code
points). The zero-width joiner (U+200D) is allowed because emoji sequences are built with it. A name is
looked up in this form, so "café" typed with a combining accent finds "café" saved precomposed.

**Same-looking names** (:func:`name_key`): two names are confusable when their keys are equal. The key
is the name after NFKC (full-width and other compatibility forms become plain ones), case folding
(Bob = bob), every dash-like character as "-", every run of whitespace as one space, the zero-width
joiner dropped, and the Cyrillic, Greek and Armenian letters that look like a Latin letter, in upper or
lower case, replaced by that letter (Cyrillic "о" = Latin "o"; the table is ``LOOKALIKES``). Accents are
kept: "café" and "cafe" look different. Digits and Latin letters are never folded together ("v1" and
"vl" stay two names). A new name, or a rename, whose key equals the key of *another* saved scenario is
refused with a message naming that scenario; a scenario may take a look-alike of its own name
(renaming "bob" to "Bob"). Rows saved before this rule keep their names.

This follows the spirit of Unicode's UTS #39 skeletons on a small, explicit table (no dependency),
covering the scripts whose letters are commonly mistaken for Latin ones.
"""

from __future__ import annotations

import unicodedata

__all__ = ["LOOKALIKES", "MAX_NAME_CHARS", "confusable_chars", "name_key", "normalize_name"]

MAX_NAME_CHARS = 100

# after NFKC and case folding: letters of other scripts that look like a Latin letter (in upper or lower case)
LOOKALIKES: dict[str, str] = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "з": "3", "і": "i", "ј": "j", "к": "k", "м": "m", "н": "h", "о": "o",
    "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q",
    "ԝ": "w", "ү": "y", "ѵ": "v", "ɡ": "g",
    # Greek
    "α": "a", "β": "b", "ε": "e", "ζ": "z", "η": "h", "ι": "i", "κ": "k", "μ": "m", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j",
    # Armenian
    "օ": "o", "ս": "u", "հ": "h", "ո": "n", "ց": "g", "զ": "q",
    # Latin dotless i
    "ı": "i",
}  # fmt: skip
_LOOKALIKE_TABLE = str.maketrans(LOOKALIKES)
_DASHES = str.maketrans(dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe58\ufe63\uff0d", "-"))
_ZWJ = "\u200d"
# control (Cc), surrogate (Cs), format (Cf, except the joiner), line/paragraph separators, private use, unassigned
_REFUSED = {"Cc", "Cs", "Cf", "Zl", "Zp", "Co", "Cn"}


def normalize_name(name: object) -> str:
    """The name as stored: NFC, stripped, 1-100 characters, no control or invisible characters."""
    if not isinstance(name, str):
        raise ValueError(f"a scenario name must be text, not {type(name).__name__}")
    cleaned = unicodedata.normalize("NFC", name).strip()
    if not cleaned:
        raise ValueError("a scenario name cannot be empty")
    if len(cleaned) > MAX_NAME_CHARS:
        raise ValueError(f"a scenario name can have at most {MAX_NAME_CHARS} characters (this one has {len(cleaned)})")
    bad = sorted({c for c in cleaned if c != _ZWJ and unicodedata.category(c) in _REFUSED})
    if bad:
        shown = ", ".join(f"U+{ord(c):04X}" for c in bad[:5])
        raise ValueError(
            f"a scenario name cannot contain control characters or invisible formatting characters ({shown})"
        )
    return cleaned


def name_key(name: object) -> str:
    """The form in which two names that look the same are equal (see the module docstring): NFKC, case
    folded, dashes as "-", whitespace runs as one space, look-alike letters as Latin ones.
    ``name_key("Bоb")`` (Cyrillic о) is ``"bob"``. ValueError for a name :func:`normalize_name` refuses."""
    return _key(normalize_name(name))


def _key(text: str) -> str:
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    text = text.translate(_DASHES).translate(_LOOKALIKE_TABLE).replace(_ZWJ, "")
    return " ".join(text.split())


def confusable_chars(name: object) -> list[str]:
    """The characters of ``name`` that its key changes beyond case (other scripts' look-alikes, compatibility
    forms, dashes, unusual spaces), described as ``U+043E CYRILLIC SMALL LETTER O``; at most five."""
    out: list[str] = []
    for c in normalize_name(name):
        if c.isascii() or c == _ZWJ or _key(c) == c.casefold():
            continue
        text = f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed character')}"
        if text not in out:
            out.append(text)
    return out[:5]
