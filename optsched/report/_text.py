r"""Text for people: tables that fit a terminal, numbers without exponents, literal figure labels.

Tables
------
:class:`TextTable` is the one table of the command line and the reports. It is filled like a
:class:`rich.table.Table` (``add_column``, ``add_row``) with plain-text cells, and is drawn at a
given width (:data:`TABLE_WIDTH` columns by default) without losing a character:

* every column gets the width of its widest cell, or of the longest word of its header
  (headers wrap onto several lines, cells never do unless the column is text, which wraps
  at words and folds a word longer than the room);
* when the columns do not fit side by side, they are split into several tables of the same
  rows, each repeating the first ``key`` columns (the row's name), titled ``(part k of n)``;
* a text column (``wrap=True``: names, notes) wider than the room left wraps at words;
* the ``notes`` (units, definitions, skipped work) are printed under the last part, wrapped
  at the same width.

The layout: a column of width :math:`w` takes :math:`w + 3` characters (two of padding, one
rule), plus one for the table's left edge, for every box style rich draws with edges. The
split is greedy, in column order, :math:`O(n)` in the number of columns.

Numbers
-------
:func:`fixed_decimals` chooses the decimals of a column once (about four significant digits on
its largest value) and :func:`fixed` writes a value with them, so a column never mixes
notations and never shows an exponent (``7.455e+05``).

Figures
-------
Matplotlib reads the text between two unescaped ``$`` of any label as math text (TeX markup),
so a policy label or trace name such as ``$\bad{$`` makes the figure fail to draw, and ``$x$`` is
drawn as something else than what the data says. ``\$`` is a literal dollar sign, and a string
whose dollars are all escaped never enters math mode (:func:`mpl_literal`).
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

__all__ = [
    "TABLE_WIDTH",
    "TIME_UNITS",
    "UNIT_WORDS",
    "TextTable",
    "column_cells",
    "fixed",
    "fixed_decimals",
    "mpl_literal",
    "plain",
    "time_unit",
]

#: Columns a table may take unless the reader asks for every column on one line (``--wide``).
TABLE_WIDTH = 100

#: The widest a wrapping text column is drawn when a table is split (a name, a note).
_TEXT_CAP = 32


def mpl_literal(text: object) -> str:
    r"""``text`` as a Matplotlib label that shows it literally (every ``$`` escaped).

    >>> mpl_literal("cost $5 and $x^2$")
    'cost \\$5 and \\$x^2\\$'
    """
    return str(text).replace("$", r"\$")


#: (seconds per unit, unit name), from the largest.
TIME_UNITS: tuple[tuple[float, str], ...] = ((3600.0, "h"), (60.0, "min"), (1.0, "s"))
#: Unit name -> its words, for the notes under a table.
UNIT_WORDS: dict[str, str] = {"h": "hours", "min": "minutes", "s": "seconds"}


def time_unit(values: Iterable[Any]) -> tuple[float, str]:
    """The one unit of a table's times: ``s`` below 120 s, ``min`` below 2 h, else ``h``.

    Chosen once, by the largest finite value of every time the table shows.

    >>> time_unit([30.0, float("nan")]), time_unit([7455.0, 60.0])
    ((1.0, 's'), (3600.0, 'h'))
    """
    finite = [
        abs(float(v))
        for v in values
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    ]
    top = max(finite, default=0.0)
    if top >= 2 * 3600.0:
        return TIME_UNITS[0]
    if top >= 120.0:
        return TIME_UNITS[1]
    return TIME_UNITS[2]


def fixed_decimals(values: Iterable[Any], significant: int = 4, most: int = 3) -> int:
    """Decimals showing about ``significant`` digits of a column's largest finite value.

    >>> fixed_decimals([745500.0 / 3600, 0.5])
    1
    >>> fixed_decimals([0.0123])
    3
    >>> fixed_decimals([123456.0])
    0
    """
    finite = [
        abs(float(v))
        for v in values
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    ]
    top = max(finite, default=0.0)
    if top == 0.0:
        return 1
    digits = math.floor(math.log10(top)) + 1  # digits before the point
    return max(0, min(most, significant - digits))


def fixed(value: Any, decimals: int, *, sign: bool = False) -> str:
    """``value`` with ``decimals`` decimals and no exponent; ``-`` for a missing value.

    >>> fixed(7.455e5 / 3600, 2), fixed(None, 2), fixed(float("nan"), 1), fixed(2, 1, sign=True)
    ('207.08', '-', '-', '+2.0')
    """
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return "-" if value is None else str(value)
    if math.isnan(value):
        return "-"
    if math.isinf(value):
        return ("+" if sign and value > 0 else "") + ("inf" if value > 0 else "-inf")
    return f"{value:{'+' if sign else ''},.{decimals}f}".replace(",", "")


def plain(value: Any, significant: int = 4) -> str:
    """One number for people: about ``significant`` digits, no exponent, no trailing zeros.

    >>> plain(12345.678), plain(0.012345), plain(3), plain(2.0), plain(None)
    ('12346', '0.01235', '3', '2', '-')
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    text = fixed(value, fixed_decimals([value], significant, most=6))
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def column_cells(values: Sequence[Any], significant: int = 4) -> list[str]:
    """A column of numbers with one number of decimals (none when every value is whole).

    >>> column_cells([1.0, 16.0]), column_cells([602.0, 874.5, 68253.0])
    (['1', '16'], ['602.0', '874.5', '68253.0'])
    """
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    whole = all(math.isfinite(v) and float(v).is_integer() for v in numbers)
    decimals = 0 if whole else max(1, fixed_decimals(numbers, significant))
    return [fixed(v, decimals) for v in values]


