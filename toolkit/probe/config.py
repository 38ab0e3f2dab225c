"""What a probe run is told: the endpoint, the tenants, which checks (the registered mechanisms' check names,
kvir.probe.rules.checks), and the limits on what it may send.

Secrets never come on the command line: API keys are read from environment variables (`api_key_env`,
`tenant_b_key_env`, `header_env`); only the variables' names and a SHA-256 prefix of each key are shown.
"""
from __future__ import annotations

import hashlib
import os
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from kvir.core.errors import KvirError
from kvir.probe.rules import checks as registered_checks, default_checks

SALT_MODES = ("none", "per-tenant")
ENGINES = ("auto", "sglang", "vllm", "other")
APIS = ("completions", "chat")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")


def fingerprint(secret: str) -> str:
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Tenant:
    """One side of the cross-tenant checks: its own API key (from an environment variable) and/or `user`."""

    label: str
    user: str
    key_env: str | None = None

    @property
    def key(self) -> str | None:
        return os.environ.get(self.key_env) if self.key_env else None

    @property
    def key_fingerprint(self) -> str | None:
        k = self.key
        return fingerprint(k) if k else None

    def headers(self) -> dict[str, str]:
        k = self.key
        return {"Authorization": f"Bearer {k}"} if k else {}

    def describe(self) -> dict:
        return {"label": self.label, "user": self.user, "key_env": self.key_env, "key": self.key_fingerprint}


