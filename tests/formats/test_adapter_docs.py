"""What `kvir formats NAME` says an adapter reads is checked against the adapter itself (issue #15):
every format's example record goes through its adapter and is a request (Prometheus: a counted sample);
for JSON records, dropping a required field (every alternative of `a|b`) makes the record no request, and
dropping any one optional field (or one alternative of a required one) leaves it a request. So the help
cannot drift from what the adapter does, and an optional field is not quietly required (issue #14)."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from kvir.case.store import Case
from kvir.ingest.formats import FORMATS, adapter_doc
from kvir.ingest.run import IngestOptions, ingest, plan_sources
from kvir.spec.model import load_spec

from ..conftest import spec_text

JSON_FORMATS = {"sglang-json", "sglang-metrics", "cloudflare-gateway", "cloudflare-logpush", "litellm",
                "openai-response", "langfuse", "helicone", "envoy", "nginx"}
EXAMPLE_KIND = {"prometheus": "skip"}
FILE_NAME = {"sglang-metrics": "sglang-request-metrics-20260828_10.log"}
TESTABLE = re.compile(r"^[\w.\-]+(\|[\w.\-]+)*$")


def _kinds(tmp_path: Path, name: str, records: dict[str, str]) -> dict[str, str]:
    """label -> the kind the adapter gave the one record in a file of its own (one ingest for all)."""
    paths = []
    for label, text in records.items():
        d = tmp_path / "in" / label
        d.mkdir(parents=True)
        p = d / FILE_NAME.get(name, "records.log")
        if name.startswith("generic-") and name != "generic-parquet":
            p = d / ("records.csv" if name == "generic-csv" else "records.jsonl")
        p.write_text(text + "\n")
        paths.append(p)
    spec = tmp_path / "incident.toml"
    spec.write_text(spec_text())
    opts = IngestOptions(format=name, source_tz="UTC", hash="none")
    case = Case.create(tmp_path / "case")
    try:
        ingest(case, plan_sources(paths, load_spec(spec), opts), opts)
        rows = case.con.execute("""
            SELECT s.label, c.kind FROM source_counts AS c JOIN sources AS s USING (source_id)
            WHERE c.kind <> 'skip' OR s.format = 'prometheus'""").fetchall()
    finally:
        case.close()
    return {Path(label).parent.name: kind for label, kind in rows}


def _drop(record: dict, path: str) -> bool:
    """Remove a field: a top-level key as written (Envoy's keys hold dots), else a dotted path."""
    if path in record:
        del record[path]
        return True
    *parents, last = path.split(".")
    node = record
    for k in parents:
        node = node.get(k) if isinstance(node, dict) else None
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    return False


@pytest.mark.parametrize("name", sorted(n for n in FORMATS if n != "generic-parquet"))
def test_example_is_read_as_documented(name, tmp_path):
    doc = adapter_doc(FORMATS[name])
    assert doc.example and doc.required, f"{name}: its adapter's header has no Example / Required line"
    example = doc.example
    if name.startswith("generic-"):        # the generic adapter's example: a header and a row
        header, row = (x.strip() for x in example.split(" // "))
        example = f"{header}\n{row}" if name == "generic-csv" else json.dumps(
            dict(zip(header.split(","), row.split(","))))
    records = {"example": example}
    variants: dict[str, str] = {}            # label -> expected kind
    variants["example"] = EXAMPLE_KIND.get(name, "request")
    if name in JSON_FORMATS:
        prefix, _, body = example.partition("{")
        base = json.loads("{" + body)
        for which, fields in (("required", doc.required), ("optional", doc.optional)):
            for item in fields:
                item = re.sub(r"\s*\(.*\)\s*$", "", item)          # a trailing remark
                if not TESTABLE.match(item):
                    continue
                alts = item.split("|")
                groups = [(alts, "bad" if which == "required" else "request")]
                present = [a for a in alts if _drop(copy.deepcopy(base), a)]
                if len(present) > 1:       # one alternative dropped, another left: still a request
                    groups += [([a], "request") for a in present]
                for fields_out, want in groups:
                    r = copy.deepcopy(base)
                    dropped = [_drop(r, f) for f in fields_out]
                    if not any(dropped):
                        if which == "required" and len(fields_out) == len(alts):
                            pytest.fail(f"{name}: the example has none of {fields_out} (its header requires one)")
                        continue                  # an optional field (or alternative) the example does not hold
                    label = f"{which}-{'+'.join(fields_out)}".replace("/", "_")
                    records[label] = prefix + json.dumps(r)
                    variants[label] = want
    kinds = _kinds(tmp_path, name, records)
    for label, want in variants.items():
        got = kinds.get(label)
        if want == "bad":
            assert got != "request", f"{name}: without {label} the record is still a request"
        else:
            assert got == want, f"{name}: {label}: {got}"
