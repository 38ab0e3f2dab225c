"""The package layout, the README's promise, and what `kvir triage` must not import."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_python_package_folder_is_listed_in_pyproject():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    mapping = cfg["package-dir"]
    found = set()
    for name, folder in mapping.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    assert found <= listed, f"packages missing from pyproject: {sorted(found - listed)}"


def test_triage_does_not_import_torch():
    # the mechanism registry loads every mechanism's parts (and each stage's hookspec) at every command
    code = ("import sys, kvir, kvir.triage.run, kvir.cli.app, kvir.sim.fleet, kvir.spec.mechanism as m; "
            "m.mechanisms(); assert 'torch' not in sys.modules, 'torch imported'; print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_readme_starts_with_two_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    block = lines[lines.index("```bash") + 1: lines.index("```", lines.index("```bash") + 1)]
    assert len(block) == 2
    assert block[0].endswith("kvir demo") and "pytest" in block[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q torch==2.13.0" in ci and "python -m pytest -q" in ci
