r"""Data strings in figures: shown literally, never as Matplotlib math text.

Matplotlib reads the text between two unescaped ``$`` of any label as math text (TeX markup), so a
policy label or trace name such as ``$\bad{$`` makes the figure fail to draw, and ``$x$`` is drawn
as something else than what the data says. ``\$`` is a literal dollar sign, and a string whose
dollars are all escaped never enters math mode; every other character is left as it is (outside
math mode a backslash is an ordinary character).
"""

from __future__ import annotations

__all__ = ["mpl_literal"]


def mpl_literal(text: object) -> str:
    r"""``text`` as a Matplotlib label that shows it literally (every ``$`` escaped).

    >>> mpl_literal("cost $5 and $x^2$")
    'cost \\$5 and \\$x^2\\$'
    """
    return str(text).replace("$", r"\$")
