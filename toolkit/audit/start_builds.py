"""The build of every SGLang node start, from kvir.rules.builds (the wheels' facts): an exact version when
something names one (/server_info, a version line, the inventory), else the range of published builds
the start-up log allows (the settings dump's shape and fields, lines only later builds print). Each
start gets what that build does with an over-long prompt in PD mode, and the evidence that fixed it.

Runs over node_configs rows (one per node start, not per log line) and writes back through
queries/audit/node_builds.sql.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from kvir.core.sql import QueryLog, run
from kvir.rules.builds import TABLE, BuildRange, normalise, version_key
from kvir.rules.vllm import VLLM

# audit line kinds -> builds.toml [[log_line]] kinds (lines that place a build)
LINE_KINDS = {"pool_warning": "pool-below-context", "kv-checksum-skipped": "kv-checksum-skipped",
              "kv-checksum-mismatch": "kv-checksum-mismatch", "canary-stats": "canary-stats",
              "kv-canary-violation": "kv-canary-violation", "canary-installed": "canary-installed"}
COLUMNS = ["config_id", "build", "build_lo", "build_hi", "build_open", "build_evidence", "over_long_outcome",
           "stub_transferred", "build_note", "deferred_release_default", "batch_cap_default", "missing_more"]
DEFERRED = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"
BATCH_CAP = "SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES"


def field_names() -> list[str]:
    """The ServerArgs fields that place a build (bound into node_configs.sql as $build_fields)."""
    return sorted(TABLE.fields)


def infer_start(r: dict[str, Any]) -> dict[str, Any]:
    """Build columns of one node_configs row (see COLUMNS)."""
    out: dict[str, Any] = {c: None for c in COLUMNS}
    out["config_id"] = r["config_id"]
    if r["engine"] != "sglang":
        out["build"] = r["version"]
        out["build_evidence"] = r["version_source"]
        if r["engine"] == "vllm" and r["version"]:
            out.update(_vllm_release(r["version"], set(r["line_kinds"] or []), bool(r["refused"])))
        return out
    rng = _dump_range(r)
    inferred = "inferred from the start-up log: " + "; ".join(rng.evidence) if rng.evidence else None
    exact = normalise(r["version"]) if r["version"] else None
    if exact:
        notes = _exact_build(out, exact, r["version_source"], rng, inferred)
    elif rng.known:
        notes = _range_build(out, rng, inferred)
    else:
        notes = []
        out.update(build="unknown", build_evidence=("no version named and " + (
            "; ".join(rng.evidence) if rng.evidence else "no settings dump or build-specific line in the start-up log")))
    out["build_note"] = "; ".join(notes) or None
    if out["build_lo"] is not None:
        used = BuildRange(out["build_lo"], out["build_hi"], bool(out["build_open"]))
        out["deferred_release_default"] = TABLE.env_default_of(DEFERRED, used)
        out["batch_cap_default"] = TABLE.env_default_of(BATCH_CAP, used)
    return out


def _dump_range(r: dict[str, Any]) -> BuildRange:
    """The SGLang builds the start-up log allows: the settings dump's shape and fields, build-specific lines."""
    has_dump = r["server_args_line"] is not None and r["server_args_shape"] is not None
    lines = [LINE_KINDS[k] for k in (r["line_kinds"] or []) if k in LINE_KINDS]
    shape = r["server_args_shape"] if has_dump else None
    if shape == "dict" and r["server_args_truncated"]:
        shape = ("dict", "dict-redacted")          # the redacted watermark keys may lie past the cut
    return TABLE.infer(shape=shape,
                       keys=r["dump_markers"] if has_dump else None,
                       complete=has_dump and not r["server_args_truncated"]
                       and (r["dump_keys"] or 0) >= TABLE.fewest_dump_fields, lines=lines)