@dataclass
class ProbeOptions:
    endpoint: str
    model: str | None = None
    pool: int | None = None                  # what the server does not say
    context: int | None = None
    engine: str = "auto"                     # whose length rule applies: auto (from the server), sglang, vllm, other
    api: str = "completions"                 # or chat (/v1/chat/completions)
    headers: tuple[str, ...] = ()            # "Name: value" (gateway headers; values never printed)
    header_env: tuple[str, ...] = ()         # "Name=VAR": header value from an environment variable
    api_key_env: str | None = None           # tenant A's key (and B's unless tenant_b_key_env)
    tenant_b_key_env: str | None = None
    checks: tuple[str, ...] = field(default_factory=default_checks)   # the mechanisms' check names
    tokenizer: str | None = None             # a local tokenizer.json instead of the server's /tokenize
    max_tokens: int = 8                      # output tokens of the boundary prompts
    canary_max_tokens: int = 48              # output tokens of tenant B's over-limit prompts (what is scanned)
    canary_rounds: int = 2
    canaries_per_round: int = 2
    plant_tokens: int = 256
    fragment_chars: int = 12                 # shortest canary fragment counted (n-gram length)
    timing_pairs: int = 8
    timing_tokens: int = 512
    prefix_tokens: int = 512                 # the prefix-isolation prompts (at most half the engine's limit)
    prefix_rounds: int = 2
    cache_salt: str = "none"                 # none: send no cache_salt; per-tenant: a fresh salt per tenant
    alpha: float = 0.01
    max_requests: int = 200                  # every HTTP attempt counts, retries included
    concurrency: int = 4
    timeout_s: float = 120.0                 # per attempt
    retries: int = 2
    backoff_s: float = 0.5
    max_retry_after_s: float = 60.0
    deadline_s: float = 900.0                # the whole run
    dry_run: bool = False
    progress: bool = True
    case: Path | None = None
    seed: int | None = None                  # order of the timing pairs (canaries are always random)
    tenant_a: Tenant = field(init=False)
    tenant_b: Tenant = field(init=False)

    def __post_init__(self) -> None:
        self.tenant_a = Tenant("tenant-a", "kvir-probe-tenant-a", self.api_key_env)
        self.tenant_b = Tenant("tenant-b", "kvir-probe-tenant-b", self.tenant_b_key_env or self.api_key_env)

    # ------------------------------------------------------------------ checks of the options
    def validate(self) -> None:
        u = urllib.parse.urlsplit(self.endpoint)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise KvirError(f"--endpoint must be an http(s) URL, not {self.safe_endpoint!r}")
        if u.username or u.password:
            raise KvirError("--endpoint must not carry credentials; use --api-key-env VAR")
        names = [c.name for c in registered_checks()]
        bad = [c for c in self.checks if c not in names]
        if bad or not self.checks:
            raise KvirError(f"--checks takes {', '.join(names)} (comma-separated), not {','.join(bad) or 'nothing'}")
        if self.cache_salt not in SALT_MODES:
            raise KvirError(f"--cache-salt must be one of {', '.join(SALT_MODES)}, not {self.cache_salt!r}")
        if self.engine not in ENGINES:
            raise KvirError(f"--engine must be one of {', '.join(ENGINES)}, not {self.engine!r}")
        if self.api not in APIS:
            raise KvirError(f"--api must be one of {', '.join(APIS)}, not {self.api!r}")
        for name in (self.api_key_env, self.tenant_b_key_env):
            if name and not os.environ.get(name):
                raise KvirError(f"environment variable {name} is not set (or empty)", key="--api-key-env")
        for opt, v, lo in (("--pool", self.pool, 1), ("--context", self.context, 2), ("--max-requests", self.max_requests, 1),
                           ("--concurrency", self.concurrency, 1), ("--max-tokens", self.max_tokens, 1),
                           ("--canary-max-tokens", self.canary_max_tokens, 1), ("--canary-rounds", self.canary_rounds, 1),
                           ("--timing-pairs", self.timing_pairs, 4), ("--retries", self.retries, 0),
                           ("--plant-tokens", self.plant_tokens, 40), ("--canaries-per-round", self.canaries_per_round, 1),
                           ("--prefix-tokens", self.prefix_tokens, 16), ("--prefix-rounds", self.prefix_rounds, 1)):
            if v is not None and v < lo:
                raise KvirError(f"{opt} must be at least {lo}, not {v}")
        if self.timing_pairs > 16:
            raise KvirError("--timing-pairs must be at most 16 (the exact test enumerates 2^n sign flips)")
        if self.fragment_chars < 8:
            raise KvirError("--fragment-chars must be at least 8 (shorter fragments match by chance)")
        for opt, v in (("--timeout", self.timeout_s), ("--deadline", self.deadline_s)):
            if v <= 0:
                raise KvirError(f"{opt} must be positive, not {v}")
        if self.tokenizer and self.api == "chat":
            raise KvirError("--tokenizer cannot apply the server's chat template; use --api completions or the server's /tokenize")
        self.common_headers()

    def secret_values(self) -> list[str]:
        """Every credential this run sends (tenant keys, gateway header values): what no output may show."""
        keys = [t.key for t in (self.tenant_a, self.tenant_b)]
        return [v for v in (*keys, *self.common_headers().values()) if v]

    def common_headers(self) -> dict[str, str]:
        """Gateway headers (no tenant key). Values never leave this dict."""
        out: dict[str, str] = {}
        for h in self.headers:
            name, sep, value = h.partition(":")
            if not sep or not _HEADER_NAME.match(name.strip()):
                raise KvirError(f"--header must look like 'Name: value', not one named {name.strip()[:40]!r}")
            out[name.strip()] = value.strip()
        for h in self.header_env:
            name, sep, var = h.partition("=")
            if not sep or not _HEADER_NAME.match(name.strip()):
                raise KvirError(f"--header-env must look like 'Name=VAR', not {h[:60]!r}")
            value = os.environ.get(var.strip())
            if not value:
                raise KvirError(f"environment variable {var.strip()} is not set (or empty)", key="--header-env")
            out[name.strip()] = value
        return out

    @property
    def safe_endpoint(self) -> str:
        """The endpoint without credentials, query or fragment (what output may show)."""
        u = urllib.parse.urlsplit(self.endpoint)
        host = u.hostname or ""
        if u.port:
            host = f"{host}:{u.port}"
        return urllib.parse.urlunsplit((u.scheme, host, u.path, "", ""))

    @property
    def base_url(self) -> str:
        """The API root without query: a trailing /v1 is dropped (the probe adds /v1/... and the engine's
        own routes such as /tokenize)."""
        u = urllib.parse.urlsplit(self.endpoint)
        path = u.path.rstrip("/")
        path = path[:-3] if path.endswith("/v1") else path
        return urllib.parse.urlunsplit((u.scheme, u.netloc, path, "", ""))

    @property
    def query_params(self) -> list[tuple[str, str]]:
        """A gateway's query parameters, sent with every request (never shown)."""
        return urllib.parse.parse_qsl(urllib.parse.urlsplit(self.endpoint).query, keep_blank_values=True)

    def describe(self) -> dict:
        return {"endpoint": self.safe_endpoint, "model": self.model, "engine": self.engine, "api": self.api,
                "checks": list(self.checks), "cache_salt": self.cache_salt, "header_names": sorted(self.common_headers_names()),
                "tenants": [self.tenant_a.describe(), self.tenant_b.describe()],
                "max_requests": self.max_requests, "concurrency": self.concurrency, "timeout_s": self.timeout_s,
                "retries": self.retries, "deadline_s": self.deadline_s, "pool": self.pool, "context": self.context}

    def common_headers_names(self) -> list[str]:
        return [h.partition(":")[0].strip() for h in self.headers] + [h.partition("=")[0].strip() for h in self.header_env]
