"""Header-driven CSV reading shared by the readers of formats that name their columns."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from optsched.traces._rows import Rows

__all__ = ["HeaderCSV"]


class HeaderCSV:
    """Rows of a CSV file with a header line, as ``{column: text}`` dicts.

    Parameters
    ----------
    rows : Rows
        The file's field parsers (named in errors).
    required : sequence of str
        Columns the header must have (an error names the first one missing).
    any_of : sequence of sequence of str
        Groups of which the header must have at least one column each.

    Notes
    -----
    Columns are matched after stripping spaces; a repeated column name is refused (a reader
    would otherwise silently take one of the two).
    """

    def __init__(
        self,
        rows: Rows,
        required: Sequence[str],
        any_of: Sequence[Sequence[str]] = (),
    ) -> None:
        self.rows = rows
        self.required = list(required)
        self.any_of = [list(g) for g in any_of]
        self.header: list[str] = []

    def __iter__(self) -> Iterator[dict[str, str]]:
        lines = self.rows.lines(",")
        for _, parts in lines:
            self.header = [p.strip() for p in parts]
            break
        else:
            return
        seen: set[str] = set()
        for name in self.header:
            if name in seen:
                raise self.rows.error(name or "<header>", f"{name!r} appears twice in the header")
            seen.add(name)
        for name in self.required:
            if name not in seen:
                raise self.rows.error(
                    name, f"missing from the header (found: {', '.join(self.header)[:200]})"
                )
        for group in self.any_of:
            if not seen.intersection(group):
                raise self.rows.error(group[0], f"the header needs one of {', '.join(group)}")
        width = len(self.header)
        for _, parts in lines:
            if len(parts) != width:
                if len(parts) < width:
                    raise self.rows.error(
                        self.header[len(parts)],
                        f"missing: the row has {len(parts)} fields, the header {width}",
                    )
                raise self.rows.error("<row>", f"has {len(parts)} fields, the header has {width}")
            yield dict(zip(self.header, parts, strict=True))
