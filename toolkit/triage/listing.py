"""`kvir triage --list-models`: the model names the logs carry, without a spec of one's own."""
from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

from kvir.rules.trigger import Trigger
from kvir.spec.model import IncidentSpec, load_spec
from kvir.triage.run import triage
from kvir.triage.summary import TriageOptions


def list_models(paths: list, incident=None, **options: Any) -> list[dict[str, Any]]:
    """The model names the logs carry, with counts, without a spec of one's own: the inputs are read as a
    triage would read them (the spec's [[sources]] and window when one is given, else every time), into a
    throw-away case. What `kvir triage --list-models` prints."""
    base = load_spec(incident) if incident is not None and Path(incident).exists() else None
    utc = dt.timezone.utc
    spec = IncidentSpec(
        id="list-models", title="model names in the logs", models=("\u0000 none \u0000",),
        window_start=base.window_start if base else dt.datetime(1990, 1, 1, tzinfo=utc),
        window_end=base.window_end if base else dt.datetime(2100, 1, 1, tzinfo=utc),
        mechanism=base.mechanism if base else "oversized-prompt",   # transitional (issue 30): the default's name
        params=base.params if base else Trigger(1, 1),
        sources=base.sources if base else (), path=base.path if base else None)
    with tempfile.TemporaryDirectory(prefix="kvir-models-") as tmp:
        r = triage(spec, list(paths), out=Path(tmp) / "case", options=TriageOptions.of(**options))
        try:
            names = [x for x in r.summary["models_seen"]["names"] if not x.get("matched")]
        finally:
            r.case.close()
    return sorted(({"name": x["name"], "requests": x["requests"]} for x in names),
                  key=lambda x: (-x["requests"], x["name"]))
