"""Small cases for kvir confirm, built as a user builds them: one JSON Lines log holding each request's
metadata and, beside it, the prompt and response text a gateway kept; `kvir triage` over the metadata
(an oversized-prompt incident: prompts over a 4,096-token pool are affected), then `kvir confirm` over the
same file with --map. The expected verdicts follow from how each record is built (by the tests)."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import kvir

POOL = 4096
SPEC = """[incident]
id = "CONFIRM-T"
title = "content confirmation test"
models = ["m"]
window_start = 2026-08-28T00:00:00Z
window_end = 2026-08-29T00:00:00Z
[trigger]
pool_tokens = 4096
context_tokens = 8192
rule = "public"
[[sources]]
path = "{log}"
format = "generic-jsonl"
[sources.columns]
request_id = "request_id"
ts = "ts"
account_id = "account_id"
model = "model"
prompt_tokens = "prompt_tokens"
completion_tokens = "completion_tokens"
http_status = "http_status"
finish_reason = "finish_reason"
decode_node = "node"
"""
MAPS = {"request_id": ["request_id"], "prompt": ["prompt"], "response": ["response"]}

_SYLLABLES = ("ka", "lo", "vi", "dre", "mun", "sa", "tor", "pel", "qui", "zan", "ob", "er", "fy", "gha", "wu")


def words(seed: int, n: int) -> str:
    """Text no other test text shares a long span with: made-up words with digits (seeded)."""
    r = random.Random(seed)
    return " ".join("".join(r.choice(_SYLLABLES) for _ in range(r.randint(1, 3))) + str(r.randint(0, 999))
                    for _ in range(n))


@dataclass
class Req:
    request_id: str
    second: int                   # seconds after 10:00:00 on 2026-08-28 (UTC)
    tenant: str | None
    prompt: str | None = None
    response: str | None = None
    over_pool: bool = False       # an affected response (prompt over the pool)
    node: str | None = "d0"
    extra: dict = field(default_factory=dict)

    def record(self) -> dict:
        rec = {"request_id": self.request_id, "ts": f"2026-08-28T10:{self.second // 60:02d}:{self.second % 60:02d}Z",
               "model": "m", "prompt_tokens": 5000 if self.over_pool else 600, "completion_tokens": 40,
               "http_status": 200, "finish_reason": "length"}
        if self.tenant is not None:
            rec["account_id"] = self.tenant
        if self.node is not None:
            rec["node"] = self.node
        if self.prompt is not None:
            rec["prompt"] = self.prompt
        if self.response is not None:
            rec["response"] = self.response
        return {**rec, **self.extra}


def write_log(path: Path, reqs: list[Req], extra_lines: list[str] = ()) -> Path:
    with open(path, "w") as f:
        for r in reqs:
            f.write(json.dumps(r.record()) + "\n")
        for line in extra_lines:
            f.write(line + "\n")
    return path


def triaged(tmp: Path, reqs: list[Req], extra_lines: list[str] = ()) -> tuple[Path, Path]:
    """(case folder, log) after `kvir triage`."""
    tmp.mkdir(parents=True, exist_ok=True)
    log = write_log(tmp / "logs.jsonl", reqs, extra_lines)
    (tmp / "incident.toml").write_text(SPEC.format(log=log))
    r = kvir.triage(tmp / "incident.toml", out=tmp / "case")
    r.case.close()
    return tmp / "case", log


def confirmed(tmp: Path, reqs: list[Req], **options):
    from kvir.confirm.run import ConfirmOptions, confirm

    case, log = triaged(tmp, reqs, options.pop("extra_lines", ()))
    return confirm(case, [log], ConfirmOptions(key=tmp / "confirm.key", maps=MAPS, **options))


def verdicts(result) -> dict[str, str]:
    c = result.confirmations
    return dict(zip(c["request_id"], c["verdict"]))
