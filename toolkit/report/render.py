"""`kvir report`: render every document of the incident from the case into CASE_DIR/reports/.

The artifacts and their templates are listed in kvir.report.artifacts; each is written by
kvir.report.renderer; reports/manifest.json by kvir.report.manifest. The machine-readable documents are
validated while they are written (kvir.report.validate) and the index shows the result of each.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from kvir.case.spec_tables import ensure_spec_facts
from kvir.case.store import Case
from kvir.core.errors import KvirError
from kvir.report.artifacts import ARTIFACTS, FORMATS, INDEX_TEMPLATES, Artifact, kind
from kvir.report.build import build_model
from kvir.report.manifest import carry_over, carry_validations, link_groups, write_manifest
from kvir.report.model import IncidentModel
from kvir.report.renderer import Renderer
from kvir.report.timeline import store_timeline
from kvir.report.validate import Validation
from kvir.report.wrap import unbreakable



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


def report(case: Case | str | Path, only: list[str] | tuple[str, ...] | None = None, format: str = "all", *,
           spec: str | Path | None = None, template_loader=None, out: str | Path | None = None) -> ReportResult:
    """Render the incident's documents from the case into CASE_DIR/reports/ (see kvir.report.artifacts).

    `only` limits the artifacts (names in ARTIFACTS); `format` chooses md, html or all for the prose
    documents (machine formats, CSV/JSONL and figures are always written for the chosen artifacts);
    `spec` re-reads hand events and [disclosure] from an incident.toml into the case first. `out` renders
    into that folder instead, reading the case only (it may be read-only, e.g. evidence on write-once media);
    the timeline is then not stored back into the case."""
    if format not in FORMATS:
        raise KvirError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}", key="--format")
    chosen = list(dict.fromkeys(only or ARTIFACTS))
    bad = [n for n in chosen if n not in ARTIFACTS]
    if bad:
        raise KvirError(f"unknown report(s) {', '.join(bad)}; expected any of {', '.join(ARTIFACTS)}", key="--only")
    if isinstance(case, Case):
        return _report(case, chosen, format, spec, template_loader, Path(out) if out else None)
    if out is not None:
        with Case.open(case, read_only=True) as c:
            return _report(c, chosen, format, spec, template_loader, Path(out))
    c = Case.open(case, staged=True)     # rendered beside the case, swapped in when complete
    staging = c.path
    try:
        result = _report(c, chosen, format, spec, template_loader, None)
        c.commit()
        return replace(result, out_dir=c.path / result.out_dir.relative_to(staging))
    finally:
        c.close()


def _report(case: Case, chosen: list[str], fmt: str, spec: str | Path | None, template_loader,
            out: Path | None) -> ReportResult:
    from kvir.report.figures import all_figures

    warnings = ensure_spec_facts(case, spec)
    model = build_model(case, warnings=warnings)
    if not case.read_only:
        store_timeline(case, model.timeline)
    out = out or case.path / "reports"
    out.mkdir(parents=True, exist_ok=True)
    figs = {f.name: f for f in all_figures(model)}
    r = Renderer(model, out, fmt, figs, template_loader)
    kinds = [kind(n) for n in chosen]
    left_out = [k.name for k in kinds if k.engine_advisory and model.defect is None]
    kinds = [k for k in kinds if k.name not in left_out]
    for k in kinds:                   # machine documents first: the advisory lists their validation
        if k.machine:
            getattr(r, k.method)()
    validations = carry_validations(out, r.validations)
    r.docs = [{"title": v.standard, "path": v.document, "valid": v.valid, "validator": v.validator}
              for v in validations]
    for k in kinds:
        if not k.machine:
            getattr(r, k.method)()
    if left_out:
        model.warnings.append(f"not rendered: {', '.join(left_out)} (no engine defect in the case: see above)")
    for v in r.validations:
        if v.valid is False:
            model.warnings.append(f"{v.document} FAILED validation ({v.validator}): {len(v.errors)} error(s), "
                                  f"see {v.document.removesuffix('.invalid.json')}.errors.txt")
        elif v.valid is None:
            model.warnings.append(f"{v.document} was not validated: {v.validator}")

    if not case.read_only:
        case.manifest["report"] = {"generated_at": r.gen_at, "only": chosen, "format": fmt,
                                   "artifacts": len(r.artifacts), "warnings": model.warnings}
        case.save_manifest()
        case.con.execute("CHECKPOINT")

    artifacts = carry_over(out, r.artifacts)
    index = r.html_env.get_template(INDEX_TEMPLATES[0]).render(
        m=model, gen=r.gen(), css=r.css, figs=figs, doc_kind="Reports", doc_title=model.facts.title,
        groups=link_groups(artifacts), validations=validations, warnings=model.warnings)
    (out / "index.html").write_text(unbreakable(index), encoding="utf-8")
    write_manifest(case, out, model, artifacts, validations, chosen, fmt, r.gen_at)
    return ReportResult(out, artifacts, r.validations, model.warnings, model)
