"""Terminal tables that read at 80 columns: numbers, ids, times and paths are never broken.

A table is laid out at the width of the console it is printed on (80 when stderr is not a terminal):

- every cell stays on one line (a number, an id, a time, a path, a node name), unless its column is
  `wrap`: free text, which wraps at spaces only (never inside a word);
- a column marked `under` is always shown below its row, indented (a finding's message, a reason);
- when the columns do not fit, those marked `below` move under their row as "name: value", rightmost first;
- when even that does not fit, each row is shown as a record: its first cell, then one "name  value" line
  per other column.

No borders: a header, a rule under it and two spaces between columns read the same in a terminal, a pager
and a CI log. Cells are rich Text (kvir's styles kept; foreign text already made inert by `cell`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

GAP = 2          # spaces between columns
INDENT = 4       # text shown under a row


@dataclass(frozen=True)
class Col:
    """One column: `right` for numbers; `wrap` for free text (breaks at spaces only); `below`: may move under
    its row when the table is too wide; `under`: always shown under its row."""

    name: str
    right: bool = False
    wrap: bool = False
    below: bool = False
    under: bool = False


def as_col(c: "str | tuple[str, str] | Col") -> Col:
    """A column as the callers of `table` give it: a name, (name, 'right') or a Col."""
    if isinstance(c, Col):
        return c
    if isinstance(c, str):
        return Col(c)
    name, justify = c
    return Col(name, right=justify == "right")


def _longest_word(text: Text) -> int:
    return max((len(w) for w in text.plain.split()), default=0)


def _pieces(word: str, width: int) -> list[int]:
    """Where a word longer than the line is cut: after a '/' (a path), else after '-', '_', '.', ':', ',' or
    '=', else at the width (nothing else to go by). Returns the cut offsets."""
    cuts, start = [], 0
    while len(word) - start > width:
        part = word[start:start + width]
        at = part.rfind("/")
        if at <= 0:
            at = max(part.rfind(c) for c in "-_.:,=")
        end = start + (at + 1 if at > 0 else width)
        cuts.append(end)
        start = end
    return cuts


def wrap(text: Text, width: int) -> list[Text]:
    """`text` in lines of at most `width` cells, broken at spaces; a word longer than a line (a path, a URL)
    is broken after its separators, never inside a name when it has any. Styles are kept."""
    width = max(width, 1)
    plain, lines, line_start, line_end = text.plain, [], None, 0
    for m in re.finditer(r"\S+", plain):
        a, b = m.span()
        if line_start is not None and b - line_start <= width:
            line_end = b
            continue
        if line_start is not None:
            lines.append((line_start, line_end))
        cuts = _pieces(plain[a:b], width) if b - a > width else []
        starts = [a] + [a + c for c in cuts]
        ends = [a + c for c in cuts] + [b]
        lines += list(zip(starts[:-1], ends[:-1]))
        line_start, line_end = starts[-1], ends[-1]
    if line_start is not None:
        lines.append((line_start, line_end))
    if lines and lines[0][0] <= width // 2 and lines[0][1] <= width:
        lines[0] = (0, lines[0][1])                   # a leading indent ("  of which ...") is kept
    return [text[a:b] for a, b in lines] or [Text("")]


class Para:
    """A line of text wrapped at the console's width by `wrap` (spaces first, then a path's separators)."""

    def __init__(self, text: Text):
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from wrap(self.text, options.max_width)


class Grid:
    """A rich renderable: `console.print(Grid(...))` lays the table out at the console's width."""

    def __init__(self, title: Text | None, cols: Sequence[Col], rows: Iterable[Sequence[Text]],
                 footer: Sequence[Text] = ()):
        self.title, self.cols, self.rows, self.footer = title, list(cols), [list(r) for r in rows], list(footer)

    # ---------------------------------------------------------------------------------------------- layout
    def _natural(self, i: int) -> int:
        return max([len(self.cols[i].name)] + [r[i].cell_len for r in self.rows])

    def _least(self, i: int) -> int:
        if not self.cols[i].wrap:
            return self._natural(i)
        return max([_longest_word(Text(self.cols[i].name))] + [_longest_word(r[i]) for r in self.rows])

    def layout(self, width: int) -> tuple[list[int], list[int], dict[int, int]] | None:
        """(the columns in the grid, the columns under each row, each grid column's width), or None when even
        the columns that cannot move do not fit (the record layout then)."""
        grid = [i for i, c in enumerate(self.cols) if not c.under]
        under = [i for i, c in enumerate(self.cols) if c.under]
        movable = [i for i in grid if self.cols[i].below and i != grid[0]]

        def need(cols: list[int], size) -> int:
            return sum(size(i) for i in cols) + GAP * (len(cols) - 1)

        moved: list[int] = []
        while grid and need(grid, self._least) > width and movable:
            i = movable.pop()
            grid.remove(i)
            moved.insert(0, i)
        if not grid or need(grid, self._least) > width:
            return None
        widths = {i: self._natural(i) for i in grid}
        excess = need(grid, self._natural) - width
        wraps = [i for i in grid if self.cols[i].wrap]
        while excess > 0 and wraps:          # take from the widest wrapping column, one space at a time
            i = max(wraps, key=lambda j: widths[j] - self._least(j))
            if widths[i] <= self._least(i):
                break
            widths[i] -= 1
            excess -= 1
        return grid, sorted(moved) + under, widths

    # --------------------------------------------------------------------------------------------- render
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        if self.title is not None:
            yield from wrap(self.title, width)
        plan = self.layout(width)
        if plan is None:
            yield from self._records(console, width)
        else:
            yield from self._grid(console, width, *plan)
        for line in self.footer:
            yield from wrap(line, width)

    def _line(self, console: Console, cells: list[Text], cols: list[int], widths: dict[int, int]) -> list[Text]:
        """One row of the grid (a wrapping cell may take several lines)."""
        parts = []
        for cell, i in zip(cells, cols):
            if self.cols[i].wrap:
                parts.append(wrap(cell, widths[i]))
            else:
                parts.append([cell])
        out = []
        for k in range(max(len(p) for p in parts)):
            line = Text()
            for n, (p, i) in enumerate(zip(parts, cols)):
                piece = p[k].copy() if k < len(p) else Text("")
                piece.rstrip()
                pad = widths[i] - piece.cell_len
                if self.cols[i].right:
                    piece = Text(" " * max(pad, 0)) + piece
                elif n < len(cols) - 1:
                    piece = piece + Text(" " * max(pad, 0))
                line.append_text(piece)
                if n < len(cols) - 1:
                    line.append(" " * GAP)
            line.rstrip()
            out.append(line)
        return out

    def _grid(self, console: Console, width: int, grid: list[int], below: list[int], widths: dict[int, int]):
        # a header wraps like its column (a wrapping column may be narrower than its name)
        yield from self._line(console, [Text(self.cols[i].name, style="bold") for i in grid], grid, widths)
        yield Text((" " * GAP).join("─" * widths[i] for i in grid), style="dim")
        for row in self.rows:
            yield from self._line(console, [row[i] for i in grid], grid, widths)
            yield from self._under(console, width, row, below, labelled=True)

    def _under(self, console: Console, width: int, row: list[Text], cols: list[int], labelled: bool):
        for i in cols:
            value = row[i]
            if not value.plain.strip() or value.plain == "-" and not self.cols[i].under:
                continue
            text = value.copy() if self.cols[i].under else Text(f"{self.cols[i].name}: ", style="dim") + value
            for line in wrap(text, max(width - INDENT, 20)):
                yield Text(" " * INDENT) + line

    def _records(self, console: Console, width: int):
        """Each row as a record: its first cell, then 'name  value' lines (values wrap at spaces only)."""
        label = max(len(c.name) for c in self.cols[1:]) if len(self.cols) > 1 else 0
        for row in self.rows:
            yield Text(self.cols[0].name + ": ", style="dim") + row[0]
            for i in range(1, len(self.cols)):
                head = Text(" " * 2 + self.cols[i].name.ljust(label) + "  ", style="dim")
                indent = head.cell_len
                if _longest_word(row[i]) > width - indent:       # an id too long beside its name: below it
                    yield head
                    indent = INDENT
                for k, line in enumerate(wrap(row[i], max(width - indent, 20))):
                    yield (head if k == 0 and indent == head.cell_len else Text(" " * indent)) + line


class Pairs:
    """'name  value' lines (a format's card, a plan): values wrap at spaces under themselves (hanging indent)."""

    def __init__(self, pairs: Sequence[tuple[str, Text]], indent: int = 2):
        self.pairs, self.indent = list(pairs), indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        label = max((len(k) for k, _ in self.pairs), default=0)
        for key, value in self.pairs:
            head = Text(" " * self.indent + key.ljust(label) + "  ", style="dim")
            room = max(options.max_width - head.cell_len, 20)
            for k, line in enumerate(wrap(value, room)):
                yield (head if k == 0 else Text(" " * head.cell_len)) + line
