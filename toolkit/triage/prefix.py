"""Transitional (issue 30): the report's prefix-cache story still imports the rule's wording from here; the
rule lives in its mechanism's triage part now. This module goes when the report's part has moved."""
from kvir.mechanisms.prefix_cache.triage import PrefixCacheRule

__all__ = ["PrefixCacheRule"]
