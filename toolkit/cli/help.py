"""`--help` that reads at 80 and 120 columns: every command's summary whole, plain metavars, words kept whole.

Typer's plain help (rich_markup_mode=None) shows Python type names (`<list[str]>`, `{paths}...`), truncates
each command's summary in the command list with "...", breaks words after a hyphen ("--tenant-b-key-" /
"env") and rewraps indented example blocks into running text. Here:

- metavars are the usual words (TEXT, INTEGER, NUMBER, PATH; an option's own `metavar` when it has one), an
  argument is NAME... or [NAME]... as Click writes it;
- the command list gives each command's first sentence whole, wrapped;
- text wraps at spaces only (an option name, a default, a path or a URL is never split);
- a paragraph whose lines are indented (an example command) is kept as written.

The classes are attached to every registered command by `install(app)` (kvir.cli.app), so a command module
only writes plain Typer code.
"""
from __future__ import annotations

import re
import textwrap
from typing import Any

import typer
import typer.core

Context = typer.core.TyperCommand.context_class
Formatter = Context.formatter_class

TYPE_WORDS = {int: "INTEGER", float: "NUMBER", str: "TEXT", bool: "BOOLEAN"}


def wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """Lines of `text` wrapped at spaces only (never inside a word, never after a hyphen). Paragraphs are kept
    apart; one whose first line is indented is shown as written."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text.strip("\n")):
        lines = para.split("\n")
        if out:
            out.append("")
        if lines[0].startswith((" ", "\b")) or lines[0].strip() == "\b":
            out += [indent + line.rstrip() for line in lines if line.strip() != "\b"]
            continue
        w = textwrap.TextWrapper(width=max(width, 20), initial_indent=indent,
                                 subsequent_indent=indent if subsequent is None else subsequent,
                                 break_on_hyphens=False, break_long_words=False)
        out += w.wrap(" ".join(line.strip() for line in lines)) or [indent]
    return out


class KvirFormatter(Formatter):
    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        prefix = "Usage: " if prefix is None else prefix
        head = f"{prefix:>{self.current_indent}}{prog} "
        self.write("\n".join(wrap(args, self.width, head, " " * len(head))) + "\n")

    def write_text(self, text: str) -> None:
        self.write("\n".join(wrap(text, self.width, " " * self.current_indent)) + "\n")

    def write_dl(self, rows, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        first = min(max((len(a) for a, _ in rows), default=0), col_max) + col_spacing
        pad = " " * (self.current_indent + first)
        for name, text in rows:
            self.write(f"{'':>{self.current_indent}}{name}")
            if not text:
                self.write("\n")
                continue
            lines = wrap(text, self.width - self.current_indent - first)
            if len(name) > first - col_spacing:
                self.write("\n" + pad)
            else:
                self.write(" " * (first - len(name)))
            self.write(lines[0] + "\n" + "".join(pad + line + "\n" if line else "\n" for line in lines[1:]))


class KvirContext(Context):
    formatter_class = KvirFormatter


def metavar(param: Any) -> str:
    """An option's value word (its own metavar, else from its type); an argument's NAME."""
    if getattr(param, "param_type_name", "") == "argument":
        return (param.metavar or param.name or "ARG").upper()
    if param.metavar:
        return param.metavar
    desc = getattr(param, "type_descriptor", None)
    if desc is None:                               # Typer over Click: Click's own type names
        return param.type.name.upper()
    if desc.is_choice and desc.choices:
        return "|".join(str(getattr(c, "value", c)) for c in desc.choices)
    if desc.is_path:
        return "PATH"
    if desc.is_datetime:
        return "DATETIME"
    ann = desc.annotation
    args = getattr(ann, "__args__", None)
    if args and getattr(ann, "__origin__", None) in (list, tuple):
        ann = args[0]
    return TYPE_WORDS.get(ann, "VALUE")


def usage_name(param: Any) -> str:
    """An argument in the usage line: PATHS... when required, [PATHS]... when not."""
    name = metavar(param)
    name = name if param.required else f"[{name}]"
    return name + ("..." if param.nargs != 1 else "")


def summary(cmd: Any) -> str:
    """A command's summary in the command list: its short_help, else the first sentence of its help."""
    if cmd.short_help:
        return cmd.short_help
    first = re.split(r"\n\s*\n", (cmd.help or "").strip())[0]
    first = " ".join(first.split())
    m = re.match(r"(.+?[.?!])(\s+[A-Z(`]|$)", first)     # not "Art. 33": a sentence ends before a capital
    return m.group(1) if m else first


class KvirCommand(typer.core.TyperCommand):
    context_class = KvirContext

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        for p in self.params:
            if getattr(p, "param_type_name", "") == "option" and not p.metavar:
                p.metavar = metavar(p)

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        return pieces + [usage_name(p) for p in self.get_params(ctx) if p.param_type_name == "argument"]

    def format_options(self, ctx, formatter) -> None:
        args, opts = [], []
        for p in self.get_params(ctx):
            rec = p.get_help_record(ctx)
            if rec is None:
                continue
            if p.param_type_name == "argument":
                args.append((metavar(p) + ("..." if p.nargs != 1 else ""), rec[1]))
            else:
                opts.append(rec)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        if any(p.name == "mechanism" for p in self.get_params(ctx)):
            # the registered mechanisms, each with its one line, for a --mechanism option: read when the
            # help is shown, not whenever the CLI loads (registering imports every mechanism's parts)
            from kvir.spec.mechanism import mechanisms

            with formatter.section("Mechanisms"):
                formatter.write_dl([(m.name, m.summary) for m in mechanisms()])


class KvirGroup(typer.core.TyperGroup):
    context_class = KvirContext

    def format_commands(self, ctx, formatter) -> None:
        rows = [(name, summary(cmd)) for name in self.list_commands(ctx)
                if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def install(app: typer.Typer) -> None:
    """Every registered command renders its help through KvirCommand (the group is made with cls=KvirGroup)."""
    for info in app.registered_commands:
        if info.cls is None or info.cls is typer.core.TyperCommand:
            info.cls = KvirCommand
