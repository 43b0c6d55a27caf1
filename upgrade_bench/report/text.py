"""Text that comes from a log, made safe for where it is shown.

Notes, GPU names, config values, run ids and file names are the user's (or anyone's) text;
on the page they must stay text: a newline or carriage return would start a heading of its
own, a `|` would split a table cell, a control character would move the terminal's cursor, a
CSV cell starting with `=` is a spreadsheet formula, a lone surrogate cannot be encoded, and
a megabyte of it made the report slow. `clean` runs once on every string of every record as
it is read (inputs.read); `md_cell` and `csv_cell` are the writers' last step.
"""
import re

MAX_CHARS = 400  # longer text is cut where read: a note, a path or a config value, not a book
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def clean(text: str) -> str:
    """One line of valid text: lone surrogates as '?', control and
    bidirectional-override characters as one space, cut to MAX_CHARS."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + "…"
    return _CONTROL.sub(" ", text)


def clean_record(value):
    """Every string of a decoded JSON value cleaned, keys too."""
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


def csv_cell(value):
    """A CSV cell a spreadsheet shows as text: a leading formula character quoted with '."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value
