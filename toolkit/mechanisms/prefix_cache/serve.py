"""The prefix-cache mechanism's serve part (hookspec: kvir.serve.plugin.ServePart): `kvir serve --prefix-cache`,
a prefix cache keyed as vLLM keys its blocks (kvir.replay.block_cache, the replay engine's shared block
cache): salted (the cache salt in the first block's key), unsalted (the salt accepted but left out of the
key: the connector defect) or off. It keeps whose request wrote each cached block, so a hit says whose
blocks it read; cached_tokens is reported in usage.prompt_tokens_details as vLLM does. Its block size is the
page size.
"""
from __future__ import annotations

from typing import Any, Mapping

from kvir.core.errors import KvirError
from kvir.serve.config import ServeConfig
from kvir.serve.plugin import ServeOption, Served

HELP = """--prefix-cache adds a prefix cache keyed as vLLM keys its blocks: salted (the
request's cache_salt in the first block's key: tenants with their own salts
never share blocks), unsalted (the salt accepted but not in the key, the
connector defect: `kvir probe --checks prefix-isolation` fails on it) or off.
usage.prompt_tokens_details.cached_tokens reports each hit, and the log line
says whose cached blocks it read."""
OFF = "off"


class CacheTarget:
    """One server's prefix cache (None when off): a request the prefill really computed is admitted once
    answered (the 1-token stub is not); what it got from the cache goes into its record."""

    logged = ("cached_tokens", "cache_read_from")

    def __init__(self, mode: str, blocks: int | None, cfg: ServeConfig):
        self.mode, self.cache = mode, None
        if mode != OFF:
            from kvir.replay.block_cache import PrefixCache

            self.cache = PrefixCache(cfg.page_size, blocks or cfg.pool // cfg.page_size, mode)

    def policy(self) -> Any:
        return None

    def served(self, req: Served) -> dict[str, Any]:
        if self.cache is None or req.http_status != 200 or req.prefill_tokens != len(req.tokens):
            return {"cached_tokens": 0, "cache_read_from": {}, "cache_sources": []}
        hit = self.cache.admit(req.rid, req.tenant, req.tokens, req.salt)
        return {"cached_tokens": hit.cached_tokens, "cache_read_from": dict(hit.read_from),
                "cache_sources": [r for r in hit.source_requests if r != req.rid]}

    def usage(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        if self.cache is None:                      # vLLM reports details with --enable-prompt-tokens-details
            return {}
        return {"prompt_tokens_details": {"cached_tokens": fields["cached_tokens"]}}

    def server_info(self) -> dict[str, Any]:
        return {"disable_radix_cache": self.cache is None}

    def describe(self) -> dict[str, Any]:
        return {"prefix_cache": self.mode}

    def banner(self) -> str:
        return f"prefix cache {self.mode}"


class PrefixCacheServe:
    options = (
        ServeOption("prefix_cache", OFF, "off, salted (cache_salt in the block keys) or unsalted (the salt left out: "
                    "blocks shared across tenants)."),
        ServeOption("prefix_cache_blocks", None, "Prefix-cache capacity in blocks of --page-size tokens (default: the "
                    "pool's pages); least recently used evicted first.", type=int),
    )
    help = HELP

    def check(self, values: Mapping[str, Any]) -> None:
        from kvir.replay.block_cache import KEYINGS

        modes = (OFF, *KEYINGS)
        if values["prefix_cache"] not in modes:
            raise KvirError(f"--prefix-cache must be one of {', '.join(modes)}, not {values['prefix_cache']!r}")
        blocks = values["prefix_cache_blocks"]
        if blocks is not None and (isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1):
            raise KvirError("--prefix-cache-blocks must be at least 1")

    def target(self, values: Mapping[str, Any], cfg: ServeConfig) -> CacheTarget:
        return CacheTarget(values["prefix_cache"], values["prefix_cache_blocks"], cfg)


PART = PrefixCacheServe()
