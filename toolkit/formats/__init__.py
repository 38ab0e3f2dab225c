"""The request-log formats kvir reads: one entry here plus one SQL adapter in queries/adapters/.

Adding a format = writing queries/adapters/<name>.sql (a SELECT from __input__ and __settings__
producing the columns of RECORD_COLUMNS) and registering a Format with a sniffing rule below.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

# What every adapter produces, one row per input line or record (tests check each adapter).
RECORD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source_id", "INTEGER"),
    ("source_line", "BIGINT"),
    ("kind", "VARCHAR"),           # request | skip | bad
    ("reason", "VARCHAR"),         # why skipped / why quarantined
    ("request_id", "VARCHAR"),
    ("bootstrap_room", "VARCHAR"),
    ("ts", "TIMESTAMPTZ"),         # request start, UTC
    ("ts_end", "TIMESTAMPTZ"),
    ("ts_granularity_s", "INTEGER"),  # 0 exact; 3600 when only the hour is known
    ("account_id", "VARCHAR"),
    ("model", "VARCHAR"),
    ("prompt_tokens", "BIGINT"),
    ("cached_tokens", "BIGINT"),
    ("completion_tokens", "BIGINT"),
    ("http_status", "INTEGER"),
    ("outcome", "VARCHAR"),        # served | rejected | failed | aborted | NULL (unknown)
    ("finish_reason", "VARCHAR"),
    ("role", "VARCHAR"),           # prefill | decode | mixed | gateway | NULL
    ("node", "VARCHAR"),           # the node whose log this is
    ("prefill_node", "VARCHAR"),
    ("decode_node", "VARCHAR"),
    ("prefill_tokens", "BIGINT"),
    ("raw", "VARCHAR"),            # the raw line: only for quarantined lines, only with --keep-raw
)
RECORD_COLUMN_NAMES = tuple(c for c, _ in RECORD_COLUMNS)

Sniffer = Callable[[Path, list[str]], int]


@dataclass(frozen=True)
class Format:
    name: str
    title: str
    adapter: str                  # query name under queries/
    reader: str                   # lines | json-records | csv-mapped | jsonl-mapped | parquet-mapped
    times: str                    # how its times are written (shown by `kvir formats`)
    needs: tuple[str, ...] = ()   # options that must be given: source_tz, columns, year
    evidence: str = "counts"      # counts: has prompt tokens; candidates: cannot say how long a prompt was
    names_customers: bool = False
    names_model: bool = True      # False: engine logs, model comes from server_args / --served-model / spec
    sniff: Sniffer | None = None
    notes: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)


def _first_json(lines: list[str]) -> dict | None:
    for line in lines:
        s = line.strip()
        if not s:
            continue
        try:
            v = json.loads(s)
        except ValueError:
            return None
        return v if isinstance(v, dict) else None
    return None


def _sniff_sglang_json(path: Path, head: list[str]) -> int:
    v = _first_json(head)
    if v and str(v.get("event", "")).startswith("request.") and ("rid" in v or "obj" in v):
        return 95
    return 0


_SGLANG_TEXT = re.compile(r"(Finish|Receive): obj=|server_args=ServerArgs\(")


def _sniff_sglang_text(path: Path, head: list[str]) -> int:
    hits = sum(1 for line in head if _SGLANG_TEXT.search(line))
    return 90 if hits else 0


def _sniff_cf_gateway(path: Path, head: list[str]) -> int:
    text = "\n".join(head[:5]).lstrip()
    if text.startswith("{") and '"result"' in text[:2000] and ('"tokens_in"' in text or '"created_at"' in text):
        return 90
    v = _first_json(head)
    if v and "tokens_in" in v and "created_at" in v:
        return 85
    return 0


def _sniff_generic(suffixes: tuple[str, ...]) -> Sniffer:
    # Generic formats are chosen only when a column mapping is given; sniffing ranks them last.
    def sniff(path: Path, head: list[str]) -> int:
        name = path.name.lower()
        for s in (".gz", ".zst", ".zstd"):
            if name.endswith(s):
                name = name[: -len(s)]
        return 5 if name.endswith(suffixes) else 0
    return sniff


FORMATS: dict[str, Format] = {}


def register(f: Format) -> Format:
    FORMATS[f.name] = f
    return f


register(Format(
    name="sglang-json", title="SGLang request log, JSON (--log-requests-format json)",
    adapter="adapters/sglang_json", reader="lines",
    times="naive host-local ISO-8601 (datetime.now().isoformat())", needs=("source_tz",),
    names_model=False, sniff=_sniff_sglang_json,
    notes="request.finished lines are requests (start = timestamp - e2e_latency); request.received lines are not."))
register(Format(
    name="sglang-text", title="SGLang request log, text (Finish: obj=... out={'meta_info': ...})",
    adapter="adapters/sglang_text", reader="lines",
    times="naive host-local '[YYYY-MM-DD HH:MM:SS <rank tags>]' prefix", needs=("source_tz",),
    names_model=False, sniff=_sniff_sglang_text,
    notes="Finish lines are requests; Receive lines and other server lines are counted, not requests."))
register(Format(
    name="cloudflare-gateway", title="Cloudflare AI Gateway logs (REST API JSON pages or NDJSON of log objects)",
    adapter="adapters/cloudflare_gateway", reader="json-records",
    times="RFC 3339 UTC (created_at)", names_customers=True, sniff=_sniff_cf_gateway,
    notes="customer identity from metadata (a JSON string): customer_id, account_id, user_id or user."))
register(Format(
    name="generic-csv", title="Any CSV with a header, columns mapped in incident.toml [sources.columns]",
    adapter="adapters/generic", reader="csv-mapped", times="any: offsets, naive (needs --source-tz) or epoch",
    needs=("columns",), sniff=_sniff_generic((".csv", ".tsv"))))
register(Format(
    name="generic-jsonl", title="Any JSON Lines file, fields mapped in incident.toml [sources.columns]",
    adapter="adapters/generic", reader="jsonl-mapped", times="any: offsets, naive (needs --source-tz) or epoch",
    needs=("columns",), sniff=_sniff_generic((".jsonl", ".ndjson", ".json"))))
register(Format(
    name="generic-parquet", title="Parquet files or hive-partitioned folders, columns mapped in [sources.columns]",
    adapter="adapters/generic", reader="parquet-mapped", times="TIMESTAMP WITH TIME ZONE, or as generic-csv",
    needs=("columns",), sniff=_sniff_generic((".parquet", ".pq")),
    notes="queried in place through a view: rows are never copied into the case."))


def get(name: str) -> Format:
    from ..errors import InputError

    if name not in FORMATS:
        raise InputError(f"unknown format {name!r}; known formats: {', '.join(sorted(FORMATS))}")
    return FORMATS[name]
