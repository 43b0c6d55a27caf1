"""tools/fp8_torch_step.py, the plain-torch yardstick of PRECISION: its fp32-master optimizer
(MASTER=fp32) does what DeepSpeed's bf16 mode does, so the yardstick's step carries the same
optimizer work as the suite's. Its GPU step is measured on the GPU machine, not here."""
import pytest
import torch

from conftest import import_script

tool = import_script("tools/fp8_torch_step.py")


def ones_net():
    net = torch.nn.Linear(16, 8).to(torch.bfloat16)
    with torch.no_grad():
        for p in net.parameters():
            p.fill_(1.0)
    return net


def train(net, master: str, steps: int):
    step, zero_grad = tool.optimizer(net, master)
    for _ in range(steps):
        for p in net.parameters():
            p.grad = torch.ones_like(p)
        step()
        zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_fp32_masters_keep_the_updates_bf16_rounds_away():
    # lr 1e-5 from 1.0: bf16's spacing there is 2^-7, so each update alone rounds away on the
    # bf16 weights; fp32 masters add them up (300 steps: about 1 - 300e-5, which bf16 shows)
    plain, masters = ones_net(), ones_net()
    train(plain, "bf16", 300)
    train(masters, "fp32", 300)
    assert torch.all(plain.weight == 1.0)
    reference = torch.ones(8, 16, requires_grad=True)
    opt = torch.optim.AdamW([reference], lr=1e-5)
    for _ in range(300):
        reference.grad = torch.ones_like(reference)
        opt.step()
    assert reference[0, 0].item() == pytest.approx(1 - 300e-5, rel=1e-4)
    assert torch.equal(masters.weight.detach(), reference.detach().to(torch.bfloat16))
    assert torch.all(masters.weight < 1.0)
