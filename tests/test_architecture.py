"""The package's shape: layers import only earlier layers, no import cycle (lazy and type-checking imports
included), no module over 400 lines. Read from the source with `ast`, so nothing has to be imported."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"toolkit": "kvir", "replay": "kvir.replay"}
# The flow of data, each layer importing only those before it (README "Architecture").
LAYERS = ("core", "rules", "spec", "case", "ingest", "audit", "triage", "replay", "report", "probe", "serve",
          "sim", "cli")
MAX_LINES = 400
# Import cycles not yet taken apart, each named here so that removing one fails this test until the list
# shrinks with it (and adding one fails at once).
KNOWN_CYCLES: set[frozenset[str]] = {
    frozenset({"kvir.replay.kernels", "kvir.replay.triton_kernels"}),
    frozenset({"kvir.replay", "kvir.replay.run"}),
    frozenset({"kvir.sim.fleet", "kvir.sim.logs", "kvir.sim.parquet"}),
}
KNOWN_LONG = {"toolkit/sim/fleet.py", "replay/run.py"}


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
            if layer(d) is not None and layer(d) > layer(m):
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
