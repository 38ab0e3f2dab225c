"""The package's shape: layers import only earlier layers, no import cycle (lazy and type-checking imports
included), no module over 400 lines; mechanisms sit in their own folders, after every stage, and the stages
reach them only through the registry (kvir.spec.mechanism), never by importing a mechanism's package nor by
naming one. Read from the source with `ast` and text, so nothing has to be imported."""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"toolkit": "kvir", "replay": "kvir.replay"}
# The flow of data, each layer importing only those before it (README "Architecture").
LAYERS = ("core", "rules", "spec", "case", "ingest", "audit", "triage", "confirm", "replay", "report", "probe", "serve",
          "preflight", "vex", "detect", "mechanisms", "sim", "cli")
MAX_LINES = 400
# Import cycles not yet taken apart, each named here so that removing one fails this test until the list
# shrinks with it (and adding one fails at once).
KNOWN_CYCLES: set[frozenset[str]] = set()
KNOWN_LONG: set[str] = set()
# A mechanism is a vertical slice: its package (kvir.mechanisms.<m>, toolkit/mechanisms/<m>/) may import any
# stage, and no module outside it imports it; the registry (kvir.spec.mechanism) loads the packages it lists
# by name. Imports from outside that issue 30's move has not yet removed, each named so that the list can only
# shrink; it ends empty.
TRANSITIONAL_IMPORTS: set[tuple[str, str]] = set()
MECHANISM_FOLDERS = ("toolkit/mechanisms/", "queries/mechanisms/", "templates/mechanisms/")
NAMES_A_MECHANISM = re.compile(r"prefix.cache|oversized.prompt|freed.in.flight|PREFIX_CACHE|OVERSIZED_PROMPT",
                               re.IGNORECASE)
# The only file outside the mechanism folders that may name a mechanism: the registry's list of the defaults.
REGISTRY = "toolkit/spec/mechanism.py"


def modules() -> dict[str, Path]:
    out = {}
    for folder, pkg in FOLDERS.items():
        for p in (ROOT / folder).rglob("*.py"):
            rel = list(p.relative_to(ROOT / folder).with_suffix("").parts)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join([pkg, *rel])] = p
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every kvir module `path` imports anywhere in its body (module level, functions, TYPE_CHECKING)."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_pkg else name.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for cand in [base] + [f"{base}.{a.name}" for a in node.names]:
                if cand in known and cand != name:
                    found.add(cand)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known and a.name != name}
        elif isinstance(node, ast.Call) and isinstance(node.args[0] if node.args else None, ast.Constant):
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if fname in ("import_module", "__import__") and node.args[0].value in known:
                found.add(node.args[0].value)
    return found


def layer(name: str) -> int | None:
    parts = name.split(".")
    if len(parts) < 2:
        return None                      # the kvir package itself: the lazy Python API over every layer
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else None


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: imports_of(m, p, set(mods)) for m, p in mods.items()}


def cycles(g: dict[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: set[frozenset[str]] = set()
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.add(frozenset(comp))

    for v in g:
        if v not in index:
            visit(v)
    return out


def test_every_module_belongs_to_a_layer():
    unplaced = [m for m in modules() if m != "kvir" and layer(m) is None]
    assert not unplaced, f"modules outside the layers {LAYERS}: {unplaced}"


def test_layers_import_only_earlier_layers():
    bad = []
    for m, deps in graph().items():
        if layer(m) is None:
            continue
        for d in deps:
            if layer(d) is not None and layer(d) > layer(m) and (m, d) not in TRANSITIONAL_IMPORTS:
                bad.append(f"{m} ({LAYERS[layer(m)]}) imports {d} ({LAYERS[layer(d)]})")
    assert not bad, "\n".join(sorted(bad))


def test_no_import_cycles_but_the_known_ones():
    found = cycles(graph())
    assert found <= KNOWN_CYCLES, f"new import cycles: {[sorted(c) for c in found - KNOWN_CYCLES]}"
    assert found == KNOWN_CYCLES, f"cycles now gone, drop them from KNOWN_CYCLES: {[sorted(c) for c in KNOWN_CYCLES - found]}"


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {frozenset("abc")}
    assert cycles({"a": {"b"}, "b": set()}) == set()


def test_no_module_over_400_lines():
    long = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in modules().values()
            if len(p.read_text().splitlines()) > MAX_LINES}
    assert set(long) <= KNOWN_LONG, f"modules over {MAX_LINES} lines: {long}"
    assert set(long) == KNOWN_LONG, f"now short enough, drop from KNOWN_LONG: {sorted(KNOWN_LONG - set(long))}"


def test_mechanisms_are_reached_only_through_the_registry():
    found = {(m, d) for m, deps in graph().items() if not m.startswith("kvir.mechanisms")
             for d in deps if d.startswith("kvir.mechanisms")}
    assert found <= TRANSITIONAL_IMPORTS, f"imports of a mechanism's package from outside it: {sorted(found - TRANSITIONAL_IMPORTS)}"
    assert found == TRANSITIONAL_IMPORTS, f"gone, drop from TRANSITIONAL_IMPORTS: {sorted(TRANSITIONAL_IMPORTS - found)}"


def files_naming_a_mechanism() -> set[str]:
    """Tracked and new source files (Python, SQL, Jinja, TOML) outside the mechanism folders that name one."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "toolkit", "replay",
                          "queries", "templates"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {f for f in out.split() if not f.startswith(MECHANISM_FOLDERS) and (ROOT / f).is_file()
            and NAMES_A_MECHANISM.search((ROOT / f).read_text(errors="replace"))}


# Files outside the mechanism folders that still name a mechanism (issue 30 counted 65): each stage's move
# empties its own; the list only shrinks, and ends as the registry alone.
KNOWN_NAMING: set[str] = set()


def test_only_the_registry_names_a_mechanism_outside_the_mechanism_folders():
    found = files_naming_a_mechanism() - {REGISTRY}
    assert found <= KNOWN_NAMING, f"new files naming a mechanism outside its folder: {sorted(found - KNOWN_NAMING)}"
    assert found == KNOWN_NAMING, f"no longer name one, drop from KNOWN_NAMING: {sorted(KNOWN_NAMING - found)}"
