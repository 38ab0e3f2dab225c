"""Run a published sglang wheel's own code on CPU and print what it did, as JSON (one wheel per process; the
tests in test_sglang_real.py start this script and compare its output with kvir).

    python sglang_checks.py alloc WHEEL --need-sort 1 --steps 3000 --seed 7 --pages 96 --page-size 16
    python sglang_checks.py intake WHEEL --context 1048576 --pool 681280
    python sglang_checks.py all WHEEL ...        # both allocator modes and the intake, in one process

alloc: PagedTokenToKVPoolAllocator(size, page_size, dtype, "cpu", kvcache=None, need_sort) driven by seeded
random alloc / free (whole allocations, page-aligned tails, token subsets of pages) / free_group steps;
after each step the pages an alloc returned (in order), free_pages (in order), the parked pages
(release_pages / staged_pages, sorted: their order is never observable) and available_size().

intake: at prompt lengths around the limit, the real validate_input_length, Req(...) and
Req.set_finish_with_abort, is_aborted / is_unadmitted_reject where the build has them, the real
PrefillBootstrapQueue.add / create_sender / _check_if_req_exceed_kv_capacity on a queue built with __new__
(its scheduler and output streamer are recorders), and for a request the door enqueued with an abort
pending: the real _retire_aborted_prefill_result where the build has it (0.5.20+), else the source of
process_batch_result_disagg_prefill (the forward-result path that sends the KV) read for a check of the
pending abort before send_kv_chunk. Shims, recorded in the output: the TP-rank query of
set_finish_with_abort answers rank 0, so SGLang's own logger.error line is emitted (its message is kept).
"""
from __future__ import annotations

import argparse
import ast
import inspect
import io
import json
import logging
import random
import sys
import textwrap
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sglang_real import RealSGLang  # noqa: E402

INTAKE_REAL = ["sglang.srt.managers.schedule_batch", "sglang.srt.managers.utils", "sglang.srt.disaggregation.utils",
               "sglang.srt.disaggregation.prefill", "sglang.srt.sampling.sampling_params"]


def alloc_real(wheel: Path) -> list[str]:
    """0.5.13+: allocator/paged.py and allocator/base.py; before: the module allocator.py."""
    import zipfile

    if "sglang/srt/mem_cache/allocator/paged.py" in zipfile.ZipFile(wheel).namelist():
        return ["sglang.srt.mem_cache.allocator.paged", "sglang.srt.mem_cache.allocator.base"]
    return ["sglang.srt.mem_cache.allocator"]


