"""What `kvir report` can render: each artifact's name (what `--only` accepts), what it is, and the
templates it renders (tests/report/test_coverage.py checks this list against templates/ and the CLI help;
a mechanism's own templates, in templates/mechanisms/<folder>/, are listed by its report part:
kvir.report.plugin.ReportPart.templates).

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
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ArtifactKind:
    name: str                      # what `kvir report --only` accepts
    summary: str                   # one line: what it is
    templates: tuple[str, ...]     # the templates/ files it renders (none: figures are drawn by matplotlib)
    machine: bool = False          # a machine document: rendered (and validated) before the prose documents
    engine_advisory: bool = False  # describes the engine defect: rendered only when the case has one
                                   # (incident.toml [defect], or one kvir's tables match: kvir.report.defect)

    @property
    def method(self) -> str:
        """The kvir.report.renderer.Renderer method that writes it."""
        return self.name.replace("-", "_")


PROSE_HTML = "document.html.j2"    # the HTML shell of every prose document (its Markdown, converted)

KINDS: tuple[ArtifactKind, ...] = (
    ArtifactKind("timeline", "incident timeline as Markdown, HTML, CSV and Timesketch JSONL",
                 ("timeline.md.j2", "timeline.html.j2", "figure.html.j2")),
    ArtifactKind("postmortem", "internal post-mortem in Google SRE sections", ("postmortem.md.j2", PROSE_HTML)),
    ArtifactKind("public-report", "public incident report", ("public_report.md.j2", PROSE_HTML)),
    ArtifactKind("advisory", "coordinated-disclosure advisory for the engine defect", ("advisory.md.j2", PROSE_HTML),
                 engine_advisory=True),
    ArtifactKind("csaf", "CSAF 2.0 incident response (provider) and, with an engine defect, its security advisory",
                 ("csaf_advisory.json.j2", "csaf_incident.json.j2"), machine=True),
    ArtifactKind("osv", "OSV record for the engine defect", ("osv.json.j2",), machine=True, engine_advisory=True),
    ArtifactKind("cve", "CVE 5.1 CNA container draft for the engine defect", ("cve_cna.json.j2",), machine=True,
                 engine_advisory=True),
    ArtifactKind("notices", "one processor-to-controller notice per affected account and per source account",
                 ("notice_affected.md.j2", "notice_responses.md.j2", "notice_source.md.j2", PROSE_HTML)),
    ArtifactKind("gdpr", "GDPR Art. 33 notification draft with its 72-hour clock", ("gdpr_art33.md.j2", PROSE_HTML)),
    ArtifactKind("figures", "the figures as PNG files, which the HTML pages embed", ()),
)
# rendered on every run, whatever --only says (every HTML page extends base.html.j2)
INDEX_TEMPLATES = ("index.html.j2", "base.html.j2", "figure.html.j2")   # figure: one figure, or why not drawn

ARTIFACTS = tuple(k.name for k in KINDS)
FORMATS = ("md", "html", "all")


def kind(name: str) -> ArtifactKind:
    return next(k for k in KINDS if k.name == name)


def help_text() -> str:
    """The `--only` help of `kvir report`: every artifact, named."""
    return "Render only these (repeatable): " + ", ".join(k.name for k in KINDS) + "."


@dataclass
class Artifact:
    """One file written under reports/."""

    path: str          # relative to reports/
    group: str
    title: str
    kind: str          # Markdown, HTML, CSV, JSON ...
    run: str = ""      # generated_at of the run that wrote it