@dataclass
class _Column:
    header: str
    justify: str = "right"
    wrap: bool = False
    cells: list[str] = field(default_factory=list)

    def natural(self) -> int:
        """The width showing every cell on one line and the header's longest word."""
        from rich.cells import cell_len

        longest_word = max((cell_len(w) for w in self.header.split()), default=0)
        return max([longest_word, *(cell_len(c) for c in self.cells)])

    def full(self) -> int:
        """The width showing every cell and the header on one line."""
        from rich.cells import cell_len

        return max([cell_len(self.header), *(cell_len(c) for c in self.cells)])

    def least(self) -> int:
        """The narrowest this column may be drawn (a text column wraps at words)."""
        if not self.wrap:
            return self.natural()
        # wraps at words, and folds a word longer than the cap (a long policy name)
        return min(self.natural(), _TEXT_CAP)


class TextTable:
    """A table of plain-text cells drawn within a width, split rather than cut.

    Parameters
    ----------
    title : str, optional
        Shown above the table (above each part when split).
    notes : sequence of str
        Lines printed under the table: units, definitions, skipped work.
    key : int
        The leading columns that name a row, repeated in every part of a split table.
    box : str
        ``"heavy_head"`` (default) or ``"simple"``.
    show_header : bool
        Draw the header row (a key/value table has none).
    """

    def __init__(
        self,
        title: str | None = None,
        *,
        notes: Sequence[str] = (),
        key: int = 1,
        box: str = "heavy_head",
        show_header: bool = True,
    ) -> None:
        self.title = title
        self.notes: list[str] = list(notes)
        self.key = key
        self.box = box
        self.show_header = show_header
        self._columns: list[_Column] = []

    @property
    def headers(self) -> list[str]:
        """The column headers, in order."""
        return [c.header for c in self._columns]

    @property
    def rows(self) -> list[list[str]]:
        """The cells, row by row."""
        return [list(r) for r in zip(*(c.cells for c in self._columns), strict=True)]

    def add_column(self, header: str = "", *, justify: str = "right", wrap: bool = False) -> None:
        """Add a column; ``wrap`` for text that may wrap at words when room is short."""
        if self._columns and self._columns[0].cells:
            raise ValueError("add every column before the first row")
        self._columns.append(_Column(str(header), justify, wrap))

    def add_row(self, *cells: Any) -> None:
        """Add a row: one cell per column, shown as ``str(cell)`` (never console markup)."""
        if len(cells) != len(self._columns):
            raise ValueError(f"{len(cells)} cells for {len(self._columns)} columns")
        for column, cell in zip(self._columns, cells, strict=True):
            column.cells.append("-" if cell is None else str(cell))

    def add_note(self, text: str) -> None:
        """Add a line printed under the table."""
        self.notes.append(text)

    def width(self) -> int:
        """The characters one line takes with every column and header on one line (``--wide``)."""
        return sum(c.full() + 3 for c in self._columns) + 1

    def parts(self, width: int | None) -> list[list[int]]:
        """The column indices of each part drawn within ``width`` (one part when it fits).

        Greedy in column order: a part takes the key columns, then every following column
        while the line stays within ``width``; a text column is counted at its least width.
        """
        n = len(self._columns)
        narrow = sum(c.natural() + 3 for c in self._columns) + 1
        if width is None or narrow <= width or n <= self.key:
            return [list(range(n))]
        keys = list(range(min(self.key, n)))
        base = sum(self._columns[k].least() + 3 for k in keys) + 1
        out: list[list[int]] = []
        current: list[int] = []
        used = base
        for i in range(len(keys), n):
            need = self._columns[i].least() + 3
            if current and used + need > width:
                out.append(keys + current)
                current, used = [], base
            current.append(i)
            used += need
        out.append(keys + current)
        return out

    def render_lines(self, width: int | None) -> list[str]:
        """The table as lines of text within ``width`` (``None``: every column on one line)."""
        from rich.console import Console

        console = Console(
            width=self.width() + 2 if width is None else width,
            color_system=None,
            highlight=False,
            soft_wrap=False,
            record=True,
            file=io.StringIO(),
        )
        console.print(self)
        return console.export_text(styles=False).splitlines()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Draw within the console's width (split into parts when the columns do not fit)."""
        from rich.text import Text

        width = options.max_width
        parts = self.parts(width)
        for k, cols in enumerate(parts):
            title = self.title
            if len(parts) > 1:
                title = f"{self.title or 'table'} (part {k + 1} of {len(parts)})"
            if title:
                # above the table, wrapped at the width rather than at a narrow table's
                yield Text(title, style="bold")
            yield self._part(cols, width)
        for note in self.notes:
            yield Text(note, overflow="fold")  # data, never console markup

    def _part(self, cols: list[int], width: int) -> Any:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        drawn = box.SIMPLE if self.box == "simple" else box.HEAVY_HEAD
        simple = self.box == "simple"
        # a simple table has no edges: a line is at most the formula's width minus two
        table = Table(
            box=drawn,
            show_header=self.show_header,
            expand=False,
            show_edge=not simple,
        )
        # characters past the width with every column at its natural width: the text columns
        # give them back by wrapping, first to last
        # headers on one line when they fit, else wrapped at words
        full = sum(self._columns[i].full() + 3 for i in cols) + 1 <= width
        excess = sum(self._columns[i].natural() + 3 for i in cols) + 1 - width
        for i in cols:
            column = self._columns[i]
            w = column.full() if full else column.natural()
            if excess > 0 and column.wrap:
                w = max(column.least(), w - excess)
                excess -= column.natural() - w
            table.add_column(
                Text(column.header),
                justify=column.justify,  # type: ignore[arg-type]
                width=w,
                overflow="fold",
            )
        for row in zip(*(self._columns[i].cells for i in cols), strict=True):
            table.add_row(*(Text(c) for c in row))
        return table
