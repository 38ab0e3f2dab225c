"""Commands whose help and options the registered mechanisms contribute (`kvir probe`'s checks, `kvir serve`'s
target modes), so that the command module names no mechanism.

The registry is read only when such a command parses its arguments or shows its help, never when the CLI
is assembled: `kvir --version` or `kvir triage` do not pay for what `kvir serve` offers.

    class ServeCommand(PartsCommand):
        @staticmethod
        def part_help() -> str: ...                    # replaces the PARTS paragraph of the command's help
        @staticmethod
        def part_options() -> list[inspect.Parameter]: ...   # keyword parameters, Annotated[T, typer.Option(...)]

The command's function takes `ctx: typer.Context` and reads the added options' values from
`part_values(ctx)` (Typer passes a function only the parameters of its own signature).
"""
from __future__ import annotations

import inspect
from typing import Any

import click
import typer
import typer.main

from kvir.cli.help import KvirCommand, metavar

PARTS = "{parts}"                       # the paragraph of a command's help that part_help() replaces
_META = "kvir.cli.parts"


class PartsCommand(KvirCommand):
    @staticmethod
    def part_help() -> str:
        return ""

    @staticmethod
    def part_options() -> list[inspect.Parameter]:
        return []

    def _own(self) -> list[click.Parameter]:
        if not hasattr(self, "_part_params"):
            self._part_params = typer_options(self.part_options())
            for p in self._part_params:
                p.metavar = p.metavar or metavar(p)
            self.params = [*self.params, *self._part_params]
        return self._part_params

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        self._own()
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        ctx.meta[_META] = {p.name: ctx.params.pop(p.name) for p in self._own() if p.name in ctx.params}
        return super().invoke(ctx)

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        text = inspect.cleandoc(self.help or "").replace(PARTS, self.part_help().strip())
        if text:
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(text)


def part_values(ctx: click.Context) -> dict[str, Any]:
    """The values of the options the mechanisms added (by parameter name) in the running command."""
    return dict(ctx.meta.get(_META, {}))


def typer_options(parameters: list[inspect.Parameter]) -> list[click.Parameter]:
    """Typer's own options for keyword parameters written as a command's would be (Annotated[T, typer.Option]),
    converted as Typer converts a command's signature."""
    if not parameters:
        return []

    def command(**kw: Any) -> None:
        pass

    command.__signature__ = inspect.Signature(parameters)           # type: ignore[attr-defined]
    app = typer.Typer(add_completion=False)
    app.command()(command)
    return list(typer.main.get_command(app).params)
