"""Number formatting with units and escaping of user text, shared by every page (display only, no model
arithmetic)."""

from __future__ import annotations

import math
import re
import unicodedata

__all__ = ["billions", "bytes_h", "md_escape", "params_h", "visible_text"]


def params_h(n: float) -> str:
    """Parameters with a B/M suffix: 671.0B, 871.9M."""
    if n >= 1e9:
        return f"{n / 1e9:,.1f}B" if n < 1e11 else f"{n / 1e9:,.0f}B"
    if n >= 1e6:
        return f"{n / 1e6:,.1f}M"
    return f"{n:,.0f}"


def billions(n: object, decimals: int = 0) -> str:
    """A parameter count in billions, "671B" (``decimals`` after the point); "?B" for anything that is not a
    finite number a float holds (a label, e.g. the sidebar's model picker, must never raise)."""
    try:
        x = float(n) / 1e9  # type: ignore[arg-type]
    except (ArithmeticError, TypeError, ValueError):
        return "?B"
    return f"{x:,.{decimals}f}B" if math.isfinite(x) else "?B"


def bytes_h(n: float) -> str:
    """Decimal bytes (GB = 1e9 B, as vendors quote HBM): 1.15 KB, 70.3 KB, 685.2 GB."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}" if n / scale < 100 else f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} B"


# Markdown that user text (a model name from a URL or an imported config, a scenario name, a pasted file echoed
# in an error) must not be able to form in st.markdown, st.caption, alerts, headings, widget labels and help,
# or in the Markdown report. Checked in Chromium against Streamlit 1.67's renderer:
# - links, images, raw HTML, autolinks and Streamlit's directives (``:red[...]``) need ``[`` or ``<``;
#   emphasis, code, strikethrough, tables and LaTeX need ``*`` ``_`` ``~`` `` ` `` ``|`` ``$``: backslash-escaped;
# - ``:name`` starts a directive (``:red[...]``, or ``:red`` alone): the colon is backslash-escaped;
# - bare URLs, ``www.`` names, e-mail addresses and ``:shortcodes:`` (emoji, material icons) are replaced *after*
#   parsing (remark-gfm's autolink-literal transform, Streamlit's emoji and icon plugins), so a backslash does not
#   stop them: a word joiner (U+2060, invisible) is put in the pattern;
# - block syntax (headings, lists, quotes, rules) only starts a line: newlines become spaces and the first
#   character is escaped when it could start a block.
_ALWAYS = re.compile(r"([\\`*~\[\]<>|$&{}])")
_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")  # intraword snake_case stays as it is
_SHORTCODE = re.compile(r":(?=[\w/+-]+:)")  # :smile:, :material/home: (replaced after parsing, like autolinks)
_DIRECTIVE = re.compile(r":(?=[A-Za-z])")  # :red[...], :small[...]; a bare :name is a directive too
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|mailto|xmpp)(?=:)|\b(www)(?=\.)|(@)")
_LINE_START = re.compile(r"^(\s*)(?:([#+\-=>])|(\d+)([.)]))")  # "1." or "1)" starts a list: escape the dot
_WJ = "\u2060"

# C0 and C1 controls (a newline, an escape sequence) and the line / paragraph separators: a space
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def visible_text(text: object) -> str:
    """``text`` as the characters a reader sees: a control character or a line / paragraph separator becomes a
    space; an invisible format character (Unicode category Cf: the bidirectional embeddings, overrides and
    isolates U+202A-U+202E and U+2066-U+2069, the marks U+200E, U+200F and U+061C, zero-width characters, the
    byte-order mark, tags) is dropped, so that an imported model's name such as ``org/`` + U+202E + ``exe.live`` cannot be
    displayed reversed or hide text; a lone surrogate (not encodable as UTF-8) becomes U+FFFD. Every renderer of
    user text goes through this: :func:`md_escape` (the app, the Markdown report) and the HTML report."""
    s = _CONTROL.sub(" ", str(text))
    if s.isascii():
        return s
    return "".join("\ufffd" if (cat := unicodedata.category(ch)) == "Cs" else "" if cat == "Cf" else ch for ch in s)


def md_escape(text: object) -> str:
    r"""``text`` as Markdown that renders as exactly that text: no link, image, HTML, emphasis, code, table cell,
    formula, icon or block can come out of it (a newline or a control character becomes a space, an invisible
    format character such as a right-to-left override is dropped: :func:`visible_text`).

    >>> md_escape("[x](y) <b> 1. *z*")
    '\\[x\\](y) \\<b\\> 1. \\*z\\*'
    >>> md_escape("1. first")
    '1\\. first'
    """
    s = visible_text(text)
    s = _ALWAYS.sub(r"\\\1", s)
    s = _UNDERSCORE.sub(r"\\_", s)
    s = _AUTOLINK.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)) + _WJ, s)
    s = _SHORTCODE.sub(":" + _WJ, s)
    s = _DIRECTIVE.sub(r"\\:", s)
    return _LINE_START.sub(
        lambda m: m.group(1) + (f"\\{m.group(2)}" if m.group(2) else f"{m.group(3)}\\{m.group(4)}"), s
    )
