"""A case is never half-written: one writer at a time, the new state swapped in only when complete, a killed
run leaving the previous case whole, and full / read-only / forbidden disks ending with one line, exit 2."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

import kvir
import kvir.audit
from kvir.case.writer import Writer, lock_path
from kvir.core.errors import KvirError

KVIR = [sys.executable, "-m", "kvir.cli.app"]


@pytest.fixture(scope="module")
def fleets(tmp_path_factory):
    """Two reference fleets of different sizes: a case of either is recognisable by its request count."""
    root = tmp_path_factory.mktemp("fleets")
    kvir.simulate(root / "small", requests=4_000, seed=5)
    kvir.simulate(root / "big", requests=40_000, seed=6)
    return root


def _triage_cmd(fleet: Path, out: Path) -> list[str]:
    return [*KVIR, "triage", "-i", str(fleet / "incident.toml"), "-o", str(out), "-q"]


def _state(case: Path) -> int:
    """The case's request count, checked to agree across the database, summary.json, manifest.json and
    the exports: a mix of two runs fails here."""
    con = duckdb.connect(str(case / "case.duckdb"), read_only=True)
    try:
        n = con.execute("SELECT count(*) FROM requests").fetchone()[0]
        affected = con.execute("SELECT count(*) FROM affected").fetchone()[0]
        created = con.execute("SELECT count(*) FROM sources").fetchone()[0]
    finally:
        con.close()
    summary = json.loads((case / "summary.json").read_text())["summary"]
    manifest = json.loads((case / "manifest.json").read_text())
    assert summary["requests_total"] == n == manifest["triage"]["summary"]["requests_total"]
    assert len((case / "affected.csv").read_text().splitlines()) == affected + 1
    assert len(manifest["inputs"]) == created
    assert not list(case.parent.glob(f".{case.name}.kvir-new-*")) or True   # staging may remain until the next writer
    return n


@pytest.mark.slow   # several SIGKILL trials, ~25 s: its own step in .ci/run (pytest -m slow)
def test_a_killed_triage_leaves_the_old_case_whole_or_the_new_one(fleets, tmp_path):
    case = tmp_path / "case"
    subprocess.run(_triage_cmd(fleets / "small", case), check=True, timeout=600)
    old = _state(case)
    rng = random.Random(7)
    outcomes = []
    for trial in range(6):
        proc = subprocess.Popen(_triage_cmd(fleets / "big", case), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 6.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        n = _state(case)                       # readable and consistent, every time
        outcomes.append(n)
        assert n in (old, _big_count(fleets)), (trial, n)
    # the next writer clears what killed ones left beside the case, and completes
    subprocess.run(_triage_cmd(fleets / "small", case), check=True, timeout=600)
    assert _state(case) == old
    assert not list(tmp_path.glob(".case.kvir-new-*")) and not list(tmp_path.glob(".case.kvir-old-*"))


_BIG: dict[str, int] = {}


def _big_count(fleets: Path) -> int:
    if "n" not in _BIG:
        _BIG["n"] = json.loads((fleets / "big" / "ground_truth" / "summary.json").read_text())["requests"]
    return _BIG["n"]


def test_a_second_writer_is_refused_at_once_naming_the_holder(fleets, tmp_path):
    case = tmp_path / "case"
    held = Writer.begin(case, fresh=True)
    try:
        t0 = time.monotonic()
        res = subprocess.run(_triage_cmd(fleets / "small", case), capture_output=True, text=True, timeout=120)
        assert time.monotonic() - t0 < 60
        assert res.returncode == 2
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and f"pid {os.getpid()}" in lines[0] and "being written by another kvir" in lines[0]
        with pytest.raises(KvirError, match=f"pid {os.getpid()}, started 20"):
            kvir.triage(fleets / "small" / "incident.toml", out=case)
    finally:
        held.abort()
    assert not case.exists() and lock_path(case).exists()       # nothing half-made; the lock file stays, unlocked
    r = kvir.triage(fleets / "small" / "incident.toml", out=case)
    r.case.close()
    assert r.summary["requests_total"] == _state(case)


def test_out_refuses_a_folder_that_is_not_a_case(fleets, tmp_path):
    mine = tmp_path / "documents"
    (mine / "accounts.csv").parent.mkdir()
    (mine / "accounts.csv").write_text("my own file\n")
    res = subprocess.run(_triage_cmd(fleets / "small", mine), capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "not a kvir case and not empty" in res.stderr
    assert (mine / "accounts.csv").read_text() == "my own file\n"


def test_a_failed_run_keeps_the_old_case(fleets, tmp_path):
    case = tmp_path / "case"
    kvir.triage(fleets / "small" / "incident.toml", out=case).case.close()
    old = _state(case)
    bad = tmp_path / "broken.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b" + b"\x08\x00" + b"junk" * 100)       # a gzip header over garbage, past the sniff
    spec = tmp_path / "incident.toml"
    spec.write_text((fleets / "small" / "incident.toml").read_text().split("[[sources]]")[0])
    with pytest.raises(KvirError):
        kvir.triage(spec, [bad], out=case, format="sglang-json", source_tz="UTC")
    assert _state(case) == old


def _mount_tmpfs(where: Path, size: str, ro: bool = False) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if ro else "")
    return subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], capture_output=True).returncode == 0


@pytest.fixture
def small_disk(tmp_path):
    d = tmp_path / "disk"
    if os.geteuid() != 0 or not _mount_tmpfs(d, "3M"):
        pytest.skip("needs root and mount(8) to make a small tmpfs (CI runs as root)")
    yield d
    subprocess.run(["umount", "-l", str(d)], check=False)


def test_a_full_disk_ends_with_one_line_and_leaves_the_old_case(fleets, small_disk):
    case = small_disk / "case"
    first = subprocess.run(_triage_cmd(fleets / "small", case), capture_output=True, text=True, timeout=600)
    if first.returncode == 0:
        old = _state(case)
    else:
        old = None
        assert first.returncode == 2 and len(first.stderr.strip().splitlines()) == 1
    res = subprocess.run(_triage_cmd(fleets / "big", case), capture_output=True, text=True, timeout=600)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvir: ") and "space" in lines[0].lower(), res.stderr
    if old is not None:
        assert _state(case) == old


def test_a_read_only_folder_ends_with_one_line_and_the_case_stays_readable(fleets, tmp_path):
    ro = tmp_path / "ro"
    case = ro / "case"
    ro.mkdir()
    kvir.triage(fleets / "small" / "incident.toml", out=case).case.close()
    if os.geteuid() != 0 or subprocess.run(["mount", "--bind", str(ro), str(ro)], capture_output=True).returncode:
        pytest.skip("needs root and mount(8) for a read-only bind mount (CI runs as root)")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
        res = subprocess.run(_triage_cmd(fleets / "small", case), capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and "read-only file system" in res.stderr
        with kvir.open_case(case, read_only=True) as c:          # the case is still readable
            assert c.df("SELECT count(*) AS n FROM affected")["n"][0] == 155
        # and its documents render elsewhere, reading the case only
        out = tmp_path / "elsewhere"
        rep = subprocess.run([*KVIR, "report", "--case", str(case), "--out", str(out), "-q"], capture_output=True,
                             text=True, timeout=600)
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout.strip() == str(out / "index.html") and (out / "index.html").exists()
        assert "155" in (out / "public_report.md").read_text()
        assert not (case / "reports").exists()
        assert subprocess.run([*KVIR, "report", "--case", str(case), "--out", str(out), "-q", "--incident",
                               str(fleets / "small" / "incident.toml")], capture_output=True, text=True).returncode == 2
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=False)


def test_permission_denied_ends_with_one_line(fleets):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run as another user")
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="kvir-perm-"))
    try:
        os.chmod(base, 0o755)                          # readable by everyone, writable by root only
        shutil.copytree(fleets / "small", base / "fleet")
        for d, _, files in os.walk(base):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(Path(d) / f, 0o644)
        res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              *_triage_cmd(base / "fleet", base / "case")], capture_output=True, text=True, timeout=120)
        assert res.returncode == 2, res.stderr
        assert res.stderr.count("\n") == 1 and "permission denied" in res.stderr.lower(), res.stderr
        assert str(base) in res.stderr                 # names the path
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_case_holds_no_empty_folders_and_no_spill_space(fleets, tmp_path):
    case = tmp_path / "case"
    kvir.triage(fleets / "small" / "incident.toml", out=case, memory_limit="1GB").case.close()
    kvir.audit.audit(sorted((fleets / "small").glob("engine/*/server.log")),
                     inventory=fleets / "small" / "inventory.toml", case=case)
    empty = [str(d.relative_to(case)) for d, subdirs, files in os.walk(case) for d in [Path(d)] if not subdirs and not files]
    assert not empty, empty
    assert not (case / "tmp").exists()
    assert not list(tmp_path.glob(".case.kvir-*-*"))        # no staging or old state left beside it
