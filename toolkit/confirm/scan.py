"""The one streaming pass: every text source read batch by batch, each batch's texts fingerprinted, counted and
searched for needles, and only ids, counts, offsets and salted hashes appended to the case.

The text itself stays on the text connection (an in-memory DuckDB of its own, spilling to a private
temporary folder that is removed afterwards) and in the batch's Arrow arrays; it is never bound into a query
of the case, logged or returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kvir.case.store import Case
from kvir.confirm.detect import Needle, NeedleIndex, counts
from kvir.confirm.fingerprint import Shingling, fingerprints, normalise, powers_for
from kvir.confirm.key import ConfirmKey
from kvir.confirm.text import Extractor, TextSource, record_batches

_DOC_COLUMNS = ("doc_id", "source_id", "source_line", "request_id", "part", "choice", "chars", "norm_bytes", "kept",
                "fingerprints", "replacement_chars", "control_chars", "symbol_chars", "letters", "script",
                "script_share")
_COUNTED = _DOC_COLUMNS[10:]


@dataclass
class Plants:
    """The probe's canary plants the case records (request ids -> planting tenant), and their prompts once
    the pass has read them (held in memory, as needles, for the second look)."""

    tenant_of: dict[str, str] = field(default_factory=dict)
    requests_of: dict[str, list[str]] = field(default_factory=dict)   # tenant label -> its plant request ids
    found: dict[str, str] = field(default_factory=dict)               # request id -> the plant prompt


@dataclass
class Scan:
    case: Case
    con: duckdb.DuckDBPyConnection            # the text connection
    key: ConfirmKey
    shingling: Shingling
    targets: pa.Array                          # request ids of affected / possibly affected responses
    needles: NeedleIndex | None
    plants: Plants
    spill: Path
    next_doc: int = 0
    bytes_read: int = 0
    needle_hits: int = 0

    def __post_init__(self) -> None:
        self.powers = powers_for(self.key)

    def source(self, src: TextSource, *, fingerprint: bool = True, needles: NeedleIndex | None = None) -> None:
        """Read one source; fingerprint its texts (the pass) or only look for `needles` (the second look)."""
        ex = Extractor(self.con, src)
        for batch in record_batches(self.con, src, self.spill):
            self.bytes_read += int(pc.sum(batch.column("line_bytes")).as_py() or 0)
            self._texts(ex.texts(batch), fingerprint, needles)
        self._texts(ex.flush(), fingerprint, needles)
        if fingerprint:
            self._record_source(src, ex)

    def _texts(self, texts: pa.Table, fingerprint: bool, needles: NeedleIndex | None) -> None:
        n = texts.num_rows
        if not n:
            return
        doc_ids = np.arange(self.next_doc, self.next_doc + n, dtype=np.int64)
        self.next_doc += n
        raw = texts.column("text").combine_chunks()
        if fingerprint:
            self._fingerprint(texts, raw, doc_ids)
            self._remember_plants(texts, raw)
        index = self.needles if fingerprint else needles
        if index is not None:
            self._needles(texts, raw, doc_ids, index)

    def _fingerprint(self, texts: pa.Table, raw: pa.Array, doc_ids: np.ndarray) -> None:
        norm = normalise(raw)
        f = fingerprints(norm, self.key, self.shingling, self.powers)
        docs = {"doc_id": pa.array(doc_ids), "source_id": texts.column("source_id"),
                "source_line": texts.column("line_no"), "request_id": texts.column("request_id"),
                "part": texts.column("part"), "choice": texts.column("choice"),
                "chars": pc.utf8_length(pc.fill_null(raw, "")).cast(pa.int64()),
                "norm_bytes": pa.array(f.norm_bytes), "kept": pa.array(f.kept), "fingerprints": pa.array(f.distinct)}
        docs.update(self._counts(texts, raw))
        self._append("confirm_docs", pa.table({c: docs[c] for c in _DOC_COLUMNS}))
        self._append("confirm_fingerprints", pa.table({"doc_id": pa.array(doc_ids[f.doc]), "pos": pa.array(f.pos),
                                                       "fp": pa.array(f.fp)}))

    def _counts(self, texts: pa.Table, raw: pa.Array) -> dict[str, pa.Array]:
        """The detectors' counts, for the texts of affected requests only (NULL for the others)."""
        mine = pc.fill_null(pc.is_in(texts.column("request_id"), value_set=self.targets), False)
        n, rows = texts.num_rows, np.flatnonzero(np.asarray(mine))
        sub = counts(pc.take(raw, pa.array(rows, pa.int64())))
        out = {}
        for name in _COUNTED:
            col = sub[name]
            full = pa.nulls(n, col.type)
            if len(rows):
                idx = np.full(n, -1, np.int64)
                idx[rows] = np.arange(len(rows))
                full = pc.take(col, pa.array(idx, mask=idx < 0))
            out[name] = full
        return out

    def _remember_plants(self, texts: pa.Table, raw: pa.Array) -> None:
        if not self.plants.tenant_of:
            return
        ids = pa.array(list(self.plants.tenant_of), pa.string())
        hit = pc.and_(pc.fill_null(pc.is_in(texts.column("request_id"), value_set=ids), False),
                      pc.equal(texts.column("part"), "prompt"))
        for rid, text in zip(pc.filter(texts.column("request_id"), hit).to_pylist(),   # a probe's few plants
                             pc.filter(raw, hit).to_pylist()):
            if text:
                self.plants.found.setdefault(rid, text)

    def _needles(self, texts: pa.Table, raw: pa.Array, doc_ids: np.ndarray, index: NeedleIndex) -> None:
        resp = np.flatnonzero(np.asarray(pc.equal(texts.column("part"), "response")))
        if not len(resp):
            return
        hits = index.scan(pc.take(raw, pa.array(resp, pa.int64())))
        if not len(hits.needle_id):
            return
        rows = resp[hits.text_index]
        self.needle_hits += len(rows)
        self._append("confirm_needle_hits", pa.table({
            "needle_id": pa.array(hits.needle_id), "doc_id": pa.array(doc_ids[rows]),
            "request_id": pc.take(texts.column("request_id"), pa.array(rows)), "chars": pa.array(hits.chars),
            "offset": pa.array(hits.offset), "normalised": pa.array(hits.normalised)}))

    def _record_source(self, src: TextSource, ex: Extractor) -> None:
        c = src.counts
        self.case.con.execute(
            "INSERT INTO confirm_sources VALUES ($id, $path, $fmt, $why, $size, $sha, $read, $wt, $wo, $sk, $q)",
            {"id": src.source_id, "path": str(src.path), "fmt": src.format.name, "why": src.chosen_by,
             "size": src.size_bytes, "sha": src.sha256, "read": c["read"], "wt": c["with_text"],
             "wo": c["without_text"], "sk": c["skipped"], "q": c["quarantined"]})
        for q in ex.quarantine:
            reasons = pc.utf8_slice_codeunits(q.column("status"), 5)
            self._append("confirm_quarantine", pa.table({"source_id": q.column("source_id").cast(pa.int32()),
                                                         "source_line": q.column("line_no"), "reason": reasons}))

    def _append(self, table: str, rows: pa.Table) -> None:
        self.case.con.register("confirm_rows", rows)
        try:
            self.case.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM confirm_rows")   # kvir table names
        finally:
            self.case.con.unregister("confirm_rows")


def canary_needles(plants: Plants, start: int) -> tuple[list[Needle], list[dict]]:
    """The plant prompts found, as needles (one per plant request), with their rows for confirm_needles."""
    needles, rows = [], []
    for i, (rid, text) in enumerate(sorted(plants.found.items()), start):
        needles.append(Needle(i, text))
        rows.append({"needle_id": i, "kind": "probe canary", "label": f"probe canary planted by request {rid}",
                     "chars": len(text), "window": needles[-1].window, "planted_by": plants.tenant_of[rid],
                     "planted_request_ids": [rid]})
    return needles, rows
