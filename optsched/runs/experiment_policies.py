"""The policies of an experiment file: registry name, label and constructor options.

:class:`PolicySpec` is one entry of an experiment's ``policies``; :func:`make_experiment_policy`
makes it (the registry's policy, rebuilt with the options, each checked strictly against the
constructor's annotation); :func:`experiment_labels` gives each its label in tables and run
keys: the label given, else the name the made policy gives itself, as
:func:`~optsched.sim.comparison.compare` and :func:`~optsched.runs.sim_sweep.sweep` label the same
policy (:mod:`optsched.runs.experiment` re-exports all three).
"""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import Field

from optsched._validation import Frozen
from optsched.errors import InvalidInstanceError

__all__ = ["PolicySpec", "experiment_labels", "make_experiment_policy"]

_Scalar = str | int | float | bool


class PolicySpec(Frozen):
    """One policy of an experiment: a registry name, a label and constructor options.

    ``options`` are keyword arguments of the policy class's constructor (e.g. ``alpha`` of
    ``allox``, ``lease_s`` of ``chronus``); an unknown one is refused naming it.
    """

    name: str = Field(min_length=1, description="Policy name (`optsched sim policies`).")
    label: str | None = Field(
        default=None,
        min_length=1,
        description="Name in tables (default: the name the policy made with these options "
        "gives itself, e.g. srtf-perf for srtf with aware = true; the registry name when its "
        "class gives none).",
    )
    options: dict[str, _Scalar | list[_Scalar] | dict[str, _Scalar]] = Field(
        default_factory=dict, description="Constructor keyword arguments of the policy."
    )

    @property
    def shown(self) -> str:
        """The label given, else the registry name.

        The label in tables and run keys is the made policy's own name when no label is given
        (:func:`experiment_labels`).
        """
        return self.label or self.name


def _no_factory(name: str, field: str) -> None:
    """Refuse ``module:attr``: in a data file it would import and call code (module notes)."""
    if ":" in name:
        raise InvalidInstanceError(
            field,
            f"{name[:60]!r} names a Python factory (module:attr), which would run code; an "
            "experiment file names policies by registered name, and the modules that register "
            "them under `plugins` (imported only with --allow-plugins / allow_plugins=True)",
        )


