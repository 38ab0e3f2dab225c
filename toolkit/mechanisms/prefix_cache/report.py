"""The prefix-cache mechanism's report part (hookspec: kvir.report.plugin.ReportPart): its story over the
[prefix_cache] params, the triage's verdict counts and the audit's starts (prefix caching and the salt per
start); its affected table holds possibly affected responses beside the affected ones; its triage names
candidate source tenants, each notified (templates/mechanisms/prefix_cache/) while no replay settles whose
blocks a response was served from. Its own queries: queries/mechanisms/prefix_cache/report/. kvir ships no
knowledge of its engine defects (an advisory comes from [defect] alone), and no prompt length matters to it.
"""
from __future__ import annotations

from kvir.case.store import Case
from kvir.mechanisms.prefix_cache import MECHANISM
from kvir.mechanisms.prefix_cache.story import PrefixCacheStory, PrefixFacts
from kvir.report.model import Facts
from kvir.report.plugin import CandidateNotice, PromptLimits, StoryInputs
from kvir.report.read import EvidenceNames, rows
from kvir.report.records import CandidateSource, from_row
from kvir.report.times import utc

FOLDER = MECHANISM.folder           # its queries: queries/mechanisms/<folder>/report/


class PrefixCacheReport:
    shows_node_fixes = False       # pool-vs-context restarts are not this mechanism's evidence
    shows_runtime_indicators = False
    defect_knowledge = None
    candidate_notice = CandidateNotice("notice_prefix_source.md.j2", "the shared prefix cache")
    templates = {"notices": ("notice_prefix_source.md.j2", "notice_responses.md.j2")}

    def _counts(self, case: Case) -> dict:
        """The triage's counts beside `affected` ({} for a case triaged before they were recorded)."""
        if "cannot_decide" not in case.columns("triage_summary"):
            return {}
        return rows(case, "counts", mechanism=FOLDER)[0]

    def possibly_affected(self, case: Case) -> int:
        if "possibly_affected" not in case.columns("triage_summary"):
            return 0
        return int(rows(case, "counts", mechanism=FOLDER)[0]["possibly_affected"] or 0)

    def candidate_sources(self, case: Case) -> list[CandidateSource]:
        return [from_row(CandidateSource, r, responses=int(r["responses"]), affected=int(r["affected"]),
                         first=utc(r["first_ts"]), last=utc(r["last_ts"]))
                for r in rows(case, "candidate_sources", mechanism=FOLDER)]

    def prompt_limits(self, facts: Facts) -> PromptLimits:
        return PromptLimits()

    def story(self, inputs: StoryInputs) -> PrefixCacheStory:
        case = inputs.case
        c = self._counts(case)
        audited = case.has("node_configs") and "salt_honoured" in case.columns("node_configs")
        names = EvidenceNames.of(case)
        starts = tuple({**r, "evidence": names.evidence(r["evidence_file"], r["evidence_line"])}
                       for r in rows(case, "starts", mechanism=FOLDER)) if audited else ()
        facts = PrefixFacts(inputs.facts.params, int(c.get("possibly_affected") or 0),
                            int(c.get("cannot_decide") or 0), starts)
        return PrefixCacheStory(inputs.engine, inputs.defect, inputs.no_advisory, inputs.ev, pc=facts)


PART = PrefixCacheReport()
