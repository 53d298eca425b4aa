"""Bridge from pydantic's validation errors to :class:`~optsched.errors.InvalidInstanceError`.

File formats are declared as frozen pydantic models (field types, bounds, JSON Schema for free);
this module turns pydantic's error locations into the field paths optsched promises in its
messages, e.g. ``jobs[3].epochs: must be >= 1, got 0``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from optsched._io import key_part, load_data
from optsched.errors import InvalidInstanceError

__all__ = ["Frozen", "field_path", "load_data", "parse", "raise_invalid"]

M = TypeVar("M", bound=BaseModel)


class Frozen(BaseModel):
    """Base of optsched's file-format models: immutable, no unknown fields.

    Every file format inherits the same four class-level entry points: :meth:`from_dict`
    (validate plain data), :meth:`load` (read a JSON/TOML file through the guarded loader
    :func:`optsched._io.load_data`), :meth:`save` (write JSON or TOML by extension) and
    :meth:`schema` (the JSON Schema). Constructing the model directly with keyword arguments
    validates too, and raises :class:`~optsched.errors.InvalidInstanceError` naming the field.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=False)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise_invalid(exc)

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Validate plain data (e.g. parsed JSON) into this type.

        Raises
        ------
        InvalidInstanceError
            Naming the first offending field (and listing the others).
        """
        return parse(cls, data)

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Read and validate a JSON or TOML file (by extension) through the guarded loader.

        Raises
        ------
        InvalidInstanceError
            The file is refused or a field is invalid; the file is named.
        """
        data = load_data(path)
        try:
            return cls.from_dict(data)
        except InvalidInstanceError as exc:
            if exc.file is None:
                raise InvalidInstanceError(
                    exc.field, exc.message, exc.errors, file=str(path)
                ) from None
            raise

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (what :meth:`save` writes)."""
        return self.model_dump(mode="json", exclude_none=True)

    def save(self, path: str | Path) -> None:
        """Write as TOML when ``path`` ends in ``.toml``, else as JSON.

        Raises
        ------
        InvalidInstanceError
            The extension is neither ``.json`` nor ``.toml`` (field ``"path"``).
        """
        p = Path(path)
        suffix = p.suffix.lower()
        if suffix == ".toml":
            import tomli_w

            text = tomli_w.dumps(self.to_dict())
        elif suffix == ".json":
            text = json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"
        else:
            raise InvalidInstanceError(
                "path", f"{p.name}: write .json or .toml, got extension {p.suffix or '(none)'!r}"
            )
        p.write_text(text, encoding="utf-8")

    @classmethod
    def schema(cls, by_alias: bool = True, ref_template: str = "#/$defs/{model}") -> dict[str, Any]:
        """The JSON Schema of this file format."""
        return cls.model_json_schema(by_alias=by_alias, ref_template=ref_template)


def field_path(loc: Sequence[int | str], prefix: str = "") -> str:
    """Render a pydantic error location as ``a.b[3].c``.

    Discriminated-union tags that pydantic inserts into the location (e.g. ``sigmoid``) are kept
    out of the path only when they are not field names of the data; the caller sees the data's
    own shape.
    """
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "tagged-union[")):
            continue
        else:
            out += key_part(str(part), not out)
    return out


def _message(err: dict[str, Any]) -> str:
    ctx = err.get("ctx") or {}
    kind = err.get("type", "")
    got = err.get("input")
    shown = json.dumps(got) if isinstance(got, (int, float, str, bool)) or got is None else None
    suffix = f", got {shown}" if shown is not None else ""
    if kind == "greater_than_equal":
        return f"must be >= {ctx.get('ge')}{suffix}"
    if kind == "greater_than":
        return f"must be > {ctx.get('gt')}{suffix}"
    if kind == "less_than_equal":
        return f"must be <= {ctx.get('le')}{suffix}"
    if kind == "less_than":
        return f"must be < {ctx.get('lt')}{suffix}"
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind == "value_error":
        return str(ctx.get("error", err.get("msg", "invalid value")))
    return f"{err.get('msg', 'invalid value')}{suffix}"


def raise_invalid(exc: ValidationError, prefix: str = "") -> None:
    """Re-raise a pydantic :class:`ValidationError` as :class:`InvalidInstanceError`."""
    errors: list[tuple[str, str]] = []
    for e in exc.errors():
        inner = (e.get("ctx") or {}).get("error")
        if isinstance(inner, InvalidInstanceError):
            # A model validator raised a field-named error: keep its path, under the location.
            base = field_path(e["loc"], prefix)
            errors.extend((f"{base}.{f}" if base else f, m) for f, m in inner.errors)
        else:
            errors.append((field_path(e["loc"], prefix), _message(dict(e))))
    field, message = errors[0]
    raise InvalidInstanceError(field, message, errors) from None


def parse(model: type[M], data: Any, prefix: str = "") -> M:
    """Validate ``data`` into ``model`` or raise :class:`InvalidInstanceError` naming the field."""
    if not isinstance(data, dict):
        raise InvalidInstanceError(
            prefix or "<root>", f"must be an object, got {type(data).__name__}"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise_invalid(exc, prefix)
        raise  # unreachable; keeps type checkers content


def check(condition: bool, field: str, message: str) -> None:
    """Raise :class:`InvalidInstanceError` for ``field`` unless ``condition`` holds."""
    if not condition:
        raise InvalidInstanceError(field, message)


Validator = Callable[[Any], Any]
