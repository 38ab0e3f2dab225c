"""What the server says about itself: SGLang's /get_server_info (or /server_info), vLLM's /v1/models and
/version. Only named fields are read (the info endpoint dumps every server argument, API keys included:
their presence is reported, their values never kept).

The limit a prompt must stay under is the engine's own rule:
    sglang  max_req_input_len (from the server, else min(context - 1, pool - 1) - 5, kvir.rules.trigger)
    vllm    max_model_len: a prompt must leave room for one output token
    other   the context or the pool, whichever is smaller; SGLang's limit, when computable, marks the
            lengths in between as "either" (served or refused are both correct there)

and the boundary set (`boundary_lengths`) is the prompt lengths around it where the engine must switch
from serving to refusing: what the plan shows, and what the checks that send at the limit send.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kvir.probe.config import ProbeOptions
from kvir.probe.http import Client
from kvir.rules.engines import ENGINES, FORMULA, max_req_input_len

SECRET_KEYS = ("api_key", "admin_api_key", "hf_token", "aws_secret_access_key")
FLAG_KEYS = ("allow_auto_truncate", "disaggregation_enable_kv_checksum", "kv_canary", "disable_radix_cache",
             "enable_prefix_caching", "page_size", "disaggregation_transfer_backend", "tp_size", "dp_size")


@dataclass
class ServerFacts:
    engine: str = "unknown"
    engine_source: str = ""
    version: str | None = None
    models: list[str] = field(default_factory=list)
    context: int | None = None
    context_source: str = ""
    pool: int | None = None
    pool_source: str = ""
    max_req_input_len: int | None = None
    mril_source: str = ""
    pd_mode: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    answered: dict[str, int | None] = field(default_factory=dict)   # discovery path -> status
    failures: dict[str, str] = field(default_factory=dict)           # discovery path -> why no HTTP answer
    unusable: bool = False         # a discovery request got an HTTP answer too big or endless to read
    secrets_exposed: list[str] = field(default_factory=list)          # field names only
    notes: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ the limit
    def limits(self, engine: str = "auto") -> tuple[int | None, int | None, str]:
        """(accept_below, reject_from, rule): prompts under accept_below must be served, prompts of
        reject_from tokens or more refused; in between (engine unknown) either is right."""
        eng = self.engine if engine == "auto" else engine
        sg = self.max_req_input_len
        sg_rule = f"SGLang max_req_input_len {sg:,} ({self.mril_source})" if sg is not None else ""
        if sg is None and (self.context is not None or self.pool is not None):
            sg = max_req_input_len(self.context, self.pool)
            sg_rule = f"SGLang max_req_input_len = {FORMULA} = {sg:,}"
        if eng == "sglang":
            return (sg, sg, sg_rule) if sg is not None else (None, None, "unknown: give --context (and --pool)")
        if eng == "vllm":
            limit = ENGINES["vllm"].limit(self.context, self.pool)
            if limit is None:
                return None, None, "unknown: give --context (vLLM's max_model_len)"
            return limit, limit, f"vLLM: prompt + 1 output token <= max_model_len {limit:,}"
        known = [x for x in (self.context, self.pool) if x is not None]
        if not known:
            return None, None, "unknown: give --context (and --pool)"
        hard = min(known)
        low = min(sg, hard) if sg is not None else hard
        return low, hard, (f"engine unknown: refused from min(context, pool) = {hard:,}; "
                           f"between {low:,} and {hard:,} either outcome is right (SGLang refuses from {low:,})")

    @property
    def unreachable(self) -> str | None:
        """Why the endpoint gave no HTTP answer at all during discovery (the first failure), else None."""
        if self.unusable or not self.answered or any(s is not None for s in self.answered.values()):
            return None
        path, why = next(iter(self.failures.items()), ("", "no answer"))
        return f"{why}, on GET {path}" if path else why

    def as_json(self) -> dict:
        return {"engine": self.engine, "engine_source": self.engine_source, "version": self.version,
                "models": self.models, "context": self.context, "context_source": self.context_source,
                "pool": self.pool, "pool_source": self.pool_source, "max_req_input_len": self.max_req_input_len,
                "max_req_input_len_source": self.mril_source, "pd_mode": self.pd_mode, "flags": self.flags,
                "answered": self.answered, "failures": self.failures, "unreachable": self.unreachable,
                "secrets_exposed": self.secrets_exposed, "notes": self.notes}


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if v > 0 else None
    if isinstance(v, str) and v.strip().isdigit():
        return int(v) or None
    return None


def _nodes(js: Any, role: str | None = None, depth: int = 0) -> list[tuple[str | None, dict]]:
    """Every dict in an info document that describes a server (its own keys), with a role hint from
    the path (a router's "prefill"/"decode" lists)."""
    out: list[tuple[str | None, dict]] = []
    if depth > 4:
        return out
    if isinstance(js, dict):
        mode = js.get("disaggregation_mode")
        own = role or (mode if mode in ("prefill", "decode") else None)
        out.append((own, js))
        for k, v in js.items():
            if k in ("prefill", "decode", "prefill_servers", "decode_servers", "internal_states", "servers", "workers"):
                hint = "prefill" if k.startswith("prefill") else "decode" if k.startswith("decode") else own
                out.extend(_nodes(v, hint, depth + 1))
    elif isinstance(js, list):
        for v in js:
            out.extend(_nodes(v, role, depth + 1))
    return out


def parse_server_info(js: Any, facts: ServerFacts, path: str) -> None:
    """SGLang's info document (one server, or a router's view of several) into facts."""
    nodes = _nodes(js)
    if not nodes:
        return
    facts.engine, facts.engine_source = "sglang", f"{path} answered"
    pools, prefill_pools, contexts, mrils = [], [], [], []
    for role, d in nodes:
        p = _int(d.get("max_total_num_tokens"))
        if p:
            pools.append(p)
            if role != "decode":
                prefill_pools.append(p)
        c = _int(d.get("context_length")) or _int(d.get("context_len")) or _int(d.get("max_model_len"))
        if c:
            contexts.append(c)
        m = _int(d.get("max_req_input_len"))
        if m and role != "decode":
            mrils.append(m)
        for k in SECRET_KEYS:
            if isinstance(d.get(k), str) and d[k] and k not in facts.secrets_exposed:
                facts.secrets_exposed.append(k)
        for k in FLAG_KEYS:
            if k in d and k not in facts.flags and isinstance(d[k], (str, int, float, bool)):
                facts.flags[k] = d[k]
        if isinstance(d.get("disaggregation_mode"), str) and facts.pd_mode in (None, "null"):
            facts.pd_mode = d["disaggregation_mode"]
        if isinstance(d.get("version"), str) and not facts.version:
            facts.version = d["version"]
    use = prefill_pools or pools
    if use:
        facts.pool, facts.pool_source = min(use), f"{path} max_total_num_tokens" + (" (smallest prefill pool)" if len(use) > 1 else "")
    if contexts:
        facts.context, facts.context_source = max(contexts), f"{path} context_length"
    if mrils:
        facts.max_req_input_len, facts.mril_source = min(mrils), f"{path} max_req_input_len"


def parse_models(js: Any, facts: ServerFacts) -> None:
    data = js.get("data") if isinstance(js, dict) else None
    for m in data or []:
        if not isinstance(m, dict) or not isinstance(m.get("id"), str):
            continue
        facts.models.append(m["id"])
        mml = _int(m.get("max_model_len"))
        if mml and facts.context is None:
            facts.context, facts.context_source = mml, "/v1/models max_model_len"
        if m.get("owned_by") == "vllm" and facts.engine == "unknown":
            facts.engine, facts.engine_source = "vllm", "/v1/models owned_by vllm"


async def discover(client: Client, opts: ProbeOptions) -> ServerFacts:
    """At most four GETs; then --pool / --context fill what the server did not say. When the first one
    cannot even connect (refused, DNS, TLS, connect timeout) the others are not sent: they would fail alike."""
    facts = ServerFacts()

    async def get(path: str, **kw) -> Any:
        rep = await client.call("GET", path, retry=False, **kw)
        facts.answered[path] = rep.status
        facts.unusable |= rep.unusable
        if rep.status is None:
            facts.failures[path] = rep.error or "no answer"
        return rep

    for path in ("/get_server_info", "/server_info"):
        rep = await get(path)
        if not rep.reached:
            apply_options(facts, opts)
            return facts
        if rep.ok and isinstance(rep.body, dict):
            parse_server_info(rep.body, facts, path)
            break
    rep = await get("/v1/models", tenant=opts.tenant_a)
    if rep.ok:
        parse_models(rep.body, facts)
    if facts.engine != "sglang":
        rep = await get("/version")
        if rep.ok and isinstance(rep.body, dict) and isinstance(rep.body.get("version"), str):
            facts.version = rep.body["version"]
            if facts.engine == "unknown" and re.match(r"^\d+\.\d+", facts.version) and facts.models:
                facts.engine, facts.engine_source = "vllm", "/version and /v1/models (vLLM's routes)"
    apply_options(facts, opts)
    return facts


def apply_options(facts: ServerFacts, opts: ProbeOptions) -> None:
    for name, given in (("pool", opts.pool), ("context", opts.context)):
        if given is None:
            continue
        have = getattr(facts, name)
        if have is None:
            setattr(facts, name, given)
            setattr(facts, f"{name}_source", f"--{name}")
        elif have != given:
            facts.notes.append(f"--{name} {given:,} differs from what the server says ({have:,}, "
                               f"{getattr(facts, name + '_source')}): the server's value is used")
    if opts.engine != "auto":
        facts.notes.append(f"length rule of {opts.engine} (--engine), the server looked like {facts.engine}")


def boundary_lengths(facts: ServerFacts, engine: str = "auto") -> tuple[list[tuple[str, int]], list[str]]:
    """[(label, tokens)] sorted by length, duplicates merged; and notes on lengths left out. `engine`: auto
    (what the server said it is), sglang, vllm or any other name (an unknown engine)."""
    ctx, pool = facts.context, facts.pool
    eng = facts.engine if engine == "auto" else engine
    cand: list[tuple[str, int]] = []
    if eng == "sglang":
        mril = facts.max_req_input_len
        if mril is None and (ctx is not None or pool is not None):
            mril = max_req_input_len(ctx, pool)
        if mril is not None:
            cand += [("max_req_input_len - 1", mril - 1), ("max_req_input_len", mril),
                     ("max_req_input_len + 1", mril + 1)]
        if pool is not None:
            cand.append(("pool", pool))
    elif eng == "vllm":
        if ctx is not None:
            cand.append(("context - 2", ctx - 2))
    elif pool is not None:
        cand += [("pool - 1", pool - 1), ("pool", pool), ("pool + 1", pool + 1)]
    if ctx is not None:
        cand += [("context - 1", ctx - 1), ("context", ctx), ("context + 1", ctx + 1)]
    notes, merged = [], {}
    for label, n in cand:
        if n < 2:
            notes.append(f"{label} ({n}) is too short to send")
            continue
        if ctx is not None and n > ctx + 1:
            notes.append(f"{label} ({n:,}) is over context + 1: the context check refuses it as it does context + 1")
            continue
        merged.setdefault(n, []).append(label)
    return [(" = ".join(v), n) for n, v in sorted(merged.items())], notes
