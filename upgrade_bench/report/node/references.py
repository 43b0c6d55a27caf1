"""The one home of the node check's references: for each component a node measures (MAMF, HBM
copy, attention per backend, shape and length, the training step per configuration and length,
the interconnect), where a healthy figure of its GPU kind comes from, with its citation, and
where none exists, the one line that says so. First found wins, never another GPU kind's figure:

  1. the user's own healthy node (`plot_results.py --reference DIR`), the same figure, unless it
     is itself below its own references (check.py says so and passes over it);
  2. the suite's measured node folders (MEASURED_NODES, one per GPU kind and more where lent),
     the same figure, their median, leaving out the node's own runs (by run id);
  3. published figures (`published`, every GPU of hardware/gpus.py):
       MAMF        the Open Book's MAMF table (gpus.MAMF_SOURCE), per dtype;
       HBM copy    the GPU's datasheet bandwidth at the copy share a healthy HBM3e node reached
                   here (HBM_COPY_SHARE), NVIDIA GPUs; AMD's datasheet figure as a ceiling only;
       interconnect  the datasheet link rate in one direction, a ceiling (no healthy node's
                   share of it is shipped or published for these GPUs): a ratio without verdict;
       attention, the training step: none published of the kernels, shapes and configurations
                   the suite times (ATTENTION_MISSING, STEP_MISSING say why).
"""
from dataclasses import dataclass

from ...hardware import collectives, gpus

# The suite's own node runs (results/README.md): lent H200s (torch 2.11.0, FA4 4.0.0b36) and one
# H100 80GB HBM3 (torch 2.11.0, FA4 4.0.0b36, results/h100-node-10/README.md).
MEASURED_NODES = ("results/h200-moe-8/node", "results/h200-precision-7/node", "results/h200-families-3/node",
                  "results/h100-node-10/node", "results/h100-stacks-11/node-default")
MEASURED = "the suite's measured node runs"
COMPONENTS = ("mamf", "hbm", "attention", "step", "comm")
WORDS = {"mamf": "MAMF", "hbm": "HBM copy", "attention": "attention", "step": "training step", "comm": "interconnect"}

PUBLISHED_MAMF = "published (the Open Book's MAMF table, hardware/gpus.py)"
# bench_hbm.py's copy at its best buffer (8 GiB) on a healthy H200 SXM: 4.29 of the datasheet's
# 4.8 TB/s, 89.4% (results/h200-hbm-6/README.md: hbm_suite.jsonl, do_bench agreeing within
# 0.4%). A copy reads and writes each byte: DRAM turnarounds and refresh keep it under the
# datasheet's signalling rate on every HBM part; the share is the one measured, stated as such.
HBM_COPY_SHARE = 0.894
HBM_SHARE_SOURCE = "results/h200-hbm-6 (a healthy H200 SXM's copy: 4.29 of its 4.8 TB/s, 89.4%)"
HBM_SHARE_VENDORS = ("NVIDIA",)   # the share was measured on an NVIDIA HBM3e part only
ATTENTION_MISSING = ("nothing published of these kernels and shapes (the FlashAttention-2 and -3 papers, Dao 2023 and "
                     "Shah et al. 2024, time multi-head shapes at 16K tokens a batch, not GQA 32/8 at batch 1)")
STEP_MISSING = ("nothing published of this configuration (the guide's steps are the whole 8B on 8 GPUs; "
                "vendors' MFU tables, NVIDIA's NeMo performance summary, train whole models on many GPUs)")


@dataclass(frozen=True)
class Reference:
    value: float
    source: str
    stack: dict | None = None        # None: the source names none
    clock_mhz: float | None = None   # the SM clock it ran at, where recorded
    judged: bool = True              # False: a ceiling (a datasheet figure), ratio without verdict


@dataclass(frozen=True)
class Published:
    reference: Reference | None
    missing: str | None = None       # one line: why none, where reference is None


def published(gpu: str, component: str, dtype: str = "bf16") -> Published:
    """The published reference of one component of a GPU of the table (`gpu`: a device or table
    name), or the line that says why none exists."""
    spec = gpus.lookup(gpu)
    name = spec.name if spec else gpu
    words = WORDS[component]
    if spec is None:
        return Published(None, f"{words}: no reference for the {name}: it is not in the GPU table (hardware/gpus.py)")
    if component == "mamf":
        value = spec.mamf_tflops(dtype)
        return (Published(Reference(value, PUBLISHED_MAMF)) if value else
                Published(None, f"{words}: no reference for the {name}: the Open Book's MAMF table has no {dtype} figure of it"))
    if component == "hbm":
        datasheet = spec.hbm_tbps * 1e3
        if spec.datasheet.startswith(HBM_SHARE_VENDORS):
            return Published(Reference(round(datasheet * HBM_COPY_SHARE, 1),
                                       f"the {spec.datasheet}'s {spec.hbm_tbps:g} TB/s at the {HBM_COPY_SHARE:.1%} copy "
                                       f"share measured in {HBM_SHARE_SOURCE}"))
        return Published(Reference(datasheet, f"the {spec.datasheet}'s {spec.hbm_tbps:g} TB/s, a ceiling (no healthy "
                                              f"copy share of this vendor's HBM measured or published here)", judged=False))
    if component == "comm":
        link = collectives.link_gbps(spec.name)[0]
        return (Published(Reference(link, f"the {spec.name}'s datasheet link, one direction", judged=False)) if link else
                Published(None, f"{words}: no reference for the {name}: the GPU table gives it no link figure"))
    why = ATTENTION_MISSING if component == "attention" else STEP_MISSING
    return Published(None, f"{words}: no reference for the {name}: {why}")
