"""The replay engine as a serving backend: one PDPair (prefill pool, decode pool, KV transfer) that keeps
its pools across requests, so freed pages keep their last writer's KV as in SGLang, run by ONE worker
thread: requests queue and run one at a time, so the engine needs no locking of its own.

Model: the recall model (kvir.replay.models.RecallModel): output token t is the token held in the
request's logical KV slot t. A normal request therefore echoes its own prompt, and a request that decodes
over pages nobody wrote for it returns, in order, the tokens of whoever wrote them last: a leaking build
visibly returns another tenant's text. The ledger (attribution) says whose slots each response read;
serve keeps that per request (ids, tenants and counts, never text).

Prefix cache (--prefix-cache): off, salted (keyed on the cache salt and the token blocks, as vLLM keys its
own) or unsalted (the salt accepted but left out of the key: the connector defect). kvir.replay.block_cache
holds it, with whose request wrote each cached block, so a hit says whose blocks it read; cached_tokens is
reported in usage.prompt_tokens_details as vLLM does. Its block size is the page size.

One request never holds the engine thread for long: its output is capped at `max_tokens_cap` tokens (a
larger max_tokens is served up to the cap, finish_reason "length"), as it already is at what the context
leaves.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field

from kvir.serve.builds import Build, resolve_build
from kvir.serve.tokenizer import PLACEHOLDER

log = logging.getLogger("kvir.serve")
FREE_LISTS = ("sglang", "sglang-pd", "fifo")
PREFIX_CACHE = ("off", "salted", "unsalted")


@dataclass(frozen=True)
class ServeConfig:
    build: str = "leaking"
    pool: int = 4096                  # prefill KV pool (tokens): SGLang's max_total_num_tokens
    context: int = 8192               # the model's context length
    decode_pool: int | None = None    # decode KV pool (default: the context, so the decode side admits what prefill cannot)
    page_size: int = 16
    free_list: str = "sglang"         # which freed pages a new request gets (kvir.replay.allocator)
    model: str = "kvir-replay"
    usage_from: str = "decode"        # usage.prompt_tokens: decode's count (the prompt) or prefill's (1 for the stub)
    attribution: bool = True          # ledger: whose slots each response read
    default_max_tokens: int = 16
    max_tokens_cap: int = 512         # output tokens per request at most (the engine thread serves one at a time)
    prefix_cache: str = "off"         # off | salted | unsalted (kvir.replay.block_cache)
    prefix_cache_blocks: int | None = None   # cache capacity in blocks (default: the prefill pool's pages)
    tenants: dict[str, str] = field(default_factory=dict)   # API key -> tenant name (empty: every key is a tenant)

    def resolved(self) -> Build:
        return resolve_build(self.build)

    def check(self) -> None:
        from kvir.core.errors import KvirError

        self.resolved()
        if self.free_list not in FREE_LISTS:
            raise KvirError(f"--free-list must be one of {', '.join(FREE_LISTS)}, not {self.free_list!r}")
        if self.usage_from not in ("decode", "prefill"):
            raise KvirError(f"--usage-from must be decode or prefill, not {self.usage_from!r}")
        if self.page_size < 1 or self.pool < self.page_size or self.context < 2:
            raise KvirError(f"need page size >= 1, pool >= page size and context >= 2 (got page {self.page_size}, "
                            f"pool {self.pool}, context {self.context})")
        if (self.decode_pool or self.context) < self.page_size:
            raise KvirError("--decode-pool must hold at least one page")
        if self.prefix_cache not in PREFIX_CACHE:
            raise KvirError(f"--prefix-cache must be one of {', '.join(PREFIX_CACHE)}, not {self.prefix_cache!r}")
        if self.max_tokens_cap < 1 or (self.prefix_cache_blocks is not None and self.prefix_cache_blocks < 1):
            raise KvirError("--max-tokens-cap and --prefix-cache-blocks must be at least 1")

    @property
    def decode_tokens(self) -> int:
        return self.decode_pool or self.context


@dataclass
class Generation:
    """What one request got: status, tokens, counts, and whose KV it read (tenant -> slots)."""

    rid: str
    tenant: str
    http_status: int
    stage: str
    message: str = ""
    tokens: list[int] = field(default_factory=list)
    prompt_tokens: int = 0            # the prompt's length (what decode counts)
    prefill_tokens: int | None = None  # what the prefill side computed (1 for the stub)
    read_from: dict[str, int] = field(default_factory=dict)   # other tenants whose slots it decoded over
    uninitialised: int = 0            # slots nobody ever wrote
    cached_tokens: int = 0            # prompt tokens served from the prefix cache
    cache_read_from: dict[str, int] = field(default_factory=dict)   # other tenants whose cached blocks it read
    cache_sources: list[str] = field(default_factory=list)          # the request ids that wrote those blocks

    def as_record(self) -> dict:
        """The ledger record: ids, tenants, counts; never the tokens."""
        return {"rid": self.rid, "tenant": self.tenant, "http_status": self.http_status, "stage": self.stage,
                "prompt_tokens": self.prompt_tokens, "prefill_tokens": self.prefill_tokens,
                "completion_tokens": len(self.tokens), "read_from": dict(self.read_from),
                "uninitialised": self.uninitialised, "cached_tokens": self.cached_tokens,
                "cache_read_from": dict(self.cache_read_from), "cache_sources": list(self.cache_sources)}


class ServeEngine:
    def __init__(self, cfg: ServeConfig):
        cfg.check()
        from kvir.replay.config import NodeLimits, PairConfig
        from kvir.replay.pd_pair import PDPair
        from kvir.replay.models import RecallModel

        self.cfg, self.build = cfg, cfg.resolved()
        self.policy = self.build.policy()
        ecfg = PairConfig(prefill=NodeLimits(cfg.pool, cfg.context, cfg.page_size, source="kvir serve --pool"),
                            decode=NodeLimits(cfg.decode_tokens, cfg.context, cfg.page_size, source="kvir serve"),
                            free_list=cfg.free_list)
        self.engine = PDPair(ecfg, RecallModel())
        self.vocab = self.engine.model.vocab
        self.max_req_input_len = ecfg.prefill.max_req_input_len
        self.records: deque[dict] = deque(maxlen=100_000)
        self.prefix = None
        if cfg.prefix_cache != "off":
            from kvir.replay.block_cache import PrefixCache

            self.prefix = PrefixCache(cfg.page_size, cfg.prefix_cache_blocks or cfg.pool // cfg.page_size,
                                      cfg.prefix_cache)
        self._worker = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvir-serve-engine")
        self._count_lock = threading.Lock()
        self.served = 0

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)

    def submit(self, tenant: str, tokens: list[int], max_tokens: int, rid: str | None = None,
               salt: str | None = None) -> cf.Future:
        """Queue one request on the engine thread; the future's result is a Generation."""
        return self._worker.submit(self._generate, rid or uuid.uuid4().hex, tenant, tokens, max_tokens, salt)

    def _generate(self, rid: str, tenant: str, tokens: list[int], max_tokens: int, salt: str | None = None) -> Generation:
        import numpy as np

        from kvir.replay.request import ReplayRequest

        L, C = len(tokens), self.cfg.context
        # Like SGLang, the output budget is clamped to what the context leaves (at least one token), and
        # to the per-request cap.
        n = max(1, min(int(max_tokens), C - L, self.cfg.max_tokens_cap)) if L < C else 1
        req = ReplayRequest(rid, L, n, account=tenant, prompt=np.asarray(tokens, dtype=np.int64))
        e = self.engine
        out = e.start(req, self.policy, attribution=self.cfg.attribution)
        e.finish(rid)
        if out.http_status is None:            # the decode pool cannot hold it even empty
            g = Generation(rid, tenant, 503, "decode-capacity", "The decode KV pool cannot hold this request.",
                           prompt_tokens=L)
        else:
            g = Generation(rid, tenant, out.http_status, out.stage, out.reason if out.http_status != 200 else "",
                           tokens=[int(t) for t in out.tokens], prompt_tokens=L, prefill_tokens=out.prefill_tokens)
        if out.owners:
            for o in out.owners:
                who = e.registry.account(o.uid) or f"uid-{o.uid}"
                if who != tenant:
                    g.read_from[who] = g.read_from.get(who, 0) + o.tokens
        g.uninitialised = out.uninitialised_tokens
        if self.prefix is not None and g.http_status == 200 and out.prefill_tokens == L:
            # only a prompt the prefill really computed is cached (the 1-token stub is not)
            hit = self.prefix.admit(rid, tenant, tokens, salt)
            g.cached_tokens, g.cache_read_from, g.cache_sources = (hit.cached_tokens, hit.read_from,
                                                                   [r for r in hit.source_requests if r != rid])
        with self._count_lock:
            self.served += 1
        rec = g.as_record()
        self.records.append(rec)
        log.info("request %s tenant=%s status=%d stage=%s prompt_tokens=%d prefill_tokens=%s completion_tokens=%d "
                 "read_from=%s uninitialised=%d cached_tokens=%d cache_read_from=%s", rid, tenant, g.http_status, g.stage,
                 L, g.prefill_tokens, len(g.tokens), rec["read_from"] or "-", g.uninitialised, g.cached_tokens,
                 rec["cache_read_from"] or "-")
        return g

    def reported_prompt_tokens(self, g: Generation) -> int:
        if self.cfg.usage_from == "prefill" and g.prefill_tokens is not None:
            return g.prefill_tokens
        return g.prompt_tokens

    def server_info(self) -> dict:
        """An SGLang-shaped /get_server_info of the prefill node (server args, scheduler info, version),
        plus what kvir serve is (`kvir_serve`)."""
        c = self.cfg
        return {
            "model_path": c.model, "served_model_name": c.model, "context_length": c.context,
            "page_size": c.page_size, "disaggregation_mode": "prefill", "disaggregation_transfer_backend": "mooncake",
            "allow_auto_truncate": False, "disaggregation_enable_kv_checksum": False, "kv_canary": "none",
            "disable_radix_cache": c.prefix_cache == "off",
            "max_total_num_tokens": c.pool, "max_req_input_len": self.max_req_input_len,
            "internal_states": [{"max_total_num_tokens": c.pool}],
            "version": f"{self.build.name}+kvir.replay",
            "kvir_serve": {"build": self.build.name, "leaks": self.build.leaks, "behaviour": self.build.behaviour,
                           "policy": self.policy.name, "decode_pool": c.decode_tokens, "free_list": c.free_list,
                           "model": "recall", "placeholder_token": PLACEHOLDER, "prefix_cache": c.prefix_cache,
                           "max_tokens_cap": c.max_tokens_cap},
        }
