"""Is this node healthy? The thresholds, the verdict on a ratio to a healthy reference, and the
likely cause of a shortfall read from what the node recorded. Pure functions: node_check.py
gathers the figures and references, the page and run_node.sh show them.

Thresholds (a measured figure over its healthy reference of the same GPU kind):

  healthy     >= 95%  NVIDIA's cloud-acceptance bar: its Exemplar Cloud programme validates a
                      cloud by "> 95% baseline performance for all workloads in a given test
                      suite" (NVIDIA dgxc-benchmarking, Exemplar_validation.md)
  below       85-95%  inside the spread of the suite's own lent nodes: the four committed H200
                      MAMF records read 802.2, 763.8, 748.4 and 727.0 TFLOPS bf16, 101.0% to
                      91.5% of the published 794.5, three of them with the power cap holding
                      the clock
  well below  < 85%   further than any of those nodes fell
"""
from ...hardware import gpus
from ..read.stacks import stack_differences
from ..compare.verdict import ratio

HEALTHY_MIN = 0.95
WELL_BELOW_UNDER = 0.85
# A clock under load below this share of the reference's (or of the GPU's maximum) is named
# as a cause: at a fixed shape a GEMM's rate follows the SM clock, so the acceptance bar applies.
CLOCK_LOW = 0.95
THRESHOLDS_TEXT = (f"healthy at {HEALTHY_MIN:.0%} of the reference and above (NVIDIA's Exemplar Cloud bar: "
                   f"\"> 95% baseline performance for all workloads\", NVIDIA dgxc-benchmarking), below from "
                   f"{WELL_BELOW_UNDER:.0%} (the suite's four lent H200 nodes spread from 101.0% to 91.5% of the "
                   f"published bf16 MAMF: 802.2, 763.8, 748.4, 727.0 TFLOPS), well below under {WELL_BELOW_UNDER:.0%}")
HEALTHY, BELOW, WELL_BELOW, NO_VERDICT = "healthy", "below", "well below", "no verdict"
SHORT = (BELOW, WELL_BELOW)

# What each NVML clocks-event reason (hardware/telemetry.THROTTLE_BITS) means for a busy GPU.
THROTTLE_WORDS = {
    "sw_power_cap": "the power cap",
    "hw_slowdown": "a hardware slowdown (HW_SLOWDOWN: temperature, power brake or the power supply)",
    "sync_boost": "sync boost (held to the slowest GPU of its group)",
    "sw_thermal": "a thermal slowdown (software)",
    "hw_thermal": "a thermal slowdown (hardware)",
    "hw_power_brake": "the power brake (asserted by the system's power supply)",
    "display_clock_setting": "the display clock setting",
}


def verdict(share: float | None) -> str:
    if share is None:
        return NO_VERDICT
    if share >= HEALTHY_MIN:
        return HEALTHY
    return BELOW if share >= WELL_BELOW_UNDER else WELL_BELOW


def clock_cause(record: dict, header: dict, reference_clock_mhz: float | None) -> str | None:
    """Why a measurement ran slow, from its telemetry: a clock under load below CLOCK_LOW of the
    reference's (else of the GPU's maximum), with the throttle reasons NVML gave and the power
    against the limit and the board's rating; None where the clock held."""
    clock = record.get("sm_clock_mhz_median")
    hardware = (header or {}).get("hardware") or {}
    top, whose = ((reference_clock_mhz, "the {:.0f} MHz the reference ran at") if reference_clock_mhz
                  else (hardware.get("max_sm_clock_mhz"), "its {:.0f} MHz maximum"))
    share = ratio(clock, top)
    if share is None or share >= CLOCK_LOW:
        return None
    said = f"SM clock under load {clock:.0f} MHz, {share:.0%} of {whose.format(top)}"
    reasons = [r for r in record.get("throttle") or [] if isinstance(r, str)]
    if not reasons:
        return said + ("; no throttle reason recorded: clocks locked or application clocks set low "
                       "(nvidia-smi -q -d CLOCK)")
    words = [THROTTLE_WORDS.get(r, r) for r in reasons]
    if "sw_power_cap" in reasons:
        words[reasons.index("sw_power_cap")] = power_words(record.get("power_w_mean"), header)
    return f"{said}, held by {' and '.join(words)}"


