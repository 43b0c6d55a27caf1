"""Packed documents really cannot see each other on the SDPA path the CPU runs."""
import torch
import transformers

from upgrade_bench.training import engine
from upgrade_bench.models import model


def per_token_loss(net, batch):
    logits = net(input_ids=batch["input_ids"], position_ids=batch["position_ids"],
                 use_cache=batch["use_cache"]).logits
    return torch.nn.functional.cross_entropy(logits[0, :-1].float(), batch["labels"][0, 1:],
                                             reduction="none", ignore_index=-100)


def setup(doc_len):
    torch.manual_seed(0)
    net = transformers.AutoModelForCausalLM.from_config(model.load_config("tiny"), attn_implementation="sdpa")
    net.eval()
    batch = engine.make_batch(1, 96, doc_len, (0, 1000), torch.device("cpu"), torch.Generator().manual_seed(1))
    changed = {**batch, "input_ids": batch["input_ids"].clone()}
    changed["input_ids"][0, 5] = (changed["input_ids"][0, 5] + 1) % 1000  # a token of document 1
    return net, batch, changed


@torch.no_grad()
def test_changing_document_1_leaves_document_2_loss_unchanged():
    net, batch, changed = setup(doc_len=32)
    before, after = per_token_loss(net, batch), per_token_loss(net, changed)
    # loss terms predicting tokens 33..95 (documents 2 and 3) are untouched
    assert torch.equal(before[32:], after[32:])
    assert not torch.equal(before[:31], after[:31])  # document 1 itself did change


@torch.no_grad()
def test_without_packing_the_same_change_reaches_later_tokens():
    # The control: one dense sequence, so the same edit must leak forward.
    net, batch, changed = setup(doc_len=0)
    assert not torch.allclose(per_token_loss(net, batch)[32:], per_token_loss(net, changed)[32:])
