"""`kvir simulate` and `kvir demo`: the synthetic reference fleet, and every stage run on it."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kvir.cli.present import echo, echo_json, fail, guarded


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
    app.command("demo")(demo)


@guarded
def simulate(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the fleet into.")],
    requests: Annotated[int, typer.Option("--requests", "-n", help="Requests in the whole fleet.")] = 50_000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (same seed, same fleet).")] = 7,
    format: Annotated[str, typer.Option("--format", help="native (real log formats) or parquet (one row per request).")] = "native",
) -> None:
    """Generate the synthetic reference fleet (README "The reference incident"): 155 responses exposed under the
    public rule, 162 under SGLang's own limit."""
    from kvir.sim.fleet import simulate as run

    try:
        path = run(out, requests=requests, seed=seed, format=format, progress=True)
    except ValueError as e:
        fail(e)
    echo(str(path))


@guarded
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the fleet and the case.")] = Path("kvir-demo"),
    requests: Annotated[int, typer.Option("--requests", "-n", help="Requests in the simulated fleet.")] = 30_000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 7,
    as_json: Annotated[bool, typer.Option("--json", help="Print the stage results as JSON on stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or tables.")] = False,
) -> None:
    """Simulate the reference incident and run every kvir stage on it."""
    from kvir.cli.present.demo import print_demo
    from kvir.sim.demo import demo as run

    result = run(out, requests=requests, seed=seed, progress=not quiet)
    if not quiet:
        print_demo(result)
    if as_json:
        echo_json({"out": str(result.out), "stages": result.stages})
