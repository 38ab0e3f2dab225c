"""Writing each artifact (see kvir.report.artifacts): one method per artifact kind, every file recorded
as an Artifact. Prose documents are Markdown from their template; their HTML form is that Markdown
converted (raw HTML disabled) inside document.html.j2. Machine documents are parsed, validated and
written with sorted keys; one that fails validation is written as *.invalid.json next to its errors.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

from markupsafe import Markup

from kvir import __version__
from kvir.core.errors import KvirError
from kvir.report.artifacts import PROSE_HTML, Artifact
from kvir.report.machine import MachineValues, csaf_filename, machine_values
from kvir.report.markup import css, environments, md_escape, md_to_html, slug
from kvir.report.model import IncidentModel
from kvir.report.plugin import report_part
from kvir.report.tables import timeline_csv, timeline_jsonl, to_csv
from kvir.report.times import iso
from kvir.report.validate import VALIDATORS, Validation
from kvir.report.wrap import unbreakable

DISCLOSURE = "Coordinated disclosure"


class Renderer:
    def __init__(self, model: IncidentModel, out: Path, fmt: str, figs: dict[str, Any], template_loader=None):
        self.m, self.out, self.fmt, self.figs = model, out, fmt, figs
        self.part = report_part(model.facts.mechanism.name)
        self.html_env, self.md_env, self.json_env = environments(template_loader, model.facts.mechanism.folder)
        self.css = css()
        self.artifacts: list[Artifact] = []
        self.validations: list[Validation] = []
        self.docs: list[dict[str, Any]] = []      # the machine documents written, for the advisory's list
        self.gen_at = iso(model.generated_at)
        self._x: MachineValues | None = None

    @property
    def x(self) -> MachineValues:
        if self._x is None:
            self._x = machine_values(self.m)
        return self._x

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
            p.write_text(unbreakable(data) if rel.endswith(".html") else data, encoding="utf-8")
        self.artifacts.append(Artifact(rel, group, title, kind, self.gen_at))
        return p

    def figure(self, html: bool, root: str = "") -> Callable[[str], Markup]:
        def fig(name: str) -> Markup:
            f = self.figs[name]
            if not f.drawn:               # nothing to show: the page says why, never an empty chart
                return Markup(f"**{md_escape(f.title)}.** *{md_escape(f.caption)}*")
            src = f.data_uri if html else root + f.file
            return Markup(f"![{md_escape(f.title)}]({src})\n\n*{md_escape(f.caption)}*")
        return fig

    def prose(self, template: str, stem: str, group: str, title: str, kind_title: str, link_title: str = "",
              **ctx: Any) -> None:
        """A prose document: Markdown from its template; HTML = that Markdown converted, in document.html.j2."""
        root = "../" * stem.count("/")
        t = self.md_env.get_template(template)
        if self.md:
            text = t.render(m=self.m, gen=self.gen(root), figure=self.figure(False, root), **ctx)
            self.write(f"{stem}.md", text, group, link_title or title, "Markdown")
        if self.html:
            text = t.render(m=self.m, gen=self.gen(root), figure=self.figure(True, root), **ctx)
            text = re.sub(r"\A\s*# [^\n]*\n", "", text)   # the page header already shows the title
            page = self.html_env.get_template(PROSE_HTML).render(
                m=self.m, gen=self.gen(root), css=self.css, doc_kind=kind_title, doc_title=title,
                body=md_to_html(text))
            self.write(f"{stem}.html", page, group, link_title or title, "HTML")

    # -- artifacts (names as in kvir.report.artifacts.KINDS) ---------------------------------------------
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
        group = "Customer notices (affected accounts)"
        for a in self.m.notifiable_accounts:
            stem = f"notices/affected/{slug(a.account_id)}"
            title = f"Notice to account {a.account_id}"
            link = f"{a.account_id}" + (f" ({a.label})" if a.label else "") + f": {a.affected:,} affected"
            self.prose("notice_affected.md.j2", stem, group, title, "Processor-to-controller notice",
                       link_title=link, a=a)
            self.write(stem + ".csv", to_csv(["account_id", "request_id", "ts", "prompt_tokens", "http_status"],
                                             [[a.account_id, r.request_id, iso(r.ts), r.prompt_tokens, r.http_status]
                                              for r in a.responses]), group, link, "CSV")
        group = "Customer notices (source accounts)"
        # candidate sources the triage names (the mechanism's notice), while no replay says whose data it was
        notice = self.part.candidate_notice
        for c in (self.m.candidate_sources if self.m.replay is None and notice is not None else []):
            stem = f"notices/source/{slug(c.account_id)}"
            link = f"{c.account_id}: named as a possible source of {c.responses:,} response(s)"
            self.prose(notice.template, stem, group, f"Notice to account {c.account_id}: {notice.subject}",
                       "Processor-to-controller notice", link_title=link, c=c)
        if self.m.replay is None:
            return
        for s in self.m.replay.sources:
            stem = f"notices/source/{slug(s.account_id)}"
            title = f"Notice to account {s.account_id}: its data reached another response"
            link = f"{s.account_id}: {s.source_requests:,} request(s) reached {s.reader_responses:,} response(s)"
            self.prose("notice_source.md.j2", stem, group, title, "Processor-to-controller notice",
                       link_title=link, s=s)
            self.write(stem + ".csv", to_csv(["account_id", "request_id", "ts", "reached_responses", "tokens"],
                                             [[s.account_id, r.request_id, iso(r.ts), r.reached_responses, r.tokens]
                                              for r in s.requests]), group, link, "CSV")

    def machine(self, which: str, template: str, rel: str, title: str, standard: str) -> None:
        text = self.json_env.get_template(template).render(m=self.m, x=self.x)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:   # a template bug: never write it as if it were a document
            raise KvirError(f"template {template} produced invalid JSON: {e}") from None
        body = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        check = VALIDATORS[which](json.loads(body))   # validate exactly what is written (keys sorted)
        if check.valid is False:
            bad = rel.removesuffix(".json") + ".invalid.json"
            self.write(bad, body, DISCLOSURE, title + " (FAILED validation)", "JSON")
            self.write(rel.removesuffix(".json") + ".errors.txt", "\n".join(check.errors) + "\n", DISCLOSURE,
                       title + " (validation errors)", "text")
            rel = bad
        else:
            self.write(rel, body, DISCLOSURE, title, "JSON")
        self.validations.append(check.for_document(rel, standard))

    def csaf(self) -> None:
        if self.m.defect is not None:
            self.machine("csaf", "csaf_advisory.json.j2", "csaf/" + csaf_filename(self.x.advisory_tracking_id),
                         "CSAF 2.0 security advisory (engine defect)", "CSAF 2.0 csaf_security_advisory")
        self.machine("csaf", "csaf_incident.json.j2", "csaf/" + csaf_filename(self.x.incident_tracking_id),
                     "CSAF 2.0 incident response (provider incident)", "CSAF 2.0 csaf_security_incident_response")

    def osv(self) -> None:
        self.machine("osv", "osv.json.j2", f"osv/{re.sub(r'[^A-Za-z0-9._-]+', '_', self.x.osv_id)}.json",
                     "OSV record (engine defect)", "OSV 1.7")

    def cve(self) -> None:
        self.machine("cve", "cve_cna.json.j2", "cve/cna_container.json", "CVE 5.1 CNA container draft (engine defect)",
                     "CVE 5.1 cnaPublishedContainer")

    def advisory(self) -> None:
        assert self.m.defect is not None
        self.prose("advisory.md.j2", "advisory", DISCLOSURE,
                   f"Security advisory: {self.m.defect.package} KV-cache exposure", "Coordinated-disclosure advisory",
                   docs=self.docs)

    def figures(self) -> None:
        for f in self.figs.values():
            if f.drawn:                   # a figure with nothing to show is its caption on the pages alone
                self.write(f.file, f.png, "Figures", f.title, "PNG")
