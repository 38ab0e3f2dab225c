"""`kvir formats [NAME]`: the format list (or one format's card) is the command's result, so it goes to stdout."""
from __future__ import annotations

from rich.console import Console
from rich.text import Text

from kvir.cli.present import Col, table
from kvir.cli.present.layout import Pairs
from kvir.ingest.fixture_versions import FIXTURE_VERSIONS
from kvir.ingest.formats import FORMATS, Format, adapter_doc
from kvir.ingest.formats import get as get_format
from kvir.ingest.sources import NATIVE_MIN_BYTES

EVIDENCE = {"counts": "prompt tokens", "candidates": "candidates (joined by id or time)",
            "aggregate": "aggregate bounds only"}


def _needs(f) -> str:
    needs = ", ".join("--source-tz" if n == "source_tz" else "[sources.columns]" if n == "columns" else f"--{n}"
                      for n in f.needs) or "-"
    return needs + (f"; optional: {f.options}" if f.options else "")


def _times(f) -> str:
    return f.times + (" (UTC by definition: --source-tz not applied)" if f.times_utc else "")


def _fixtures(f) -> list[str]:
    """One line per producer with the versions its fixtures cover (read from their meta.json files) and what
    they follow, then how they were made."""
    lines = [f"{producer} {', '.join(versions)} ({files} file{'s' if files > 1 else ''}"
             + (f"; {'; '.join(follows)}" if follows else "") + ")"
             for producer, versions, files, follows in FIXTURE_VERSIONS.get(f.name, ())]
    return lines + [f.fixtures_note] if f.fixtures_note else lines or ["-"]


def print_formats() -> None:
    """One row per format (name, what it needs, what evidence it gives); what it is and its times below."""
    rows = [[f.name, _needs(f), EVIDENCE.get(f.evidence, f.evidence), f"{f.title}; times: {_times(f)}"]
            for f in FORMATS.values()]
    Console().print(table("Formats (`--format NAME`; auto sniffs content; `kvir formats NAME` for one)",
                          ("name", Col("needs", wrap=True), Col("evidence", wrap=True), Col("what", under=True)), rows))


def _reader(f: Format) -> str:
    """The reader, and when DuckDB's own readers take over (kvir.ingest.native)."""
    if f.native is None:
        return f.reader
    return (f"{f.reader}; a file of {NATIVE_MIN_BYTES >> 20} MiB or more: DuckDB's JSON reader (bare JSON lines) or CSV reader, "
            "checked line for line against a second read (else the line reader; the manifest says which read each "
            "input; KVIR_NATIVE_MIN_BYTES=off: always the line reader)")


def print_format(name: str) -> None:
    """One format: what it is, the fields its adapter reads (required, optional) and an example record, all
    from the adapter's own header (tested against the adapter), and where its fixtures came from."""
    f = get_format(name)
    doc = adapter_doc(f)
    out = Console()
    out.print(Text.assemble((f.name, "bold"), f": {f.title}"))
    rows = [("adapter", f"queries/{f.adapter}.sql: {doc.description}"), ("reader", _reader(f)),
            ("times", _times(f)), ("needs", _needs(f)), ("evidence", EVIDENCE.get(f.evidence, f.evidence)),
            ("required", ", ".join(doc.required) or "-"), ("optional", ", ".join(doc.optional) or "-")]
    rows += [("fixtures" if i == 0 else "", line) for i, line in enumerate(_fixtures(f))]
    if f.notes:
        rows.append(("notes", f.notes))
    out.print(Pairs([(k, Text(v)) for k, v in rows]))
    out.print(Text("  example", style="dim"))
    out.print(Text(f"    {doc.example}"), soft_wrap=True)   # one record, as it is: copy-paste must work
