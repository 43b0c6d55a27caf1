"""The `header` record every script writes first: the stack a run used, then its own fields.

The guide's caveat 2: the stack alone moves results by double-digit percent, so every header
says which versions ran (every attention package of the backend table among them), on
which hardware and with which configuration; the script adds what is its own.
"""
from ..hardware import fingerprint


def software() -> dict:
    """Versions of the stack, the attention packages included."""
    return fingerprint.software()


def fields(config: dict, notes: str, warnings=(), hardware: dict | None = None, stack: dict | None = None,
           **script_fields) -> dict:
    """A header record's fields (log/schema.py declares them): software (this machine's
    stack unless `stack` is given), hardware (GPU 0's unless given), config, the script's own
    fields, then its warnings and notes."""
    return {"software": software() if stack is None else stack,
            "hardware": fingerprint.hardware() if hardware is None else hardware,
            "config": config, **script_fields, "warnings": list(warnings), "notes": notes}
