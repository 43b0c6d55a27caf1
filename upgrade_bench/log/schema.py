"""What a record of each kind may hold: its fields, their types and ranges, which are required.

One table for every reader: the report (report/inputs.py) and the sweep's own reading of
OUT (records.read_log) skip a record whose fields are not what its kind allows, with the
reason, instead of failing on it later (a list for a run_id once crashed RESUME with an
unhashable type). Writers add a field here when they add it to a record.
"""
MAX_INT = 2**53                 # counts and lengths beyond this are no measurement
MAX_NUMBER = 1e15               # nor is any figure the report reads (and plotting overflows)


def _is_number(v) -> bool:
    """A finite number within MAX_NUMBER (NaN compares false; a huge int never becomes a float)."""
    return not isinstance(v, bool) and isinstance(v, (int, float)) and abs(v) <= MAX_NUMBER


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_INT


def _is_setting(v) -> bool:
    scalar = (str, int, float, bool, type(None))
    return isinstance(v, scalar) or (isinstance(v, list) and all(isinstance(x, scalar) for x in v))


POSITIVE = (lambda v: _is_number(v) and v > 0, "a positive number")
NON_NEGATIVE = (lambda v: _is_number(v) and v >= 0, "a number >= 0")
SHARE = (lambda v: _is_number(v) and 0 <= v <= 1, "a fraction from 0 to 1")
COUNT = (_is_count, f"a whole number from 1 to {MAX_INT}")
SIZE = (lambda v: v == 0 or _is_count(v), "a whole number >= 0")
TEXT = (lambda v: isinstance(v, str), "text")
FLAG = (lambda v: isinstance(v, bool), "true or false")
OBJECT = (lambda v: isinstance(v, dict), "an object")
LIST = (lambda v: isinstance(v, list), "a list")
SETTING = (_is_setting, "a value or a list of values")
PART = (lambda v: isinstance(v, dict) and all(v.get(k) is None or NON_NEGATIVE[0](v[k])
                                              for k in ("tflop", "ms", "tflops", "mfu", "time_share")),
        "an object of numbers >= 0 (tflop, ms, tflops, mfu, time_share)")

# kind -> {field: check}; "a.b" is field b of object a (and so on down), "a.*" every value of object a.
# Null is allowed everywhere (not recorded); REQUIRED fields must be there.
FIELDS = {
    "header": {"hardware": OBJECT, "hardware.gpu_name": TEXT, "hardware.gpu_count": SIZE,
               "hardware.hbm_gib": POSITIVE, "software": OBJECT, "software.*": SETTING,
               "config": OBJECT, "config.*": SETTING, "attn_backend": TEXT,
               "peak_tflops": POSITIVE, "notes": TEXT, "num_layers": COUNT,
               "layer_mix": OBJECT, "layer_mix.*": COUNT, "mixer_kernels": OBJECT,
               "mixer_kernels.*": TEXT},
    "summary": {"seq_len": COUNT, "batch_size": COUNT, "steps": COUNT, "step_ms": POSITIVE,
                "step_ms_min": POSITIVE, "step_ms_max": POSITIVE, "tflops_per_gpu": NON_NEGATIVE,
                "mfu": NON_NEGATIVE, "hfu": NON_NEGATIVE, "tokens_per_s_per_gpu": POSITIVE,
                "attn_flop_share": SHARE, "model_tflop_per_step": NON_NEGATIVE,
                "peak_mem_gib": NON_NEGATIVE, "peak_alloc_gib": NON_NEGATIVE, "world_size": COUNT,
                "attn_backend": TEXT, "sm_clock_mhz_median": NON_NEGATIVE,
                "sm_clock_mhz_min": NON_NEGATIVE, "power_w_mean": NON_NEGATIVE,
                "temp_c_max": NON_NEGATIVE, "throttle": LIST, "throttle.*": TEXT,
                "energy_j_per_token": NON_NEGATIVE, "earlier_points_in_process": SIZE},
    "error": {"seq_len": COUNT, "error": TEXT, "message": TEXT, "config": OBJECT, "config.*": SETTING},
    "decomposition": {"seq_len": COUNT, "wall_step_ms": POSITIVE, "attn_flop_share": SHARE,
                      "buckets": OBJECT, "buckets.*": PART, "buckets.other.moe_routing": PART,
                      "everything_else": PART, "total": PART},
    "capacity": {"max_fit_seq_len": COUNT, "min_fail_seq_len": COUNT, "peak_mem_gib_at_max": NON_NEGATIVE,
                 "hbm_gib": POSITIVE, "seq_len_step": COUNT, "config": OBJECT, "config.*": SETTING},
    "mamf": {"dtype": TEXT, "tflops_mean": POSITIVE, "tflops_median": POSITIVE, "tflops_max": POSITIVE,
             "peak_tflops": POSITIVE, "efficiency": NON_NEGATIVE, "m": COUNT, "n": COUNT, "k": COUNT},
    "capability": {"item": TEXT, "status": TEXT, "category": TEXT, "detail": TEXT},
    "attention": {"backend": TEXT, "pass": TEXT, "seq_len": COUNT, "tflops": NON_NEGATIVE,
                  "status": TEXT, "batch": COUNT, "heads": COUNT, "kv_heads": COUNT,
                  "head_dim": COUNT, "causal": FLAG, "dtype": TEXT, "packed_doc_len": SIZE,
                  "layer": TEXT, "v_head_dim": COUNT, "window": SIZE, "sinks": FLAG},
}
COMMON = {"run_id": TEXT, "script": TEXT, "reference": TEXT, "attn_backend": TEXT, "gpu_name": TEXT}
REQUIRED = {"summary": ("seq_len",), "decomposition": ("seq_len",), "attention": ("seq_len",),
            "capability": ("item", "status")}


def _values(record: dict, name: str):
    """(label, value) of a field: 'a.b' inside object a, 'a.*' every value of object a."""
    head, _, rest = name.partition(".")
    if not rest:
        return [(name, record.get(name))]
    inner = record.get(head)
    if isinstance(inner, list):
        return [(f"{head}[{i}]", v) for i, v in enumerate(inner)]
    if not isinstance(inner, dict):
        return []
    if "." in rest:  # deeper: 'a.b.c' is field c of object b of object a
        return [(f"{head}.{label}", v) for label, v in _values(inner, rest)]
    items = inner.items() if rest == "*" else [(rest, inner.get(rest))]
    return [(f"{head}.{k}", v) for k, v in items]


def _described(value) -> str:
    if isinstance(value, (int, float, bool)):
        return repr(value)
    return {str: "text", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def field_problem(record: dict) -> str | None:
    """Why a record of a kind the report reads cannot be used, or None."""
    kind = record["kind"]
    for name in REQUIRED.get(kind, ()):
        if record.get(name) is None:
            return f"no {name}"
    for name, (test, what) in {**COMMON, **FIELDS[kind]}.items():
        for label, value in _values(record, name):
            if value is not None and not test(value):
                if not isinstance(value, bool) and isinstance(value, (int, float)) and abs(value) > MAX_NUMBER:
                    shown = f"{value:.3g}" if isinstance(value, float) else \
                        f"a {len(str(abs(value)))}-digit integer"
                    return f"{label} is {shown}, beyond any measurement ({MAX_NUMBER:g})"
                return f"{label} is {_described(value)}, not {what}"
    low, mid, high = (record.get(k) for k in ("step_ms_min", "step_ms", "step_ms_max"))
    if None not in (low, mid, high) and not low <= mid <= high:
        return "step_ms is outside step_ms_min..step_ms_max"
    return None
