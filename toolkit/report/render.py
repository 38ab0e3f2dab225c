"""`kvir report`: render every document of the incident from the case into CASE_DIR/reports/.

    reports/index.html                 entry page: counts, links, validation, warnings, figures
    reports/manifest.json              SHA-256 of every artifact and of the case inputs; queries; validation
    reports/timeline.{md,html,csv,jsonl}   (jsonl: Timesketch import format)
    reports/postmortem.{md,html}       internal, Google SRE sections
    reports/public_report.{md,html}
    reports/advisory.{md,html}         coordinated-disclosure advisory for the engine bug
    reports/csaf/<tracking id>.json    CSAF 2.0: security advisory (engine) and incident response (provider)
    reports/osv/<id>.json, reports/cve/cna_container.json
    reports/notices/affected/<account>.{md,html,csv}, reports/notices/source/<account>.{md,html,csv}
    reports/gdpr_art33.{md,html}
    reports/figures/*.png              (embedded in the HTML as data: URIs)

Templates: templates/*.j2. HTML templates autoescape everything. Markdown templates escape every value
(entities for < > &, backslashes for Markdown syntax); the HTML form of a prose document is its Markdown
converted by markdown-it with raw HTML disabled, inside document.html.j2. JSON templates put every
value through `tojson` and the result is parsed, validated and written with sorted keys.
"""
from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import re
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from markupsafe import Markup

from kvir import __version__
from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.core.files import sha256_file
from kvir.case.export import neutralise_cell
from kvir.report.machine import csaf_filename, machine_values
from kvir.report.model import IncidentModel, build_model, case_input_hashes, iso
from kvir.case.spec_tables import ensure_spec_facts
from kvir.report.timeline import store_timeline
from kvir.report.validate import VALIDATORS, Validation

ARTIFACTS = ("timeline", "postmortem", "public-report", "advisory", "csaf", "osv", "cve", "notices", "gdpr",
             "figures")
FORMATS = ("md", "html", "all")


@dataclass
class Artifact:
    path: str          # relative to reports/
    group: str
    title: str
    kind: str          # Markdown, HTML, CSV, JSON ...
    run: str = ""      # generated_at of the run that wrote it


@dataclass
class ReportResult:
    out_dir: Path
    artifacts: list[Artifact]
    validations: list[Validation]
    warnings: list[str]
    model: IncidentModel = field(repr=False)

    @property
    def ok(self) -> bool:
        """No machine-readable document failed validation."""
        return all(v.valid is not False for v in self.validations)

    @property
    def index(self) -> Path:
        return self.out_dir / "index.html"

    @property
    def manifest(self) -> Path:
        return self.out_dir / "manifest.json"

    def path(self, rel: str) -> Path:
        return self.out_dir / rel


# ----------------------------------------------------------------------------------- escaping, filters

_MD_ESC = re.compile(r"([\\`*\[\]|{}])")


def md_escape(value: Any) -> str:
    """A value placed in Markdown: HTML-special characters as entities, Markdown syntax backslashed,
    line breaks flattened (a log-derived string can neither add markup nor break a table)."""
    if isinstance(value, Markup):
        return str(value)
    if value is None:
        return ""
    s = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_ESC.sub(r"\\\1", s)
    return re.sub(r"[\r\n\t]+", " ", s)


def _num(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.1f}"
    return f"{int(v):,}"


def _utc(v: Any) -> str:
    if v is None or v == "":
        return "n/a"
    if isinstance(v, dt.datetime):
        return iso(v)
    return str(v)


def _day(v: Any) -> str:
    return v.strftime("%Y-%m-%d") if isinstance(v, dt.datetime | dt.date) else "n/a"


