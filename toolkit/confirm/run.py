"""`kvir confirm`: whose text is in an affected response, decided from the prompts and responses the sources
hold, by salted fingerprints (never by keeping the text), and corruption told apart from exposure.

    result = kvir.confirm.confirm("case/", ["bodies.jsonl", "vllm.log"], ConfirmOptions(key=Path("~/k")))
    result.confirmations        # one verdict per affected or possibly affected response (pandas)

Opt-in only: nothing else runs it. Steps: one streaming pass over the sources (kvir.confirm.scan: texts,
fingerprints, detector counts, needles), then the case's SQL (queries/confirm/: matches, coverage, verdicts,
accounts) over the fingerprints, and the exports. The probe's canaries need a second, lighter look at the
responses when the case holds probe runs whose plant prompts the sources hold: they are known only once
the pass has read those prompts. The case is staged and committed only when complete.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from kvir.case.export import write_csv, write_parquet
from kvir.case.store import Case, memory_limit_setting
from kvir.confirm.detect import Needle, NeedleIndex
from kvir.confirm.fingerprint import Shingling
from kvir.confirm.key import load_key
from kvir.confirm.scan import Plants, Scan, canary_needles
from kvir.confirm.text import TextSource, choose_format
from kvir.core.errors import InputError, KvirError
from kvir.core.progress import Reporter
from kvir.core.sql import load

INSTANCE_RULES = ("node", "any")


@dataclass(frozen=True)
class Thresholds:
    """Where a verdict turns (benchmarks/confirm_bench.py measures them: benchmarks/README.md "Confirm")."""

    score: float = 3.0           # weighted shared windows that confirm a source
    max_df: int = 3              # a window more than this many other tenants hold is boilerplate
    fffd_min: int = 2            # replacement: at least this many U+FFFD ...
    fffd_share: float = 0.01     # ... and this share of the characters
    symbol_share: float = 0.3    # noise: symbols at least this share of the characters
    repeat_kept: int = 8         # repetition: at least this many winnowed windows ...
    repeat_share: float = 0.5    # ... of which at most this share distinct
    script_letters: int = 20     # script shift: at least this many letters ...
    script_share: float = 0.6    # ... no script holding this share, or another script than the prompt's


@dataclass
class ConfirmOptions:
    key: Path                                    # the key file (created when missing and create_key)
    create_key: bool = True
    format: str = "auto"
    maps: dict[str, list[str]] = field(default_factory=dict)   # --map for generic sources: paths per field
    needles: list[str] = field(default_factory=list)        # --needle, in the order given
    # The mechanism's window (the pool's, the cache's, the transfer's lifetime) is not exposed by the mechanism
    # registry yet: None looks at every earlier request (what may have written the KV a response read).
    window_s: float | None = None
    instance: str = "node"                        # node: sources on the response's nodes (or on none known)
    shingling: Shingling = field(default_factory=Shingling)
    thresholds: Thresholds = field(default_factory=Thresholds)
    progress: bool = False
    memory_limit: str | None = None


@dataclass
class ConfirmResult:
    case: Case
    summary: dict[str, Any]
    outputs: dict[str, Path]
    key_created: bool

    @property
    def confirmations(self):
        return self.case.df("confirmations")

    @property
    def sources(self):
        return self.case.df("confirmation_sources")

    @property
    def accounts(self):
        return self.case.df("confirmation_accounts")


def confirm(case_path: str | Path, sources: list[str | Path], options: ConfirmOptions) -> ConfirmResult:
    """Confirm the case's affected responses against the text sources (see the module docstring)."""
    o = options
    if o.instance not in INSTANCE_RULES:
        raise InputError(f"--instance must be {' or '.join(INSTANCE_RULES)}, not {o.instance!r}")
    if o.window_s is not None and o.window_s <= 0:
        raise InputError("--window-s must be positive")
    if any(not n for n in o.needles):
        raise InputError("--needle must not be empty")
    paths = [Path(p) for p in sources]
    if not paths:
        raise InputError("no text sources given")
    for p in paths:
        if not p.is_file():
            raise InputError("no such file" if not p.exists() else "not a file", path=str(p))
    case = Case.open(case_path, staged=True)
    try:
        key, created = load_key(o.key, case_dir=case.home, create=o.create_key)
        result = _confirm_into(case, paths, o, key, created)
        case.commit()
    except BaseException:
        case.close()
        raise
    result.outputs = {k: case.path / v.name for k, v in result.outputs.items()}
    return result


