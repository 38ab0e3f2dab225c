"""`kvir formats [NAME]`: the format list (or one format's card) is the command's result, so it goes to stdout."""
from __future__ import annotations

from rich.console import Console

from kvir.cli.present import table
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


def _fixtures(f) -> str:
    if f.fixtures_from:
        return f"{', '.join(f.fixtures_from)}: {f.fixtures_note}"
    return f.fixtures_note or "-"


def print_formats() -> None:
    rows = [[f.name, f.title, _times(f), _needs(f), EVIDENCE.get(f.evidence, f.evidence)] for f in FORMATS.values()]
    Console(width=160).print(table("Formats (`--format NAME`; auto sniffs content; `kvir formats NAME` for one)",
                                   ("name", "what", "times", "needs", "evidence"), rows))


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
    out = Console(width=160, soft_wrap=True)
    out.print(f"[bold]{f.name}[/bold]: {f.title}")
    rows = [("adapter", f"queries/{f.adapter}.sql: {doc.description}"), ("reader", _reader(f)),
            ("times", _times(f)), ("needs", _needs(f)), ("evidence", EVIDENCE.get(f.evidence, f.evidence)),
            ("required", ", ".join(doc.required) or "-"), ("optional", ", ".join(doc.optional) or "-"),
            ("fixtures", _fixtures(f))]
    if f.notes:
        rows.append(("notes", f.notes))
    for k, v in rows:
        out.print(f"  {k:<9} {v}", highlight=False, markup=False)
    out.print("  example", highlight=False)
    out.print(f"    {doc.example}", highlight=False, markup=False)