def power_words(power_w: float | None, header: dict) -> str:
    """The power cap in words: the board's power against the limit, and the limit against the
    board's rating (the GPU table's TDP)."""
    hardware = (header or {}).get("hardware") or {}
    limit, spec = hardware.get("power_limit_w"), gpus.lookup(hardware.get("gpu_name"))
    drawn = f" at {power_w:.0f} W" if power_w else ""
    if not limit:
        return "the power cap" + drawn
    rated = hardware.get("default_power_limit_w") or (spec.tdp_w if spec else None)
    if rated and limit < rated * 0.99:
        return f"the power cap{drawn} of a {limit:.0f} W limit set below the board's {rated:.0f} W rating"
    rating = ", the board's rating: power-bound at this clock, not a lowered limit" if rated else ""
    return f"the power cap{drawn} of its {limit:.0f} W limit{rating}"


def power_limit_fault(header: dict) -> str | None:
    """A power limit set below the board's default (NVML's, in the header), else below its
    rating (the GPU table's TDP), from a header."""
    hardware = (header or {}).get("hardware") or {}
    limit, spec = hardware.get("power_limit_w"), gpus.lookup(hardware.get("gpu_name"))
    default = hardware.get("default_power_limit_w")
    rated, whose = (default, "its default") if default else (spec and spec.tdp_w, spec and f"the {spec.name}'s rating")
    if limit and rated and limit < rated * 0.99:
        return (f"power limit {limit:.0f} W, below {whose} of {rated:.0f} W "
                f"(nvidia-smi -pl sets it; the clock under load follows it)")
    return None


def stack_cause(stack: dict | None, reference_stack: dict | None) -> str | None:
    """The packages whose versions differ from the reference's (the guide's caveat 2: the stack
    alone moved its H200 step by 16%)."""
    if not stack or not reference_stack:
        return None
    differs = stack_differences(stack, reference_stack)
    if not differs:
        return None
    return "another stack than the reference's: " + ", ".join(f"{p} {a} vs {b}" for p, a, b in differs)


# ---- the node's own probes (check_capabilities' health items, the comm header) -------------

def capability_faults(capabilities: dict) -> list:
    """What check_capabilities' health and topology items found wrong on the node."""
    out = []
    for item in ("health:power_limit", "health:pcie", "health:ecc", "health:memory_rows", "health:clocks"):
        record = capabilities.get(item) or {}
        value = record.get("value")
        if record.get("status") == "ok" and isinstance(value, dict) and value.get("faults"):
            out += [str(f) for f in value["faults"] if isinstance(f, str)]
    topology = (capabilities.get("interconnect:topology") or {}).get("value")
    down = nvlink_down(topology.get("nvlink_links_active") if isinstance(topology, dict) else None)
    return out + ([down] if down else [])


def nvlink_down(links_per_gpu) -> str | None:
    """GPUs with fewer active NVLink links than the node's best GPU (a node's GPUs of one kind
    have the same links): links down."""
    if not isinstance(links_per_gpu, list) or len(links_per_gpu) < 2:
        return None
    counts = [n for n in links_per_gpu if isinstance(n, int) and not isinstance(n, bool)]
    if not counts or max(counts) == 0:
        return None
    short = [(i, n) for i, n in enumerate(links_per_gpu) if isinstance(n, int) and n < max(counts)]
    if not short:
        return None
    return ("NVLink links down: " + ", ".join(f"GPU {i} {n} of {max(counts)}" for i, n in short)
            + " active (the other GPUs')")


# NCCL transports as its NCCL_DEBUG=INFO lines name them ("via P2P/CUMEM", "via SHM/direct",
# "via NET/Socket/0", "via NET/IB/0"): sockets are TCP.
TCP_TRANSPORTS = ("NET/Socket",)


def transport_fault(comm_header: dict, gpu: str) -> str | None:
    """NCCL on TCP sockets where the GPUs have NVLink (the GPU table's link) or the
    environment turned the fast paths off: a silent fallback that costs the collectives."""
    spec = gpus.lookup(gpu)
    if not spec or not spec.link_gbps:
        return None
    transports = comm_header.get("nccl_transports")
    used = [t for t in transports if isinstance(t, str)] if isinstance(transports, list) else []
    env = comm_header.get("comm_env") if isinstance(comm_header.get("comm_env"), dict) else {}
    said = [t for t in used if t.startswith(TCP_TRANSPORTS)]
    if said:
        return (f"NCCL ran over TCP sockets ({', '.join(said)}) on {spec.name} GPUs that have NVLink: "
                f"a fallback (NCCL_DEBUG=INFO says why)")
    switched = [f"{k}={env[k]}" for k in ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE") if str(env.get(k)) == "1"]
    if str(env.get("NCCL_NET", "")).lower() == "socket":
        switched.append(f"NCCL_NET={env['NCCL_NET']}")
    if switched and not used:
        return (f"{' and '.join(switched)} in the collectives' environment on {spec.name} GPUs that have "
                f"NVLink: NCCL is kept off its fast paths")
    return None