def _confirm_into(case: Case, paths: list[Path], o: ConfirmOptions, key, created: bool) -> ConfirmResult:
    t0 = time.perf_counter()
    for table in ("triage_hits", "requests"):
        if not case.has(table):       # a table or a view (information_schema lists both)
            raise KvirError(f"the case has no {table}", path=str(case.home), hint="run `kvir triage` first")
    srcs = [TextSource(i, p, *choose_format(p, o.format, mapped=bool(o.maps)), paths=dict(o.maps))
            for i, p in enumerate(paths, 1)]
    targets = pa.array([r[0] for r in case.con.execute(
        "SELECT DISTINCT request_id FROM triage_hits WHERE category IN ('affected', 'possibly-affected') "
        "AND request_id IS NOT NULL").fetchall()], pa.string())
    case.run("confirm/tables")
    needles = [Needle(i, t) for i, t in enumerate(o.needles, 1)]
    for n in needles:
        case.con.execute("INSERT INTO confirm_needles VALUES ($i, 'needle', $l, $c, $w, NULL, NULL)",
                         {"i": n.needle_id, "l": f"--needle {n.needle_id}", "c": len(n.text), "w": n.window})
    spill = Path(tempfile.mkdtemp(prefix="kvir-confirm-"))
    con = _text_connection(spill, o.memory_limit)
    try:
        scan = Scan(case, con, key, o.shingling, targets, NeedleIndex(needles, key.base) if needles else None,
                    _plants(case), spill)
        total = sum(p.stat().st_size for p in paths)
        reporter = Reporter(enabled=o.progress)
        with reporter.session():
            reporter.run("fingerprints", lambda: _pass(case, scan, srcs), counter=lambda: scan.bytes_read,
                         total=total)
            canaries = _second_look(case, scan, srcs, len(needles) + 1)
            reporter.run("confirm", lambda: _judge(case, o), con=case.con)
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    summary = _summary(case, o, key.key_id, srcs, canaries, time.perf_counter() - t0)
    outputs = _export(case)
    case.manifest["confirm"] = summary
    case.manifest.setdefault("inputs_confirm", []).extend(
        {"path": str(s.path), "format": s.format.name, "size_bytes": s.size_bytes, "sha256": s.sha256} for s in srcs)
    case.manifest.setdefault("timings", {})["confirm_s"] = summary["seconds"]
    case.manifest.setdefault("outputs", {}).update({k: v.name for k, v in outputs.items()})
    case.save_manifest()
    return ConfirmResult(case, summary, outputs, created)


def _text_connection(spill: Path, memory_limit: str | None) -> duckdb.DuckDBPyConnection:
    """The connection text lives on: in memory, spilling only to `spill` (a private folder removed after)."""
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET temp_directory = $d", {"d": str(spill)})
    con.execute("SET memory_limit = $m", {"m": memory_limit_setting(memory_limit)})
    for st in con.extract_statements(load("confirm/text/macros").text):
        con.execute(st)
    return con


def _plants(case: Case) -> Plants:
    """The probe's canary plant requests the case records (kvir probe --case), by the ids they were sent and
    answered under."""
    p = Plants()
    if not case.has("probe_events"):
        return p
    for tenant, ids in case.con.execute(
            "SELECT tenant, list_distinct(list_filter(flatten(list([request_id, response_id])), lambda x: x IS NOT NULL)) "
            "FROM probe_events WHERE purpose = 'plant' GROUP BY tenant ORDER BY tenant").fetchall():
        for rid in ids:
            p.tenant_of[rid] = tenant
        p.requests_of[tenant] = sorted(ids)
    return p


def _pass(case: Case, scan: Scan, srcs: list[TextSource]) -> None:
    with case.transaction():
        for src in srcs:
            scan.source(src)
    for src in srcs:
        c = src.counts
        if c["read"] != c["with_text"] + c["without_text"] + c["skipped"] + c["quarantined"]:
            raise KvirError(f"records read ({c['read']}) are not the sum of those counted", path=str(src.path))


