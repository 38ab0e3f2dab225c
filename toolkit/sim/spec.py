"""The reference incident's spec, written once: `kvir simulate` writes it beside the fleet's logs and the tests
import it (tests/conftest.py, tests/report/fleet.py). Its facts (model names, window, pool, context, the engine
defect with the provider's statement of the fix) are the demo's and nobody else's: kvir never applies them to
another case (tests/foreign/ checks every document of foreign cases for them)."""
from __future__ import annotations

from kvir.sim.world import CONTEXT, DECLARED, ENGINE_MODEL, GW_MODEL, POOL_BUG, WINDOW_END, WINDOW_START


def _z(t) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


ID = "KVIR-2026-0001"
TITLE = "Cross-tenant KV cache exposure on GLM-5.3"

# [incident] and [trigger]: the minimal reference spec (README "The incident spec" shows the same)
HEADER = f'''[incident]
id = "{ID}"
title = "{TITLE}"
models = ["{GW_MODEL}", "{ENGINE_MODEL}"]   # aliases of one model
window_start = {_z(WINDOW_START)}                      # inclusive
window_end = {_z(WINDOW_END)}                        # inclusive
[trigger]
pool_tokens = {POOL_BUG}
context_tokens = {CONTEXT}
rule = "{{rule}}"                                          # or "engine"
'''

AWARENESS = f"awareness_time = {_z(DECLARED)}\n"

# The engine defect as the provider's post-incident report (2026-10-26) states it; the reports quote kvir's
# SGLang build table beside it where the two differ (the code's first fixed build is 0.5.20).
DEFECT = '''[defect]
package = "sglang"
vendor = "sgl-project"
repo = "https://github.com/sgl-project/sglang"
title = "sglang: a prompt that does not fit the KV pool is served from another request's KV cache"
description = "When a request's prompt does not fit the prefill KV pool (possible whenever the configured context length is larger than the pool), the scheduler replaces it by a one-token placeholder instead of aborting it. With prefill/decode disaggregation the rejected request is not aborted on the decode side: decode reads KV pages that were never written for this request, which hold another request's data, and the client receives HTTP 200 with a response derived from that data instead of HTTP 400."
introduced_version = "0"
fixed_version = "0.5.22"
fixed_release_date = "2026-10-19"
fixed_source = "the provider's post-incident report, 2026-10-26 (v0.5.21 2026-10-02, v0.5.22 2026-10-19)"
cwe = "CWE-488"
workaround = "On every prefill and decode node, compare the KV pool size (max_total_num_tokens) with the context length in the start-up log after any change of weights, quantisation, parallelism or memory settings, and set --context-length no larger than the pool; enable --disaggregation-enable-kv-checksum and --kv-canary and check that requests are verified; enable deferred KV release and cap the Mooncake transfer batch count. Do not rely on proxy limits."
'''


def minimal(rule: str = "public") -> str:
    """The minimal reference spec ([incident] and [trigger] only)."""
    return HEADER.replace("{rule}", rule)


def header(rule: str = "public", awareness: bool = True, engine: str | None = None) -> str:
    """[incident] (with awareness_time) and [trigger]; `engine` declares [trigger] engine (for inputs that do not
    name it themselves, as the simulator's Parquet requests do not)."""
    text = minimal(rule)
    if engine:
        text = text.replace(f'rule = "{rule}"', f'rule = "{rule}"\nengine = "{engine}"                                       # the requests Parquet names no engine', 1)
    return text.replace("[trigger]", AWARENESS + "[trigger]", 1) if awareness else text
