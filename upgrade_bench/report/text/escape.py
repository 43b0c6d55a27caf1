"""Text that comes from a log, made safe for where it is shown.

Notes, GPU names, config values, run ids and file names are the user's (or anyone's) text;
on the page they must stay text: a newline or carriage return would start a heading of its
own, a `|` would split a table cell, a control character would move the terminal's cursor, a
CSV cell starting with `=` is a spreadsheet formula, a lone surrogate cannot be encoded, and
a megabyte of it made the report slow, a `</td><script>` in a PRECISION or a MODEL came
out as a live tag wherever report.md is rendered with HTML on, and a `[x](javascript:...)` or
`![](https://...)` in a NOTES as a live link or image. Control, invisible and bidirectional
characters are shown escaped (`\u202e`), so what a log holds is what the reader sees, in
markdown, CSV and the terminal alike. `clean` runs once on every
string of every record as it is read (inputs.read); `md_cell` and `csv_cell` are the writers'
last step; `html_safe` is the page's (markdown.render), one rule for every text on it.
"""
import re

MAX_CHARS = 400  # longer text is cut where read: a note, a path or a config value, not a book
_SPACE = re.compile(r"[\t\n\v\f\r\u2028\u2029]+")  # a line break or tab in a note: a space
# C0 and C1 controls, zero-width and direction marks, bidirectional embeddings, overrides, isolates
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
# What starts a live link or image in markdown: `![`, and a `]` followed by `(` (inline link),
# `[` (reference link) or `:` (a reference's definition); escaping the bracket leaves it text. A
# bracket already escaped (after an odd number of backslashes: md_text's) is left as it is.
_LINK = re.compile(r"(?<!\\)((?:\\\\)*)(!\[|\](?=[(\[:]))")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
MAX_DEPTH = 32
# Inline markdown a file name must not start: emphasis, code, links, strikethrough, headings (a
# table cell's `|` is md_cell's, a tag's `<` html_safe's).
_MARKDOWN = re.compile(r"([\\`*\[\]~#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")  # '_' inside a word is no markup


def clean(text: str) -> str:
    """One line of valid text: lone surrogates as '?', line breaks and tabs as one space, other
    control, invisible and bidirectional characters shown escaped ('\\u202e'), cut to MAX_CHARS."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + "…"
    return _CONTROL.sub(_shown, _SPACE.sub(" ", text))


def _shown(match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def too_deep(value, limit: int = MAX_DEPTH) -> bool:
    """Whether a decoded JSON value nests lists or objects more than `limit` levels deep
    (a walk with its own stack: Python's recursion limit is no bound on input)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= limit:
                return True
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False


def clean_record(value):
    """Every string of a decoded JSON value cleaned, keys too (a value too_deep refuses
    first: this walk recurses)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(k) if isinstance(k, str) else k: clean_record(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_record(v) for v in value]
    return value


def md_cell(text) -> str:
    """A markdown table cell: one line, its `|` escaped."""
    return clean(str(text)).replace("|", "\\|")


def md_text(text) -> str:
    """Text from outside (a file name) inline in markdown: one line, every character that
    would start emphasis, code, a link, html or a heading escaped, so it shows as typed."""
    return _MARKDOWN.sub(r"\\\1", clean(str(text)))


def csv_cell(value):
    """A CSV cell a spreadsheet shows as text: a leading formula character quoted with '."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def html_safe(page: str) -> str:
    """A markdown page that holds no HTML and no link: every `<` written as `&lt;`, which a
    renderer shows as `<`, so a tag from a log (a `</td><script>` in a PRECISION or a note) shows
    as typed wherever on the page it lands, and every bracket that would open an image or close
    a link's text escaped, so `[x](javascript:...)` and `![](url)` show as typed. Every tag,
    comment and autolink starts with `<`, and the page's own markdown uses none (a `>` alone
    opens no tag: the blockquotes and "> 95%" stay as written); its own images are added after
    (markdown.render)."""
    return _LINK.sub(lambda m: m.group(1) + ("!\\[" if m.group(2) == "![" else "\\]"), page.replace("<", "&lt;"))
