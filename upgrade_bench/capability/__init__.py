"""check_capabilities.py's answers, above the kernels they call: does this GPU and stack run X?

verdicts   gates (formats.NEEDS, the attention table), the classification of a probe's outcome,
           the memory rule of thumb, topology parsing and the terminal table, all pure
probes     the tiny real operations (matmul formats, attention kernels, memory, topology)
main       check_capabilities.py: its settings, the plan of items, the run
"""
