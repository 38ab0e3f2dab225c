"""`kvir triage --list-models`: the model names the logs carry, without a spec of one's own."""
from __future__ import annotations

import dataclasses
import datetime as dt
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from kvir.spec.mechanism import default
from kvir.spec.model import load_spec, parse_spec
from kvir.spec.template import template
from kvir.triage.run import triage
from kvir.triage.summary import TriageOptions


def list_models(paths: list, incident=None, **options: Any) -> list[dict[str, Any]]:
    """The model names the logs carry, with counts, without a spec of one's own: the inputs are read as a
    triage would read them (the spec's [[sources]] and window when one is given, else every time), into a
    throw-away case. What `kvir triage --list-models` prints. Without a spec, the default mechanism's
    `kvir init` template stands in for one (its rule judges nothing: no model matches)."""
    utc = dt.timezone.utc
    if incident is not None and Path(incident).exists():
        base = load_spec(incident)
    else:
        base = dataclasses.replace(parse_spec(tomllib.loads(template(default().name))),
                                   window_start=dt.datetime(1990, 1, 1, tzinfo=utc),
                                   window_end=dt.datetime(2100, 1, 1, tzinfo=utc))
    spec = dataclasses.replace(base, id="list-models", title="model names in the logs", models=("\u0000 none \u0000",))
    with tempfile.TemporaryDirectory(prefix="kvir-models-") as tmp:
        r = triage(spec, list(paths), out=Path(tmp) / "case", options=TriageOptions.of(**options))
        try:
            names = [x for x in r.summary["models_seen"]["names"] if not x.get("matched")]
        finally:
            r.case.close()
    return sorted(({"name": x["name"], "requests": x["requests"]} for x in names),
                  key=lambda x: (-x["requests"], x["name"]))
