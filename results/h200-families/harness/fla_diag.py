"""Why transformers 5.17 ran Qwen3-Next's torch fallback with flash-linear-attention installed:
what its availability check sees, then FLA's chunk kernel called directly at Qwen3-Next's
shapes (8K tokens, 16 key / 32 value heads x 128), its first call and a few more timed."""
import importlib.util
import time

import torch
from transformers.utils import import_utils as iu

print("find_spec(fla):", importlib.util.find_spec("fla"))
print("distributions of fla:", iu.PACKAGE_DISTRIBUTION_MAPPING.get("fla"))
try:
    print("_is_package_available:", iu._is_package_available("fla", return_version=True))
except Exception as err:
    print("_is_package_available raised", type(err).__name__, err)
print("is_flash_linear_attention_available:", iu.is_flash_linear_attention_available())
import transformers.models.qwen3_next.modeling_qwen3_next as m
print("module globals:", sorted(n for n in vars(m) if "delta" in n.lower() or "conv1d" in n.lower() or "gated" in n.lower()))
from transformers import AutoConfig
cfg = AutoConfig.from_pretrained("configs/tiny-qwen3-next.json")
layer = m.Qwen3NextGatedDeltaNet(cfg, 0)
print("layer binds:", {n: getattr(getattr(layer, n, None), "__module__", None) for n in
                       ("chunk_gated_delta_rule", "causal_conv1d_fn", "recurrent_gated_delta_rule")},
      type(layer.norm).__module__)
from fla.ops.gated_delta_rule import chunk_gated_delta_rule

T, HK, HV, D = 8192, 16, 32, 128
q = torch.randn(1, T, HV, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
k = torch.randn(1, T, HV, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
v = torch.randn(1, T, HV, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
g = torch.nn.functional.logsigmoid(torch.randn(1, T, HV, device="cuda", dtype=torch.float32)).requires_grad_()
beta = torch.rand(1, T, HV, device="cuda", dtype=torch.bfloat16).requires_grad_()
for i in range(4):
    torch.cuda.synchronize(); t = time.perf_counter()
    o, _ = chunk_gated_delta_rule(q, k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True)
    o.sum().backward()
    torch.cuda.synchronize()
    print(f"call {i}: fwd+bwd {1e3 * (time.perf_counter() - t):.1f} ms")