def make_experiment_policy(spec: PolicySpec, *, field: str = "policies") -> Any:
    """A fresh policy for ``spec``: the registry's, rebuilt with the options given.

    The registry builds the policy by name; with options, its class is constructed again with
    every constructor parameter the registry's instance holds as an attribute of the same name,
    the options replacing those they name.

    Raises
    ------
    InvalidInstanceError
        Unknown name, or an option the constructor does not take or rejects
        (``{field}.options.<key>``).
    """
    from optsched.sim.policies import make_policy

    _no_factory(spec.name, f"{field}.name")
    policy = make_policy(spec.name, field=f"{field}.name")
    if not spec.options:
        return policy
    cls = type(policy)
    params = {
        n: p
        for n, p in inspect.signature(cls.__init__).parameters.items()
        if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    options = {
        key: _strict_option(cls, params, key, value, spec.name, f"{field}.options.{key}")
        for key, value in spec.options.items()
    }
    refused = InvalidInstanceError(
        f"{field}.options",
        f"policy {spec.name!r} takes no options (its constructor does not give back the "
        "registry's instance)",
    )
    kept: dict[str, Any] = {}
    for n, p in params.items():
        if hasattr(policy, n):
            kept[n] = getattr(policy, n)
        elif p.default is p.empty:
            raise refused
    # the rebuild is trusted only if, without the options, it gives back the registry's
    # instance (every plain attribute equal): a name whose meaning is not a constructor
    # argument kept as an attribute (``fifo-backfill``) would otherwise be silently changed
    try:
        plain = cls(**kept)
    except (InvalidInstanceError, TypeError, ValueError):
        raise refused from None
    if _plain_state(plain) != _plain_state(policy):
        raise refused
    try:
        return cls(**{**kept, **options})
    except InvalidInstanceError as exc:
        raise InvalidInstanceError(f"{field}.options.{exc.field}", exc.message) from None
    except (TypeError, ValueError) as exc:
        raise InvalidInstanceError(f"{field}.options", str(exc)) from None


#: Policy options that are times, bounded as the experiment's own keys
#: (:data:`~optsched.limits.RANGES`).
_TIME_OPTIONS = {"round_seconds": "round_seconds", "lease_s": "round_seconds"}


def _strict_option(
    cls: type, params: dict[str, inspect.Parameter], key: str, value: Any, name: str, field: str
) -> Any:
    """``value`` validated against the type the constructor declares for ``key``, strictly.

    No coercion: ``backfill = "no"`` (or ``0``) is refused for a ``bool``, not read as true; an
    integer is accepted for a ``float`` (TOML writes ``2`` for ``2.0``), nothing else is
    converted. A time option is also bounded (``round_seconds`` as the experiment's key).
    """
    import typing

    from pydantic import TypeAdapter, ValidationError

    from optsched.limits import check_range

    if key not in params:
        raise InvalidInstanceError(
            field, f"policy {name!r} takes no option {key!r}; known: {sorted(params)}"
        )
    try:
        # the constructor's own annotations (getattr: the class's, not an instance's)
        hint = typing.get_type_hints(getattr(cls, "__init__")).get(key)  # noqa: B009
    except Exception:  # an annotation that does not resolve: no type to check against
        hint = None
    if hint is None:
        raise InvalidInstanceError(
            field, f"policy {name!r} declares no type for {key!r}, so it cannot be set from a file"
        )
    try:
        checked = TypeAdapter(hint).validate_python(value, strict=True)
    except ValidationError as exc:
        shown = getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
        raise InvalidInstanceError(
            field,
            f"must be {shown}, got {value!r} ({type(value).__name__}; no conversion is made: "
            f"{exc.errors()[0]['msg'].lower()})",
        ) from None
    if key in _TIME_OPTIONS and checked is not None:
        check_range(field, checked, _TIME_OPTIONS[key])
    return checked


def _plain_state(obj: Any) -> dict[str, Any]:
    return {
        k: v for k, v in vars(obj).items() if isinstance(v, str | int | float | bool | type(None))
    }


def experiment_labels(experiment: Any) -> list[str]:
    """Each policy's label in tables and run keys, in the file's order.

    ``experiment``: an :class:`~optsched.runs.experiment.Experiment` (its ``policy_specs``).

    A ``label`` given is used as is; otherwise the name the policy made with its options gives
    itself (``{ name = "srtf", options = { aware = true } }`` is ``srtf-perf``, a plug-in
    registered as ``sgf`` whose class is named ``smallest-gang`` is ``smallest-gang``), as
    :func:`~optsched.sim.comparison.compare` and :func:`~optsched.runs.sim_sweep.sweep` label the
    same policy; the registry name when the class gives none (the base ``"policy"``). The
    registry name stays in the record's spec (``policies[i].name``).

    Raises
    ------
    InvalidInstanceError
        A policy that cannot be made (``policies[i]...``), or a label two policies share
        (``policies[i].label``).
    """
    from optsched.sim.engine.policy import Policy

    labels: list[str] = []
    for i, spec in enumerate(experiment.policy_specs):
        made = make_experiment_policy(spec, field=f"policies[{i}]")
        label = spec.label or (made.name if made.name != Policy.name else spec.name)
        if label in labels:
            j = labels.index(label)
            raise InvalidInstanceError(
                f"policies[{i}].label",
                f"policies[{j}] and policies[{i}] are both labelled {label!r} (a policy is "
                "labelled by the name it gives itself); give each a distinct `label`",
            )
        labels.append(label)
    return labels