def _json_text(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _loader():
    from jinja2 import FileSystemLoader

    return FileSystemLoader(str(resources.files("kvir.templates")))


def environments():
    """(html, markdown, json) Jinja environments over templates/."""
    from jinja2 import Environment, StrictUndefined

    filters = {"num": _num, "utc": _utc, "day": _day, "json": _json_text}
    html = Environment(loader=_loader(), autoescape=True, undefined=StrictUndefined, trim_blocks=False)
    md = Environment(loader=_loader(), autoescape=False, undefined=StrictUndefined, finalize=md_escape,
                     keep_trailing_newline=True)
    js = Environment(loader=_loader(), autoescape=False, undefined=StrictUndefined)
    for env in (html, md, js):
        env.filters.update(filters)
    return html, md, js


def md_to_html(text: str) -> Markup:
    """Markdown -> HTML with raw HTML disabled (escaped): nothing in the Markdown can become markup."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    return Markup(md.render(text))


def slug(account_id: str) -> str:
    """A file name for an account (ids are log-derived: anything goes in them)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", account_id).strip("._-")[:40] or "account"
    return f"{base}-{hashlib.sha256(account_id.encode()).hexdigest()[:10]}"



# ----------------------------------------------------------------------------------------- renderer

class _Renderer:
    def __init__(self, model: IncidentModel, out: Path, fmt: str, figs: dict[str, Any]):
        self.m, self.out, self.fmt, self.figs = model, out, fmt, figs
        self.html_env, self.md_env, self.json_env = environments()
        self.css = Markup(resources.files("kvir.templates").joinpath("static", "report.css").read_text())
        self.artifacts: list[Artifact] = []
        self.validations: list[Validation] = []
        self.gen_at = iso(model.generated_at)

    @property
    def md(self) -> bool:
        return self.fmt in ("md", "all")

    @property
    def html(self) -> bool:
        return self.fmt in ("html", "all")

    def gen(self, root: str = "") -> dict[str, str]:
        return {"version": __version__, "generated_at": self.gen_at, "root": root}

    def write(self, rel: str, data: str | bytes, group: str, title: str, kind: str) -> Path:
        p = self.out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            p.write_text(data, encoding="utf-8")
        self.artifacts.append(Artifact(rel, group, title, kind, self.gen_at))
        return p

    def figure(self, html: bool, root: str = "") -> Callable[[str], Markup]:
        def fig(name: str) -> Markup:
            f = self.figs[name]
            src = f.data_uri if html else root + f.file
            return Markup(f"![{md_escape(f.title)}]({src})\n\n*{md_escape(f.caption)}*")
        return fig

    def prose(self, template: str, stem: str, group: str, title: str, kind_title: str, link_title: str = "",
              **ctx: Any) -> None:
        """A prose document: Markdown from its template; HTML = that Markdown converted, in document.html.j2."""
        depth = stem.count("/")
        root = "../" * depth
        t = self.md_env.get_template(template)
        if self.md:
            text = t.render(m=self.m, gen=self.gen(root), figure=self.figure(False, root), **ctx)
            self.write(f"{stem}.md", text, group, link_title or title, "Markdown")
        if self.html:
            text = t.render(m=self.m, gen=self.gen(root), figure=self.figure(True, root), **ctx)
            text = re.sub(r"\A\s*# [^\n]*\n", "", text)   # the page header already shows the title
            page = self.html_env.get_template("document.html.j2").render(
                m=self.m, gen=self.gen(root), css=self.css, doc_kind=kind_title, doc_title=title,
                body=md_to_html(text))
            self.write(f"{stem}.html", page, group, link_title or title, "HTML")

    # -- artifacts ------------------------------------------------------------------------------------
    def timeline(self) -> None:
        g, title = "Timeline", "Incident timeline"
        if self.md:
            self.write("timeline.md", self.md_env.get_template("timeline.md.j2").render(m=self.m, gen=self.gen()),
                       g, title, "Markdown")
        if self.html:
            self.write("timeline.html", self.html_env.get_template("timeline.html.j2").render(
                m=self.m, gen=self.gen(), css=self.css, figs=self.figs, doc_kind="Timeline", doc_title=title),
                g, title, "HTML")
        self.write("timeline.csv", timeline_csv(self.m), g, "Incident timeline", "CSV")
        self.write("timeline.jsonl", timeline_jsonl(self.m), g, "Incident timeline (Timesketch import)", "JSONL")

    def postmortem(self) -> None:
        self.prose("postmortem.md.j2", "postmortem", "Internal", "Post-mortem: " + self.m.facts.title,
                   "Internal post-mortem")

    def public_report(self) -> None:
        self.prose("public_report.md.j2", "public_report", "Public", "Incident report: " + self.m.facts.title,
                   "Public incident report")

    def gdpr(self) -> None:
        self.prose("gdpr_art33.md.j2", "gdpr_art33", "Regulator", "GDPR Art. 33 notification (draft)",
                   "Regulator notification draft")

    def notices(self) -> None:
        for a in self.m.notifiable_accounts:
            stem = f"notices/affected/{slug(a.account_id)}"
            title = f"Notice to account {a.account_id}"
            link = f"{a.account_id}" + (f" ({a.label})" if a.label else "") + f": {a.affected:,} affected"
            self.prose("notice_affected.md.j2", stem, "Customer notices (affected accounts)", title,
                       "Processor-to-controller notice", link_title=link, a=a)
            self.write(stem + ".csv", _csv(["account_id", "request_id", "ts", "prompt_tokens", "http_status"],
                                           [[a.account_id, r.request_id, iso(r.ts), r.prompt_tokens, r.http_status]
                                            for r in a.responses]),
                       "Customer notices (affected accounts)", link, "CSV")
        if self.m.replay is None:
            return
        for s in self.m.replay.sources:
            stem = f"notices/source/{slug(s.account_id)}"
            title = f"Notice to account {s.account_id}: its data reached another response"
            link = f"{s.account_id}: {s.source_requests:,} request(s) reached {s.reader_responses:,} response(s)"
            self.prose("notice_source.md.j2", stem, "Customer notices (source accounts)", title,
                       "Processor-to-controller notice", link_title=link, s=s)
            self.write(stem + ".csv", _csv(["account_id", "request_id", "ts", "reached_responses", "tokens"],
                                           [[s.account_id, r.request_id, iso(r.ts), r.reached_responses, r.tokens]
                                            for r in s.requests]),
                       "Customer notices (source accounts)", link, "CSV")

    def machine(self, which: str, template: str, rel: str, title: str, standard: str) -> dict[str, Any] | None:
        x = machine_values(self.m)
        text = self.json_env.get_template(template).render(m=self.m, x=x)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:   # a template bug: never write it as if it were a document
            raise KvirError(f"template {template} produced invalid JSON: {e}") from None
        validator, valid, errors = VALIDATORS[which](doc)
        body = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        if valid is False:
            bad = rel.removesuffix(".json") + ".invalid.json"
            self.write(bad, body, "Coordinated disclosure", title + " (FAILED validation)", "JSON")
            self.write(rel.removesuffix(".json") + ".errors.txt", "\n".join(errors) + "\n", "Coordinated disclosure",
                       title + " (validation errors)", "text")
            rel = bad
        else:
            self.write(rel, body, "Coordinated disclosure", title, "JSON")
        self.validations.append(Validation(rel, standard, validator, valid, errors))
        return doc

    def csaf(self) -> None:
        x = machine_values(self.m)
        self.machine("csaf", "csaf_advisory.json.j2", "csaf/" + csaf_filename(x.advisory_tracking_id),
                     "CSAF 2.0 security advisory (engine bug)", "CSAF 2.0 csaf_security_advisory")
        self.machine("csaf", "csaf_incident.json.j2", "csaf/" + csaf_filename(x.incident_tracking_id),
                     "CSAF 2.0 incident response (provider incident)", "CSAF 2.0 csaf_security_incident_response")

    def osv(self) -> None:
        x = machine_values(self.m)
        self.machine("osv", "osv.json.j2", f"osv/{re.sub(r'[^A-Za-z0-9._-]+', '_', x.osv_id)}.json",
                     "OSV record (engine bug)", "OSV 1.7")

    def cve(self) -> None:
        self.machine("cve", "cve_cna.json.j2", "cve/cna_container.json", "CVE 5.1 CNA container draft (engine bug)",
                     "CVE 5.1 cnaPublishedContainer")

    def advisory(self, docs: list[dict[str, Any]]) -> None:
        self.prose("advisory.md.j2", "advisory", "Coordinated disclosure",
                   f"Security advisory: {self.m.disclosure.engine} KV-cache exposure", "Coordinated-disclosure advisory",
                   docs=docs)

    def figures(self) -> None:
        for f in self.figs.values():
            self.write(f.file, f.png, "Figures", f.title, "PNG")


def _csv(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(["" if v is None else neutralise_cell(v) if isinstance(v, str) else v for v in r])
    return buf.getvalue()


TIMELINE_COLUMNS = ["datetime", "timestamp_desc", "message", "title", "category", "actor", "origin", "source",
                    "evidence", "description", "visibility", "conflicts", "notes", "related_request_ids", "event_id"]


def _message(e) -> str:
    return e.title + (f": {e.description}" if e.description else "")


def timeline_csv(m: IncidentModel) -> str:
    """The timeline as CSV (Timesketch-importable columns first); every text cell formula-neutralised."""
    return _csv(TIMELINE_COLUMNS, [[e.iso, e.timestamp_desc, _message(e), e.title, e.category, e.actor, e.origin,
                                    e.source, e.evidence, e.description, e.visibility, "; ".join(e.conflicts),
                                    "; ".join(e.notes), ";".join(e.related_request_ids), e.event_id]
                                   for e in m.timeline])


def timeline_jsonl(m: IncidentModel) -> str:
    """Timesketch JSONL: message, datetime, timestamp_desc (mandatory), timestamp (µs), plus kvir's fields."""
    lines = []
    for e in m.timeline:
        rec = {"message": _message(e), "datetime": e.iso, "timestamp": int(e.ts.timestamp() * 1_000_000),
               "timestamp_desc": e.timestamp_desc, "data_type": "kvir:timeline:event", "event_id": e.event_id,
               "title": e.title, "category": e.category, "actor": e.actor, "origin": e.origin, "kind": e.kind,
               "source": e.source, "evidence": e.evidence, "visibility": e.visibility,
               "related_request_ids": list(e.related_request_ids), "conflicts": e.conflicts, "notes": e.notes,
               "tag": ["conflict"] if e.conflicts else []}
        lines.append(json.dumps(rec, ensure_ascii=False, sort_keys=True))
    return "\n".join(lines) + ("\n" if lines else "")


# ------------------------------------------------------------------------------------------- report()

def report(case: Case | str | Path, only: list[str] | tuple[str, ...] | None = None, format: str = "all", *,
           spec: str | Path | None = None) -> ReportResult:
    """Render the incident's documents from the case into CASE_DIR/reports/ (see the module docstring).

    `only` limits the artifacts (names in ARTIFACTS); `format` chooses md, html or all for the prose
    documents (machine formats, CSV/JSONL and figures are always written for the chosen artifacts);
    `spec` re-reads hand events and [disclosure] from an incident.toml into the case first."""
    if format not in FORMATS:
        raise KvirError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}", key="--format")
    chosen = list(dict.fromkeys(only or ARTIFACTS))
    bad = [n for n in chosen if n not in ARTIFACTS]
    if bad:
        raise KvirError(f"unknown report(s) {', '.join(bad)}; expected any of {', '.join(ARTIFACTS)}", key="--only")
    if isinstance(case, Case):
        return _report(case, chosen, format, spec)
    c = Case.open(case, staged=True)     # rendered beside the case, swapped in when complete
    staging = c.path
    try:
        result = _report(c, chosen, format, spec)
        c.commit()
        return replace(result, out_dir=c.path / result.out_dir.relative_to(staging))
    finally:
        c.close()


def _report(case: Case, chosen: list[str], fmt: str, spec: str | Path | None) -> ReportResult:
    from kvir.report.figures import all_figures

    warnings = ensure_spec_facts(case, spec)
    model = build_model(case, warnings=warnings)
    store_timeline(case, model.timeline)
    out = case.path / "reports"
    out.mkdir(parents=True, exist_ok=True)
    figs = {f.name: f for f in all_figures(model)}
    r = _Renderer(model, out, fmt, figs)
    docs: list[dict[str, Any]] = []
    for name in chosen:
        if name in ("csaf", "osv", "cve"):
            getattr(r, name)()
    validations = _carry_validations(out, r.validations, chosen)
    for v in validations:
        docs.append({"title": v.standard, "path": v.document, "valid": v.valid, "validator": v.validator})
    if "timeline" in chosen:
        r.timeline()
    if "postmortem" in chosen:
        r.postmortem()
    if "public-report" in chosen:
        r.public_report()
    if "advisory" in chosen:
        r.advisory(docs)
    if "notices" in chosen:
        r.notices()
    if "gdpr" in chosen:
        r.gdpr()
    if "figures" in chosen:
        r.figures()
    for v in r.validations:
        if v.valid is False:
            model.warnings.append(f"{v.document} FAILED validation ({v.validator}): {len(v.errors)} error(s), "
                                  f"see {v.document.removesuffix('.invalid.json')}.errors.txt")
        elif v.valid is None:
            model.warnings.append(f"{v.document} was not validated: {v.validator}")

    case.manifest["report"] = {"generated_at": r.gen_at, "only": chosen, "format": fmt,
                               "artifacts": len(r.artifacts), "warnings": model.warnings}
    case.save_manifest()
    case.con.execute("CHECKPOINT")

    artifacts = _carry_over(out, r.artifacts)
    index = r.html_env.get_template("index.html.j2").render(
        m=model, gen=r.gen(), css=r.css, figs=figs, doc_kind="Reports", doc_title=model.facts.title,
        groups=_link_groups(artifacts), validations=validations, warnings=model.warnings)
    (out / "index.html").write_text(index, encoding="utf-8")
    _write_manifest(case, out, model, artifacts, validations, chosen, fmt, r.gen_at)
    return ReportResult(out, artifacts, r.validations, model.warnings, model)


GROUP_ORDER = ("Public", "Coordinated disclosure", "Customer notices (affected accounts)",
               "Customer notices (source accounts)", "Regulator", "Internal", "Timeline", "Figures")


def _link_groups(artifacts: list[Artifact]) -> list[tuple[str, list[dict[str, Any]]]]:
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


def _previous_manifest(out: Path) -> dict[str, Any]:
    p = out / "manifest.json"
    try:
        return json.loads(p.read_text()) if p.exists() else {}
    except json.JSONDecodeError:
        return {}


def _carry_over(out: Path, written: list[Artifact]) -> list[Artifact]:
    """This run's artifacts plus those of earlier runs (with --only) whose files are still there unchanged."""
    seen = {a.path for a in written}
    keep = list(written)
    for a in _previous_manifest(out).get("artifacts", []):
        p = out / a["path"]
        if a["path"] in seen or a["path"] == "index.html" or not p.exists() or sha256_file(p) != a.get("sha256"):
            continue
        keep.append(Artifact(a["path"], a["group"], a["title"], a["kind"], a.get("run", "")))
        seen.add(a["path"])
    return keep


def _carry_validations(out: Path, now: list[Validation], chosen: list[str]) -> list[Validation]:
    docs = {v.document for v in now}
    keep = list(now)
    for v in _previous_manifest(out).get("validations", []):
        if v["document"] not in docs and (out / v["document"]).exists():
            keep.append(Validation(**v))
    return keep


def _write_manifest(case: Case, out: Path, model: IncidentModel, artifacts: list[Artifact],
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
        "kvir_version": __version__, "generated_at": gen_at, "case": str(case.path), "only": chosen, "format": fmt,
        "artifacts": entries,
        "validations": [asdict(v) for v in validations],
        "inputs": case_input_hashes(case),
        "queries": [{"query": q.file, "sha256": q.sha256, "params": q.params, "rows": q.rows} for q in model.queries],
        "numbers": numbers,
        "stages": [asdict(s) for s in model.stages],
        "warnings": model.warnings,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