def _exact_build(out: dict[str, Any], exact: str, source: str, rng: BuildRange, inferred: str | None) -> list[str]:
    """A named version: its row of the build table (the nearest read when it is older or newer); the notes."""
    notes: list[str] = []
    out.update(build=exact, build_lo=exact, build_hi=exact, build_open=False,
               build_evidence=f"version {exact} from {source}")
    if rng.known and not _inside(exact, rng):
        notes.append(f"the start-up log says {rng.text} ({inferred}), which does not include {exact}")
    row = TABLE.over_long(exact)
    if row is None and version_key(exact) < version_key(TABLE.read[0]):
        row = TABLE.over_long_rows[0]
        notes.append(f"{exact} is older than every build read ({TABLE.read[0]}); the first build that does not "
                     f"transfer the stub is {TABLE.first_fixed}, so it is taken to behave like {row.label}")
    elif row is not None and TABLE.assumed(exact):
        notes.append(f"{exact} is not among the builds read ({TABLE.read[0]} to {TABLE.newest_read}); taken to "
                     f"behave like {row.label}")
    if row is not None:
        out.update(over_long_outcome=row.outcome, stub_transferred=bool(row.transferred))
    return notes


def _range_build(out: dict[str, Any], rng: BuildRange, inferred: str | None) -> list[str]:
    """A range of builds: what they do with the over-long stub when they agree (None when not); the notes."""
    notes: list[str] = []
    out.update(build=rng.text, build_lo=rng.lo, build_hi=rng.hi, build_open=rng.open, build_evidence=inferred)
    outs = TABLE.outcomes(rng)
    rows = [row for row in TABLE.over_long_rows if row.outcome in outs]
    out["over_long_outcome"] = rows[0].outcome if len(rows) == 1 else " or ".join(r_.outcome for r_ in rows)
    tr = {bool(row.transferred) for row in rows}
    out["stub_transferred"] = tr.pop() if len(tr) == 1 else None
    if rng.open:
        notes.append(f"builds after {TABLE.newest_read} are taken to behave like {TABLE.newest_read}")
    if len(tr) > 1 or len(rows) > 1 and out["stub_transferred"] is None:
        notes.append(f"the range spans builds that transfer the stub and builds that do not (first not "
                     f"transferring: {TABLE.first_fixed})")
    return notes


def _vllm_release(version: str, seen: set[str], refused: bool) -> dict[str, Any]:
    """What kvir.rules.vllm (the releases' own code) says a vLLM start of `version` prints and the evidence
    lacks: a note, and the items for node_configs.missing (a refused start prints no pool line)."""
    notes = []
    if version_key(version) is not None and version_key(version) > version_key(VLLM.newest_read):
        notes.append(f"vLLM {version} is newer than the newest release read ({VLLM.newest_read}): its lines are "
                     f"taken to be {VLLM.newest_read}'s")
    lacks = [] if refused else VLLM.missing_startup(version, seen)
    if lacks:
        notes.append(f"vLLM {version} prints {' and '.join(lacks)}; not in this start's evidence")
    return {"build_note": "; ".join(notes) or None, "missing_more": lacks or None}


def _inside(v: str, rng: BuildRange) -> bool:
    k = version_key(v)
    if k < version_key(rng.lo):
        return False
    return rng.open and k > version_key(TABLE.newest_read) or k <= version_key(rng.hi)


def fill_builds(con, log: QueryLog) -> None:
    """Infer every start's build and write it into node_configs."""
    cur = con.execute("SELECT config_id, engine, version, version_source, server_args_shape, dump_markers, "
                      "dump_keys, server_args_truncated, server_args_line, line_kinds, refused FROM node_configs")
    names = [d[0] for d in cur.description]
    rows = [infer_start(dict(zip(names, t))) for t in cur.fetchall()]
    types = {"config_id": pa.int64(), "build_open": pa.bool_(), "stub_transferred": pa.bool_(),
             "missing_more": pa.list_(pa.string())}
    table = pa.table({c: pa.array([r[c] for r in rows], types.get(c, pa.string())) for c in COLUMNS})
    con.register("audit_builds_rows", table)
    try:
        run(con, "audit/node_builds", inputs={"rows": "audit_builds_rows"}, log=log)
    finally:
        con.unregister("audit_builds_rows")
