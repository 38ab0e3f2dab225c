"""kvir.report: the incident's documents, rendered from the case alone (see kvir.report.render)."""
from __future__ import annotations

from .model import IncidentModel, build_model
from .spec_facts import ensure_spec_facts, store_spec_facts

__all__ = ["IncidentModel", "build_model", "ensure_spec_facts", "store_spec_facts"]
