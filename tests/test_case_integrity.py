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
from kvir.case.writer import MARKER, Writer, is_case, lock_path
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
    assert is_case(case)
    return n


@pytest.mark.slow   # several SIGKILL trials, ~25 s: its own step in .ci/run (pytest -m slow)
def test_a_killed_triage_leaves_the_old_case_whole_or_the_new_one(fleets, tmp_path):
    case = tmp_path / "case"
    subprocess.run(_triage_cmd(fleets / "small", case), check=True, timeout=600)
    old = _state(case)
    rng = random.Random(7)
    outcomes, killed = [], []
    for trial in range(6):
        proc = subprocess.Popen(_triage_cmd(fleets / "big", case), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 6.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        n = _state(case)                       # readable and consistent, every time
        outcomes.append(n)
        assert n in (old, _big_count(fleets)), (trial, n)
        # what killed writers leave beside the case is their own staging only (the next writer clears it)
        killed.append(proc.pid)
        left = {p.name for p in tmp_path.glob(".case.kvir-*-*")}
        assert left <= {f".case.kvir-{k}-{pid}" for pid in killed for k in ("new", "old")}, left
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


@pytest.mark.slow   # ~5-9 s on 2 cores: its own step (pytest -m slow), keeping the default suite under 5 minutes
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


@pytest.mark.slow   # ~5-9 s on 2 cores: its own step (pytest -m slow), keeping the default suite under 5 minutes
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


def _interrupt(cmd: list[str], case: Path, when: float | None = None) -> subprocess.CompletedProcess:
    """Run `cmd`; send SIGINT (Ctrl-C) once its staging folder beside `case` exists (the run is writing), or
    after `when` seconds."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while proc.poll() is None and time.monotonic() - t0 < 120:
        if when is not None and time.monotonic() - t0 >= when:
            break
        if when is None and list(case.parent.glob(f".{case.name}.kvir-new-{proc.pid}")):
            break
        time.sleep(0.02)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _one_interrupt_line(res: subprocess.CompletedProcess) -> None:
    assert res.returncode == 130, (res.returncode, res.stderr[-2000:])
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvir: interrupted"), res.stderr[-2000:]


def test_ctrl_c_in_triage_and_report_is_one_line_exit_130_and_the_old_case(fleets, tmp_path):
    """Issue #26 item 10: Ctrl-C while a run writes the case: one line, exit 130, the old case whole, and no
    staging folder left (on main: 100-line tracebacks, or SIGABRT)."""
    case = tmp_path / "case"
    subprocess.run(_triage_cmd(fleets / "small", case), check=True, timeout=600)
    old = _state(case)
    res = _interrupt(_triage_cmd(fleets / "big", case), case)
    _one_interrupt_line(res)
    assert f"{case} left as it was" in res.stderr
    assert _state(case) == old and not list(tmp_path.glob(".case.kvir-new-*"))
    res = _interrupt([*KVIR, "report", "--case", str(case), "-q"], case)
    _one_interrupt_line(res)
    assert _state(case) == old and not (case / "reports").exists() and not list(tmp_path.glob(".case.kvir-new-*"))


@pytest.mark.slow   # SIGINT at random points of triage, report and the demo, ~1 min: .ci/run's slow step
def test_ctrl_c_at_random_points_leaves_the_old_case_or_the_new_one(fleets, tmp_path):
    case = tmp_path / "case"
    subprocess.run(_triage_cmd(fleets / "small", case), check=True, timeout=600)
    old = _state(case)
    rng = random.Random(11)
    for trial in range(5):
        res = _interrupt(_triage_cmd(fleets / "big", case), case, when=rng.uniform(0.3, 8.0))
        if res.returncode != 0:
            _one_interrupt_line(res)
        assert _state(case) in (old, _big_count(fleets)), trial
        assert not list(tmp_path.glob(".case.kvir-new-*"))
    demo = tmp_path / "demo"
    for trial in range(3):
        res = _interrupt([*KVIR, "demo", "-o", str(demo), "-n", "4000", "-q"], demo / "case", when=rng.uniform(1.0, 20.0))
        if res.returncode != 0:
            _one_interrupt_line(res)
        if (demo / "case").exists():
            assert is_case(demo / "case") and (demo / "case" / "case.duckdb").exists()


def test_out_refuses_a_folder_whose_manifest_json_is_not_kvirs(fleets, tmp_path):
    """Issue #26 item 1: a web app's folder holds a manifest.json: it is not a case, and is not replaced."""
    app = tmp_path / "webapp"
    write_files = {"manifest.json": '{"name": "My App", "start_url": "/"}\n', "index.html": "<h1>mine</h1>\n"}
    app.mkdir()
    for name, text in write_files.items():
        (app / name).write_text(text)
    res = subprocess.run(_triage_cmd(fleets / "small", app), capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "not a kvir case" in res.stderr
    assert {p.name: p.read_text() for p in app.iterdir()} == write_files
    # a case.duckdb beside it does not make it a case either, whoever wrote it
    duckdb.connect(str(app / "case.duckdb")).close()
    res = subprocess.run(_triage_cmd(fleets / "small", app), capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and (app / "index.html").exists()


def test_a_case_made_before_markers_still_opens_and_gains_one(fleets, tmp_path):
    """Cases written by earlier kvir (no kvir-case.json) are recognised by kvir's own manifest beside a DuckDB
    database; the next write adds the marker."""
    case = tmp_path / "case"
    kvir.triage(fleets / "small" / "incident.toml", out=case).case.close()
    (case / MARKER).unlink()
    assert is_case(case)
    with kvir.open_case(case, read_only=True) as c:
        assert c.df("SELECT count(*) AS n FROM affected")["n"][0] == 155
    kvir.audit.audit(sorted((fleets / "small").glob("engine/*/server.log")),
                     inventory=fleets / "small" / "inventory.toml", case=case)
    assert json.loads((case / MARKER).read_text())["kvir_case"] == 1


@pytest.mark.slow   # ~5-9 s on 2 cores: its own step (pytest -m slow), keeping the default suite under 5 minutes
def test_out_as_a_symlink_to_a_case_updates_the_case_it_points_to(fleets, tmp_path):
    """Issue #26 item 7: the real folder is locked and swapped; the link stays a link to it; nothing dangles."""
    real, link = tmp_path / "cases" / "real", tmp_path / "link"
    kvir.triage(fleets / "small" / "incident.toml", out=real).case.close()
    link.symlink_to(real, target_is_directory=True)
    held = Writer.begin(link, fresh=True)          # the lock is the real folder's, whichever path names it
    try:
        with pytest.raises(KvirError, match="being written by another kvir"):
            Writer.begin(real, fresh=True)
    finally:
        held.abort()
    subprocess.run(_triage_cmd(fleets / "big", link), check=True, timeout=600)
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert _state(real) == _big_count(fleets)
    leftovers = [p for p in (*tmp_path.iterdir(), *real.parent.iterdir()) if p.name.startswith(".") and "kvir-" in p.name]
    assert {p.name for p in leftovers} <= {".real.kvir-lock"}, leftovers
    assert not [p for p in tmp_path.rglob("*") if p.is_symlink() and not p.exists()]   # no dangling link


CORRUPTIONS = {
    "empty database": lambda c: (c / "case.duckdb").write_bytes(b""),
    "truncated database": lambda c: os.truncate(c / "case.duckdb", 4096),
    "zeroed header": lambda c: _overwrite(c / "case.duckdb", 0, bytes(12288)),
    "flipped header block": lambda c: _overwrite(c / "case.duckdb", 5000, bytes(range(64))),
    "garbage over its data": lambda c: _overwrite(c / "case.duckdb", 1 << 16,
                                                  b"\xa5" * ((c / "case.duckdb").stat().st_size - (1 << 17))),
    "broken manifest": lambda c: (c / "manifest.json").write_text('{"kvir_version": '),
    "manifest not an object": lambda c: (c / "manifest.json").write_text("[1, 2]"),
}


def _overwrite(path: Path, at: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(data)


@pytest.fixture(scope="module")
def pristine(fleets, tmp_path_factory):
    case = tmp_path_factory.mktemp("pristine") / "case"
    kvir.triage(fleets / "small" / "incident.toml", out=case).case.close()
    return case


@pytest.mark.parametrize("damage", list(CORRUPTIONS))
def test_a_damaged_case_file_is_one_line_naming_it(pristine, tmp_path, damage):
    """Issue #26 item 11: report, replay and audit on a case whose database or manifest is damaged end with one
    line naming the file (never a staging path), exit 2, and the case as it was (on main: a 70-line traceback)."""
    case = tmp_path / "case"
    shutil.copytree(pristine, case)
    CORRUPTIONS[damage](case)
    before = {p.name: p.read_bytes() for p in case.iterdir() if p.is_file()}
    what = "manifest.json" if "manifest" in damage else "case.duckdb"
    cmds = [["report", "--case", str(case), "-q"]]
    if damage in ("flipped header block", "broken manifest"):      # replay imports torch: two kinds suffice
        cmds.append(["replay", "--case", str(case), "-q"])
    for cmd in cmds:
        res = subprocess.run([*KVIR, *cmd], capture_output=True, text=True, timeout=600)
        assert res.returncode == 2, (cmd, res.stderr[-3000:])
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "damaged" in lines[0] and str(case / what) in lines[0], (cmd, res.stderr)
        assert "kvir-new" not in lines[0]
    assert {p.name: p.read_bytes() for p in case.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("damage", ["zeroed header", "garbage over its data", "broken manifest"])
def test_triage_over_a_damaged_case_replaces_it_and_says_what_was_lost(pristine, fleets, tmp_path, damage):
    """Triage is how a damaged case is recovered: it writes a new one, and says that nothing of the old one
    (audit, replays) could be kept and why."""
    case = tmp_path / "case"
    shutil.copytree(pristine, case)
    CORRUPTIONS[damage](case)
    res = subprocess.run(_triage_cmd(fleets / "small", case), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _state(case) == json.loads((fleets / "small" / "ground_truth" / "summary.json").read_text())["requests"]
    if "manifest" not in damage:
        said = " ".join(res.stderr.split())        # the terminal wraps long lines at spaces
        assert "removed from the previous case: everything the previous case held: its case.duckdb cannot be read" \
            in said
