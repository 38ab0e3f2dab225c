"""reports/manifest.json (SHA-256 of every artifact and of the case inputs, the queries behind the numbers,
the validations) and what an earlier run with --only left behind that is still there unchanged."""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kvir import __version__
from kvir.case.store import Case
from kvir.core.files import sha256_file
from kvir.report.artifacts import Artifact
from kvir.report.build import case_input_hashes
from kvir.report.model import IncidentModel
from kvir.report.read import home
from kvir.report.times import iso
from kvir.report.validate import Validation

GROUP_ORDER = ("Public", "Coordinated disclosure", "Customer notices (affected accounts)",
               "Customer notices (source accounts)", "Regulator", "Internal", "Timeline", "Figures")


def link_groups(artifacts: list[Artifact]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Index entries: per group, one line per document with its formats (path stem = one document)."""
    docs: dict[tuple[str, str], dict[str, Any]] = {}
    for a in artifacts:
        stem = re.sub(r"\.(md|html|csv|jsonl|json|png|txt)$", "", a.path)
        stem = stem.removesuffix(".invalid").removesuffix(".errors")
        d = docs.setdefault((a.group, stem), {"title": a.title, "formats": []})
        if a.kind in ("Markdown", "HTML"):
            d["title"] = a.title
        d["formats"].append({"kind": a.kind, "path": a.path})
    out = []
    for g in sorted({k[0] for k in docs}, key=lambda g: (GROUP_ORDER.index(g) if g in GROUP_ORDER else 99, g)):
        out.append((g, [d for (gg, _), d in docs.items() if gg == g]))
    return out


def previous(out: Path) -> dict[str, Any]:
    p = out / "manifest.json"
    try:
        return json.loads(p.read_text()) if p.exists() else {}
    except json.JSONDecodeError:
        return {}


def carry_over(out: Path, written: list[Artifact]) -> list[Artifact]:
    """This run's artifacts plus those of earlier runs (with --only) whose files are still there unchanged."""
    seen = {a.path for a in written}
    keep = list(written)
    for a in previous(out).get("artifacts", []):
        p = out / a["path"]
        if a["path"] in seen or a["path"] == "index.html" or not p.exists() or sha256_file(p) != a.get("sha256"):
            continue
        keep.append(Artifact(a["path"], a["group"], a["title"], a["kind"], a.get("run", "")))
        seen.add(a["path"])
    return keep


def carry_validations(out: Path, now: list[Validation]) -> list[Validation]:
    docs = {v.document for v in now}
    keep = list(now)
    for v in previous(out).get("validations", []):
        if v["document"] not in docs and (out / v["document"]).exists():
            keep.append(Validation(**v))
    return keep


def write_manifest(case: Case, out: Path, model: IncidentModel, artifacts: list[Artifact],
                   validations: list[Validation], chosen: list[str], fmt: str, gen_at: str) -> None:
    entries = []
    for a in artifacts + [Artifact("index.html", "Index", "Index", "HTML", gen_at)]:
        p = out / a.path
        entries.append({**asdict(a), "sha256": sha256_file(p), "bytes": p.stat().st_size})
    c = model.counts
    numbers = {k: {"value": (iso(v) if isinstance(v, dt.datetime) else v), "query": c.query}
               for k, v in asdict(c).items() if k != "query"}
    numbers["per_million"] = {"value": c.per_million, "query": c.query}
    manifest = {
        "kvir_version": __version__, "generated_at": gen_at, "case": home(case).name, "only": chosen, "format": fmt,
        "artifacts": entries,
        "validations": [asdict(v) for v in validations],
        "inputs": case_input_hashes(case),
        "queries": [{"query": q["query"], "sha256": q["sha256"], "params": q["params"], "rows": q["rows"]}
                    for q in model.queries],
        "numbers": numbers,
        "stages": [asdict(s) for s in model.stages],
        "warnings": model.warnings,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
