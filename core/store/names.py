"""Names of saved scenarios: how a name is stored, and when two names count as the same.

**Stored form** (:func:`normalize_name`): Unicode NFC, surrounding whitespace stripped, 1-100 characters,
at least one visible character, no control characters and no invisible characters: formatting characters
(bidirectional overrides such as U+202E, zero-width spaces, byte-order marks), line and paragraph
separators, private-use and unassigned code points, every Unicode ``Default_Ignorable_Code_Point``
(U+3164 HANGUL FILLER, U+034F COMBINING GRAPHEME JOINER, the variation selectors, ...; the table is
``DEFAULT_IGNORABLE``) and U+2800 BRAILLE PATTERN BLANK, all of which let a name look exactly like another
one. The zero-width joiner (U+200D) is allowed because emoji sequences are built with it, and the emoji
variation selector U+FE0F only right after a symbol (``❤️``) or in a keycap (``1️⃣``). A name is looked up in
this form, so "café" typed with a combining accent finds "café" saved precomposed. Rows stored before a
rule refused their name keep it: they are listed, and can be opened, renamed and deleted
(:func:`lookup_name`, :func:`stored_name_key`).

**Same-looking names** (:func:`name_key`): two names are confusable when their keys are equal. The key
is the name after NFKC (full-width and other compatibility forms become plain ones), case folding
(Bob = bob), every dash-like character as "-", every run of whitespace as one space, the zero-width
joiner, the emoji variation selector (and, in an old stored name, any invisible character) dropped, and the Cyrillic, Greek and Armenian letters that look like a Latin letter, in upper or
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

__all__ = [
    "BLANK",
    "DEFAULT_IGNORABLE",
    "LOOKALIKES",
    "MAX_NAME_CHARS",
    "confusable_chars",
    "lookup_name",
    "name_key",
    "normalize_name",
    "stored_name_key",
]

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
_VS16 = "\ufe0f"  # emoji presentation
_KEYCAP = "\u20e3"
# control (Cc), surrogate (Cs), format (Cf, except the joiner), line/paragraph separators, private use, unassigned
_REFUSED = {"Cc", "Cs", "Cf", "Zl", "Zp", "Co", "Cn"}

# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15/16): drawn as nothing
DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
# characters that are not default-ignorable but draw as a blank
BLANK = frozenset("\u2800")  # BRAILLE PATTERN BLANK
# emoji that are punctuation, not symbols (So), and take U+FE0F: ‼ ⁉ 〰 〽
_EMOJI_PUNCTUATION = frozenset("\u203c\u2049\u3030\u303d")


def _ignorable(c: str) -> bool:
    o = ord(c)
    return any(lo <= o <= hi for lo, hi in DEFAULT_IGNORABLE)


def _describe(c: str) -> str:
    """``U+3164 HANGUL FILLER``; a character without a name by its kind."""
    name = unicodedata.name(c, "")
    if not name:
        kinds = {"Cc": "a control character", "Co": "private use", "Cn": "unassigned", "Cs": "a surrogate"}
        name = kinds.get(unicodedata.category(c), "no name")
        name = f"({name})"
    return f"U+{ord(c):04X} {name}"


def _emoji_selector(text: str, i: int) -> bool:
    """Whether the U+FE0F at ``text[i]`` asks for the emoji form of the character before it (a symbol such
    as ❤, one of ‼ ⁉ 〰 〽, or a keycap base 0-9 # * followed by U+20E3)."""
    if i == 0:
        return False
    prev = text[i - 1]
    if unicodedata.category(prev) == "So" or prev in _EMOJI_PUNCTUATION:
        return True
    return prev in "0123456789#*" and text[i + 1 : i + 2] == _KEYCAP


def _invisible(text: str) -> list[str]:
    """The characters of ``text`` a name may not have (see the module docstring), in order, each once."""
    bad: list[str] = []
    for i, c in enumerate(text):
        if c == _ZWJ or (c == _VS16 and _emoji_selector(text, i)):
            continue
        if unicodedata.category(c) in _REFUSED or _ignorable(c) or c in BLANK:
            if c not in bad:
                bad.append(c)
    return bad


def _visible(c: str) -> bool:
    return not (c.isspace() or _ignorable(c) or c in BLANK or unicodedata.category(c) in {"Mn", "Me", "Cf"})


def lookup_name(name: object) -> str:
    """A name as typed to find a saved scenario: NFC and stripped, like :func:`normalize_name`, but without
    its character rules, so a row stored before a rule refused its name can still be opened, renamed and
    deleted by name. ValueError for anything but non-empty text."""
    if not isinstance(name, str):
        raise ValueError(f"a scenario name must be text, not {type(name).__name__}")
    cleaned = unicodedata.normalize("NFC", name).strip()
    if not cleaned:
        raise ValueError("a scenario name cannot be empty: type at least one letter, digit or symbol")
    return cleaned


def normalize_name(name: object) -> str:
    """The name as stored: NFC, stripped, 1-100 characters, at least one visible character, no control or
    invisible characters (see the module docstring). ValueError naming the characters otherwise."""
    cleaned = lookup_name(name)
    if len(cleaned) > MAX_NAME_CHARS:
        raise ValueError(f"a scenario name can have at most {MAX_NAME_CHARS} characters (this one has {len(cleaned)})")
    bad = _invisible(cleaned)
    if bad:
        shown = ", ".join(_describe(c) for c in bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise ValueError(
            f"a scenario name cannot contain control characters or invisible characters ({shown}), since they "
            "would make it look like another name: use letters, digits, spaces, punctuation, symbols and emoji"
        )
    if not any(_visible(c) for c in cleaned):
        raise ValueError(
            "a scenario name needs at least one visible character (this one has only spaces or marks): use "
            "letters, digits, punctuation, symbols or emoji"
        )
    return cleaned


def name_key(name: object) -> str:
    """The form in which two names that look the same are equal (see the module docstring): NFKC, case
    folded, dashes as "-", whitespace runs as one space, look-alike letters as Latin ones.
    ``name_key("Bоb")`` (Cyrillic о) is ``"bob"``. ValueError for a name :func:`normalize_name` refuses."""
    return _key(normalize_name(name))


def stored_name_key(name: object) -> str | None:
    """:func:`name_key` of a name already stored, even one a rule added since refuses (its invisible
    characters dropped, so ``"beta\u3164"`` has the key of ``"beta"``); None for a name that is not text."""
    try:
        return _key(lookup_name(name))
    except ValueError:
        return None


def _key(text: str) -> str:
    text = "".join(c for c in text if not (_ignorable(c) or c in BLANK))  # also drops the joiner and U+FE0F
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    text = text.translate(_DASHES).translate(_LOOKALIKE_TABLE)
    return " ".join(text.split())


def confusable_chars(name: object) -> list[str]:
    """The characters of ``name`` that its key changes beyond case (other scripts' look-alikes, compatibility
    forms, dashes, unusual spaces), described as ``U+043E CYRILLIC SMALL LETTER O``; at most five."""
    out: list[str] = []
    for c in normalize_name(name):
        if c.isascii() or c in (_ZWJ, _VS16) or _key(c) == c.casefold():
            continue
        text = _describe(c)
        if text not in out:
            out.append(text)
    return out[:5]