def alloc_check(sg: RealSGLang, a) -> dict:
    import torch

    if sg.has("sglang.srt.mem_cache.allocator.paged"):
        mod = sg.module("sglang.srt.mem_cache.allocator.paged")
        where = "sglang/srt/mem_cache/allocator/paged.py"
    else:
        mod = sg.module("sglang.srt.mem_cache.allocator")
        where = "sglang/srt/mem_cache/allocator.py"
    PS, NP = a.page_size, a.pages
    calls = sg.watch()
    real = mod.PagedTokenToKVPoolAllocator(size=PS * NP, page_size=PS, dtype=torch.bfloat16, device="cpu",
                                           kvcache=None, need_sort=bool(a.need_sort))
    rng = random.Random(a.seed)
    live: list[tuple[int, list[int]]] = []          # (allocation id, token indices)
    steps = []
    next_id = 0

    def parked() -> list[int]:
        if hasattr(real, "staged_pages"):
            return sorted(int(x) for t in real.staged_pages for x in t.tolist())
        rp = getattr(real, "release_pages", None)
        return [] if rp is None else sorted(int(x) for x in rp.tolist())

    def subset(tokens: list[int]) -> list[int]:
        by_page: dict[int, list[int]] = {}
        for t in tokens:
            by_page.setdefault(t // PS, []).append(t)
        out = []
        for toks in by_page.values():
            out += rng.sample(toks, rng.randint(1, len(toks)))
        return out

    for _ in range(a.steps):
        r = rng.random()
        if r < 0.5 or not live:
            n = rng.randint(1, 8)
            out = real.alloc(n * PS)
            got = None if out is None else [int(x) // PS for x in out.tolist()[::PS]]
            rec = {"op": "alloc", "n": n, "id": None if out is None else next_id, "pages": got}
            if out is not None:
                live.append((next_id, out.tolist()))
                next_id += 1
        elif r < 0.85:
            aid, toks = live.pop(rng.randrange(len(live)))
            if len(toks) > PS and rng.random() < 0.3:             # free a page-aligned tail only
                cut = rng.randint(1, len(toks) // PS - 1) * PS
                live.append((aid, toks[:cut]))
                toks = toks[cut:]
            part = rng.random() < 0.3
            sent = subset(toks) if part else toks
            real.free(torch.tensor(sent, dtype=torch.int64))
            rec = {"op": "free", "items": [[aid, sorted({t // PS for t in sent})]], "partial": part}
        else:
            k = min(len(live), rng.randint(1, 3))
            picked = [live.pop(rng.randrange(len(live))) for _ in range(k)]
            real.free_group_begin()
            items = []
            for aid, toks in picked:
                sent = subset(toks) if rng.random() < 0.3 else toks
                real.free(torch.tensor(sent, dtype=torch.int64))
                items.append([aid, sorted({t // PS for t in sent})])
            real.free_group_end()
            rec = {"op": "free_group", "items": items}
        rec.update(free_pages=[int(x) for x in real.free_pages.tolist()], parked=parked(),
                   available=int(real.available_size()))
        steps.append(rec)
    sg.unwatch()
    return {"class": f"{where}:PagedTokenToKVPoolAllocator", "steps": steps, "stub_calls": sorted(set(calls))}


def _recorder(name: str):
    calls: list[str] = []

    class Rec:
        def __getattr__(self, attr):
            def f(*args, **kwargs):
                calls.append(attr)
                return None
            return f
    r = Rec()
    r.calls = calls
    return r


def intake_check(sg: RealSGLang, a) -> dict:
    SB = sg.module("sglang.srt.managers.schedule_batch")
    MU = sg.module("sglang.srt.managers.utils")
    DU = sg.module("sglang.srt.disaggregation.utils")
    PF = sg.module("sglang.srt.disaggregation.prefill")
    SP = sg.module("sglang.srt.sampling.sampling_params")
    log = io.StringIO()                           # the messages SGLang's own loggers emit (no prefix)
    h = logging.StreamHandler(log)
    h.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger().addHandler(h)
    logging.getLogger().setLevel(logging.INFO)
    ctx, pool = a.context, a.pool
    limit = min(ctx - 1, pool - 1) - 5                 # tp_worker.py, quoted in builds.toml
    shims = []
    for name in ("get_tensor_model_parallel_rank", "get_parallel"):
        if hasattr(SB, name):
            setattr(SB, name, (lambda: 0) if name.startswith("get_tensor") else (lambda: types.SimpleNamespace(tp_rank=0)))
            shims.append(f"schedule_batch.{name}: TP rank 0")
    fake_host = getattr(PF, "FAKE_BOOTSTRAP_HOST", None) or DU.FAKE_BOOTSTRAP_HOST

    def make_req(n: int, rid: str):
        return SB.Req(rid, "", list(range(1, n + 1)), SP.SamplingParams(max_new_tokens=16),
                      bootstrap_host=fake_host, bootstrap_port=8998, bootstrap_room=abs(hash(rid)) % 10**6)

    def door(req) -> dict:
        q = PF.PrefillBootstrapQueue.__new__(PF.PrefillBootstrapQueue)
        sched = _recorder("scheduler")
        sched.output_streamer = _recorder("streamer")
        q.scheduler, q.queue = sched, []
        q.max_total_num_tokens = q.max_input_len = pool
        q.transfer_backend, q.kv_manager, q.bootstrap_port, q.tp_rank, q.pp_rank = None, None, 8998, 0, 0
        PF.PrefillBootstrapQueue.add(q, req, 8)
        return {"enqueued": req in q.queue, "scheduler_calls": sched.calls,
                "streamed": sched.output_streamer.calls, "sender_created": getattr(req, "disagg_kv_sender", None) is not None}

    def after_forward(req) -> dict:
        mixin = getattr(PF, "SchedulerDisaggregationPrefillMixin")
        if hasattr(mixin, "_retire_aborted_prefill_result"):
            req.metadata_buffer_index = 0                 # as pop_bootstrapped would have given it one
            sender = _recorder("sender")
            req.disagg_kv_sender = sender
            fake = _recorder("scheduler")
            fake.req_to_metadata_buffer_idx_allocator = _recorder("metadata")
            fake.enable_hicache_storage = False
            fake.tree_cache = _recorder("tree")
            retired = mixin._retire_aborted_prefill_result(fake, req)
            fr = req.finished_reason.to_json() if req.finished_reason else None
            return {"path": "_retire_aborted_prefill_result", "retired": bool(retired), "sender_calls": sender.calls,
                    "finished_reason": _plain(fr)}
        src = textwrap.dedent(inspect.getsource(mixin.process_batch_result_disagg_prefill))
        tree = ast.parse(src)
        sends = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "send_kv_chunk"]
        checks = [n.lineno for n in ast.walk(tree) if (isinstance(n, ast.Call) and getattr(n.func, "id", "") == "is_aborted")
                  or (isinstance(n, ast.Attribute) and n.attr == "to_finish")]
        return {"path": "process_batch_result_disagg_prefill (source)", "sends_kv": bool(sends),
                "abort_checked_before_send": bool(checks) and bool(sends) and min(checks) < min(sends)}

    rows = []
    for n in (limit - 2, limit - 1, limit, limit + 1, pool, pool + 1, ctx - 1):
        req = make_req(n, f"req-{n}")
        calls = sg.watch()
        msg = MU.validate_input_length(req, limit, False)
        row = {"prompt_tokens": n, "message": msg}
        if msg:
            req.set_finish_with_abort(msg)
            row.update(stub=list(req.origin_input_ids), stub_type=type(req.origin_input_ids).__name__,
                       to_finish=_plain(req.to_finish.to_json()), finished=req.finished())
        if hasattr(DU, "is_unadmitted_reject"):
            row["is_unadmitted_reject"] = bool(DU.is_unadmitted_reject(req))
        row["door"] = door(req)
        if row["door"]["enqueued"] and msg:
            row["after_forward"] = after_forward(req)
        row["stub_calls"] = sorted(set(calls))
        sg.unwatch()
        rows.append(row)
    control = []
    for n in (pool, pool + 1):                      # the door's own check, on requests that skipped intake
        req = make_req(n, f"ctl-{n}")
        control.append({"prompt_tokens": n, "door": door(req)})
    return {"limit": limit, "rows": rows, "control": control, "shims": shims,
            "log": [x for x in log.getvalue().splitlines() if "Input length" in x or "exceeds the maximum" in x]}


def _plain(x):
    return json.loads(json.dumps(x, default=lambda o: int(o) if hasattr(o, "__int__") else str(o)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=("alloc", "intake", "all"))
    ap.add_argument("wheel")
    ap.add_argument("--need-sort", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--pages", type=int, default=96)
    ap.add_argument("--page-size", type=int, default=16)
    ap.add_argument("--context", type=int, default=1_048_576)
    ap.add_argument("--pool", type=int, default=681_280)
    a = ap.parse_args()
    real = {"alloc": alloc_real(Path(a.wheel)), "intake": INTAKE_REAL,
            "all": alloc_real(Path(a.wheel)) + INTAKE_REAL}[a.check]
    with RealSGLang(Path(a.wheel), real) as sg:
        if a.check == "all":                       # one process per build: the imports are paid once
            out = {"alloc_pd": alloc_check(sg, a)}
            a.need_sort = 0
            out["alloc_nonpd"] = alloc_check(sg, a)
            out["intake"] = intake_check(sg, a)
        else:
            out = alloc_check(sg, a) if a.check == "alloc" else intake_check(sg, a)
        out["stubbed_modules"] = sorted(sg.stubbed)
        out["real_modules"] = real
    print(json.dumps(out))


if __name__ == "__main__":
    main()
