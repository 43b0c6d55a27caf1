"""The types a record's field may have (log/schema.py's table uses them).

Each Type says what a writer may give (`writable`: the JSON type, as a programming error
is caught) and what a reader accepts (`readable`: the type and a range, as a log from
anywhere may hold anything). Null is allowed everywhere a field is not required.
"""
from dataclasses import dataclass
from typing import Callable

MAX_INT = 2**53                 # counts and lengths beyond this are no measurement
MAX_NUMBER = 1e15               # nor is any figure the report reads (and plotting overflows)
SCALAR = (str, int, float, bool)


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def in_range(v) -> bool:
    """A finite number within MAX_NUMBER (NaN compares false; a huge int never becomes a float)."""
    return is_number(v) and abs(v) <= MAX_NUMBER


def is_setting(v) -> bool:
    return v is None or isinstance(v, SCALAR) or (
        isinstance(v, list) and all(x is None or isinstance(x, SCALAR) for x in v))


@dataclass(frozen=True)
class Type:
    what: str                   # how the docs and a skipped record's reason name it
    writable: Callable
    readable: Callable | None = None   # None: as writable

    def reads(self, value) -> bool:
        return (self.readable or self.writable)(value)


NUMBER = Type("a number", is_number, in_range)
POSITIVE = Type("a positive number", is_number, lambda v: in_range(v) and v > 0)
NON_NEGATIVE = Type("a number >= 0", is_number, lambda v: in_range(v) and v >= 0)
SHARE = Type("a fraction from 0 to 1", is_number, lambda v: in_range(v) and 0 <= v <= 1)
INTEGER = Type("a whole number", is_int, lambda v: is_int(v) and abs(v) <= MAX_INT)
COUNT = Type("a whole number >= 1", is_int, lambda v: is_int(v) and 0 < v <= MAX_INT)
SIZE = Type("a whole number >= 0", is_int, lambda v: is_int(v) and 0 <= v <= MAX_INT)
TEXT = Type("text", lambda v: isinstance(v, str))
FLAG = Type("true or false", lambda v: isinstance(v, bool))
OBJECT = Type("an object", lambda v: isinstance(v, dict))
LIST = Type("a list", lambda v: isinstance(v, list))
SETTING = Type("a value or a list of values", is_setting)
ANY = Type("any value", lambda v: True)
PART = Type("an object of numbers >= 0 (tflop, ms, tflops, mfu, time_share)",
            lambda v: isinstance(v, dict),
            lambda v: isinstance(v, dict) and all(v.get(k) is None or NON_NEGATIVE.reads(v[k])
                                                  for k in ("tflop", "ms", "tflops", "mfu", "time_share")))

# The types by the names schema.py's tables use.
TYPES = {"number": NUMBER, "positive": POSITIVE, "non-negative": NON_NEGATIVE, "share": SHARE,
         "integer": INTEGER, "count": COUNT, "size": SIZE, "text": TEXT, "flag": FLAG, "object": OBJECT,
         "list": LIST, "setting": SETTING, "any": ANY, "part": PART}
