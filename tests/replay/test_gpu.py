"""GPU checks (pytest -m gpu; benchmarks/gpu_check.sh runs them): the Triton kernel compiled for the device
against the float64 reference, isolation on the device, and CUDA replays equal to CPU replays."""
from __future__ import annotations

import math

import pytest
import torch

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
pytest.importorskip("triton", reason="triton is not installed: pip install 'kvir[triton]'")

from kvir.replay.attribution import replay_target  # noqa: E402
from kvir.replay.kernels import OwnerCheck, paged_decode_attention  # noqa: E402
from kvir.replay.policy import policy_for  # noqa: E402
from kvir.replay.request import ReplayRequest  # noqa: E402

from .helpers import random_table, small_engine  # noqa: E402
from .reference import dense_reference, dense_same_dtype, error_ratio_ok  # noqa: E402
from .test_attribution import A, C, V  # noqa: E402
from .test_kernels import _owned_scenario  # noqa: E402


@pytest.mark.parametrize("dtype, fudge", [(torch.float32, 10.0), (torch.bfloat16, 1.1)])
@pytest.mark.parametrize("page, group, D", [(16, 1, 64), (64, 4, 128), (256, 8, 128)])
def test_triton_on_device_matches_float64(page, group, D, dtype, fudge):
    g = torch.Generator().manual_seed(page + group)
    lens = sorted({L for L in (1, page - 1, page, page + 1, 4097, 70_001) if L >= 1})
    need = sum(-(-L // page) for L in lens)
    table = random_table(lens, page, need + 9, g)
    slots = (need + 10) * page
    k = torch.randn(slots, 2, D, generator=g).to(dtype)
    v = torch.randn(slots, 2, D, generator=g).to(dtype)
    q = torch.randn(len(lens), 2 * group, D, generator=g).to(dtype)
    scale = 1 / math.sqrt(D)
    out = paged_decode_attention(q.cuda(), k.cuda(), v.cuda(), table.to("cuda"), scale).out.cpu()
    ok, e_test, e_base = error_ratio_ok(out, dense_same_dtype(q, k, v, table, scale), dense_reference(q, k, v, table, scale), fudge)
    assert ok, (e_test, e_base)


def test_isolation_on_device():
    q, k, v, table, check = _owned_scenario()
    dev = OwnerCheck(*(x.cuda() for x in (check.page_owner, check.page_epoch, check.slot_stamp, check.owners)), "mask")
    qc, kc, vc, tc = q.cuda(), k.cuda(), v.cuda(), table.to("cuda")
    base = paged_decode_attention(qc, kc, vc, tc, 0.2, check=dev).out
    foreign = torch.tensor([s for s in range(16, k.shape[0]) if s not in set(table.slots(0)[:25].tolist())]).cuda()
    k2, v2 = kc.clone(), vc.clone()
    k2[foreign] = float("nan")
    v2[foreign] = float("nan")
    assert torch.equal(paged_decode_attention(qc, k2, v2, tc, 0.2, check=dev).out[0], base[0])
    assert not torch.equal(paged_decode_attention(qc, k2, v2, tc, 0.2).out[0], base[0])


def _attributed(device: str):
    e = small_engine(prefill_pool=640, decode_pool=1024, context=4096, page=16, device=device)
    e.run(A)
    e.run(C)
    res = replay_target(e, V, policy_for("0.5.19"), [policy_for("0.5.20")], causal_top=2)
    return ([(e.registry.rid(o.uid), o.tokens, o.first_token, o.last_token) for o in res.main.owners],
            res.main.tokens, [(c.slots, c.changed_tokens) for c in res.causal],
            res.main.owners[0].attention_mass, res.outcomes["sglang-0.5.20"].http_status)


def test_engine_on_cuda_equals_cpu_and_is_deterministic():
    cpu, gpu, gpu2 = _attributed("cpu"), _attributed("cuda"), _attributed("cuda")
    assert gpu[:3] == cpu[:3] and gpu[4] == cpu[4] == 400
    assert gpu[3] == pytest.approx(cpu[3], abs=1e-6)
    assert gpu == gpu2


def test_replay_case_on_cuda_equals_cpu(tmp_path):
    from kvir.replay import replay_case

    from .test_run_case import make_case

    case_dir = make_case(tmp_path)
    cpu = replay_case(case_dir, device="cpu").results
    gpu = replay_case(case_dir, device="cuda").results
    assert gpu.device.str.startswith("cuda").all()
    for col in ("build", "verdict", "http_status", "stage", "leaked_tokens", "carried_tokens", "recalled_tokens"):
        assert gpu[col].tolist() == cpu[col].tolist(), col
    assert [[o["request_id"] for o in x] for x in gpu.foreign_owners] == [[o["request_id"] for o in x] for x in cpu.foreign_owners]


def test_full_size_on_cuda():
    from kvir.replay.config import NodeLimits, PairConfig
    from kvir.replay.pd_pair import PDPair
    from kvir.replay.models import RecallModel

    cfg = PairConfig(prefill=NodeLimits(681_280, 1_048_576, 64), decode=NodeLimits(2_097_152, 1_048_576, 64))
    e = PDPair(cfg, RecallModel(), device="cuda")
    for i, n in enumerate((681_000, 681_000, 681_273)):      # see test_full_size.py: the stub reuses big-2's page
        e.run(ReplayRequest(f"big-{i}", n, 30, account=f"a{i}", decode_steps=0))
    res = replay_target(e, ReplayRequest("victim", 900_000, 9, account="v", decode_steps=8), policy_for("0.5.19"),
                        [policy_for("0.5.20")], causal_top=1)
    assert (res.main.http_status, res.outcomes["sglang-0.5.20"].http_status) == (200, 400)
    assert e.registry.rid(res.main.owners[0].uid) == "big-2" and res.causal[0].changed_tokens == 8
