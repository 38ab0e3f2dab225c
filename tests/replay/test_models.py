"""Models: incremental paged decode equals a full dense forward; the recall model does what it says."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from kvir.replay.config import NodeLimits
from kvir.replay.kernels import paged_decode_attention
from kvir.replay.models import RecallModel, TinyTransformer, TransformerConfig
from kvir.replay.node import KVNode
from kvir.replay.page_table import PageTable
from kvir.replay.request import ReplayRequest

from .helpers import expected_tokens, small_engine


def _paged_decode(model, prompt: torch.Tensor, steps: int, page: int, seed: int):
    """Prefill into randomly permuted pages of a pool, then decode greedily through the paged kernel.
    Returns the generated tokens and the logits of every decode step."""
    L = prompt.numel()
    node = KVNode("decode", NodeLimits(page * 64, 4096, page), model.dims)
    g = torch.Generator().manual_seed(seed)
    n_pages = -(-(L + steps) // page)
    pages = (torch.randperm(64, generator=g)[:n_pages] + 1).numpy()
    node.alloc.owner[pages] = 1                              # hand the pages to owner 1 (bypassing the free list)
    node.alloc.free_list.free_pages = np.setdiff1d(node.alloc.free_list.free_pages, pages)
    pre = model.prefill(prompt)
    node.pool.write(node.slots(pages, 0, L), pre.k, pre.v)
    tokens, logits = [pre.first_token], [pre.logits]
    kc_all = node.pool
    for t in range(1, steps + 1):
        pos = L + t - 1
        slot = node.slots(pages, pos, 1)
        table = PageTable.from_rows([torch.as_tensor(pages[: -(-(pos + 1) // page)])], [pos + 1], page)

        def attend(layer, q, k, v, pq):
            kc, vc = kc_all.layer(layer)
            kc[slot] = k.view(1, *kc.shape[1:]).to(kc.dtype)
            vc[slot] = v.view(1, *vc.shape[1:]).to(vc.dtype)
            pqb = None if pq is None else pq.view(1, q.shape[0], -1)
            return paged_decode_attention(q.view(1, *q.shape), kc, vc, table, model.sm_scale, pos_query=pqb,
                                          chunk_tokens=page * 2).out[0]

        d = model.decode_step(tokens[-1], pos, t, attend)
        tokens.append(d.token)
        logits.append(d.logits)
    return tokens, logits


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-10), (torch.float32, 2e-4)])
@pytest.mark.parametrize("page", [1, 16])
def test_incremental_decode_equals_full_forward(dtype, tol, page):
    model = TinyTransformer(TransformerConfig(dtype=dtype, seed=3))
    prompt = torch.randint(1, model.vocab, (37,), generator=torch.Generator().manual_seed(1))
    tokens, logits = _paged_decode(model, prompt, steps=6, page=page, seed=page)
    seq = torch.cat([prompt, torch.tensor(tokens[:-1])])
    dense = model.forward_dense(seq)                                  # logits of every position
    for t, lg in enumerate(logits):
        torch.testing.assert_close(lg, dense[36 + t], rtol=tol, atol=tol)
        assert tokens[t] == int(torch.argmax(dense[36 + t]))


def test_engine_decode_matches_greedy_dense_forward():
    model = TinyTransformer(TransformerConfig(dtype=torch.float64, seed=5))
    eng = small_engine(model=model)
    prompt = np.random.default_rng(0).integers(1, model.vocab, 50)
    out = eng.run(ReplayRequest("r", 50, 8, prompt=prompt))
    assert out.http_status == 200 and len(out.tokens) == 8
    seq = torch.cat([torch.as_tensor(prompt), torch.tensor(out.tokens[:-1])])
    greedy = torch.argmax(model.forward_dense(seq), -1)[49:].tolist()
    assert out.tokens == greedy


def test_recall_model_echoes_the_tokens_held_in_its_own_slots():
    eng = small_engine()
    out = eng.run(ReplayRequest("echo", 300, 20, account="a"))
    assert out.tokens == expected_tokens("echo", 0, 20)               # output t = prompt token t


def test_recall_model_definition_on_hand_made_slots():
    """Output t is the token of logical slot t, whatever wrote it: put known tokens in a page table by hand."""
    model = RecallModel()
    P = 16
    node = KVNode("decode", NodeLimits(P * 8, 4096, P), model.dims)
    held = torch.tensor([0, 11, 22, 33, 44, 55, 66, 77, 88, 99, 1234, 65535, 7, 8, 9, 10, 12, 13, 14, 15])
    pages = np.array([5, 2])                                          # non-contiguous
    node.pool.write(node.slots(pages, 0, 20), *model.kv(held))
    out = []
    for t in range(1, 12):
        table = PageTable.from_rows([torch.as_tensor(pages)], [20], P)

        def attend(layer, q, k, v, pq):
            kc, vc = node.pool.layer(0)
            return paged_decode_attention(q.view(1, 1, -1), kc, vc, table, 1.0, pos_query=pq.view(1, 1, -1)).out[0]

        # read-only: no KV written for the step's own token in this harness
        out.append(model.decode_step(0, 20, t, attend).token)
    assert out == held[1:12].tolist()