def _second_look(case: Case, scan: Scan, srcs: list[TextSource], first_id: int) -> int:
    """Look for the probe's canaries the pass found in every response (a second read, needles only)."""
    needles, rows = canary_needles(scan.plants, first_id)
    if not needles:
        return 0
    for r in rows:
        case.con.execute("INSERT INTO confirm_needles VALUES ($needle_id, $kind, $label, $chars, $window, $planted_by, "
                         "$planted_request_ids)", r)
    docs, scan.next_doc = scan.next_doc, 0
    index = NeedleIndex(needles, scan.key.base)
    with case.transaction():
        for src in srcs:
            again = TextSource(src.source_id, src.path, src.format, src.chosen_by, src.paths)
            scan.source(again, fingerprint=False, needles=index)
            if again.sha256 != src.sha256:
                raise KvirError("changed while kvir confirm read it", path=str(src.path))
    if scan.next_doc != docs:
        raise KvirError(f"the second read gave {scan.next_doc} texts, the first {docs}")
    return len(needles)


def _judge(case: Case, o: ConfirmOptions) -> None:
    t, sh = o.thresholds, o.shingling
    with case.transaction():
        case.run("confirm/matches", {"window_s": o.window_s, "any_instance": o.instance == "any",
                                     "max_df": t.max_df, "w": sh.w, "k": sh.k})
        case.run("confirm/coverage", {"window_s": o.window_s, "any_instance": o.instance == "any"})
        case.run("confirm/verdicts", {"threshold": t.score, "k": sh.k, "fffd_min": t.fffd_min,
                                      "fffd_share": t.fffd_share, "symbol_share": t.symbol_share,
                                      "repeat_kept": t.repeat_kept, "repeat_share": t.repeat_share,
                                      "script_letters": t.script_letters, "script_share": t.script_share})
        case.run("confirm/accounts")
        case.run("confirm/needles")


def _summary(case: Case, o: ConfirmOptions, key_id: str, srcs: list[TextSource], canaries: int,
             seconds: float) -> dict[str, Any]:
    con = case.con
    verdicts = dict(con.execute("SELECT verdict, count(*) FROM confirmations GROUP BY 1 ORDER BY 1").fetchall())
    docs, unmatched = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE doc_id NOT IN (SELECT doc_id FROM confirm_meta)) FROM confirm_docs"
    ).fetchone()
    return {
        "responses": sum(verdicts.values()), "verdicts": verdicts,
        "texts": docs, "texts_without_request": unmatched,
        "fingerprints": con.execute("SELECT count(*) FROM confirm_fingerprints").fetchone()[0],
        "sources": [{"path": str(s.path), "format": s.format.name, **s.counts} for s in srcs],
        "needles": {"given": len(o.needles), "probe_canaries": canaries,
                    "responses_with_a_needle": con.execute(
                        "SELECT count(DISTINCT request_id) FROM confirm_needle_hits").fetchone()[0]},
        "key_sha256": key_id,
        "window_s": o.window_s,
        "window": (f"{o.window_s:g} s before each response" if o.window_s is not None else
                   "any time before each response (--window-s not given: the mechanism's window is not "
                   "known to kvir confirm yet)"),
        "instance": o.instance,
        "shingling": asdict(o.shingling) | {"guarantee_bytes": o.shingling.guarantee},
        "thresholds": asdict(o.thresholds),
        "seconds": round(seconds, 3),
    }


def _export(case: Case) -> dict[str, Path]:
    p, guard = case.path, case.manifest.setdefault("csv", {})
    case.run("confirm/export")
    out = {}
    for table, name in (("confirm_export", "confirmations"), ("confirmation_accounts", "confirmation_accounts"),
                        ("confirm_needle_export", "needles")):
        out[f"{name}.parquet"] = write_parquet(case.con, f"SELECT * FROM {table}", p / f"{name}.parquet")
        out[f"{name}.csv"] = write_csv(case.con, table, p / f"{name}.csv", guard=guard, exact=f"{name}.parquet")
    return out
