"""The policy registry: names to factories, built-in and plug-in policies alike.

Every entry point of the simulator (:func:`~optsched.sim.simulate`, :func:`~optsched.sim.compare`,
:func:`~optsched.runs.sim_sweep.sweep`, ``optsched sim ...``) turns its policy argument into
:class:`~optsched.sim.engine.policy.Policy` objects here, so a policy registered once is usable
everywhere by its name, and a policy object is accepted wherever a name is.

A policy is added in one of three ways:

* in Python, :func:`register_policy` (``register_policy("my-fifo", MyFifo)``);
* by an installed distribution, through the entry-point group ``optsched.policies``
  (``[project.entry-points."optsched.policies"] my-fifo = "my_pkg:MyFifo"``); the entry
  points are read once, on the first lookup or listing (:mod:`importlib.metadata`);
* on the command line, ``--plugin MODULE`` (a module name or a ``.py`` file) imports it first
  (it registers its policies when imported), and ``--policy module:attr`` names a factory
  directly.

A *factory* is any callable taking no argument and returning a fresh
:class:`~optsched.sim.engine.policy.Policy` (a ``Policy`` subclass itself is one).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from importlib import metadata

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import Policy

__all__ = [
    "ENTRY_POINT_GROUP",
    "all_policy_names",
    "as_policies",
    "import_plugin",
    "make_policy",
    "policy_names",
    "register_policy",
    "unregister_policy",
]

#: The entry-point group installed distributions register policies under.
ENTRY_POINT_GROUP = "optsched.policies"

Factory = Callable[[], Policy]

_FACTORIES: dict[str, Factory] = {}
_BUILTIN: set[str] = set()
#: Built-in names that ``"all"`` leaves out (variants of another name, e.g. elastic gangs).
_NOT_IN_ALL: set[str] = set()
_entry_points_loaded = False


def register_policy(name: str, factory: Factory, *, replace: bool = False) -> None:
    """Register ``factory`` under ``name`` (usable by every entry point from now on).

    Parameters
    ----------
    name : str
        The policy's name: non-empty, no comma (policy lists are comma-separated) nor colon
        (``module:attr`` names a factory), no surrounding spaces.
    factory : callable
        Called with no argument, returns a fresh :class:`~optsched.sim.engine.policy.Policy`.
    replace : bool, default False
        Allow replacing a registered name (never a built-in one).

    Raises
    ------
    InvalidInstanceError
        A malformed name, a factory that is not callable, a name already registered (naming
        ``name``).
    """
    if not isinstance(name, str) or not name or name != name.strip() or set(name) & {",", ":"}:
        raise InvalidInstanceError(
            "name", f"a policy name must be non-empty, without ',' ':' or spaces, got {name!r}"
        )
    if not callable(factory):
        raise InvalidInstanceError("factory", f"must be callable, got {factory!r}")
    if name in _FACTORIES and (not replace or name in _BUILTIN):
        raise InvalidInstanceError("name", f"policy {name!r} is already registered")
    _FACTORIES[name] = factory


def unregister_policy(name: str) -> None:
    """Remove a registered (non-built-in) policy; an unknown name is refused naming ``name``."""
    if name in _BUILTIN or name not in _FACTORIES:
        raise InvalidInstanceError("name", f"no plug-in policy {name!r} is registered")
    del _FACTORIES[name]


def _builtin(name: str, factory: Factory, *, in_all: bool = True) -> None:
    register_policy(name, factory)
    _BUILTIN.add(name)
    if not in_all:
        _NOT_IN_ALL.add(name)


def all_policy_names() -> tuple[str, ...]:
    """What ``"all"`` names: every registered policy but the built-in variants (``-elastic``)."""
    return tuple(n for n in policy_names() if n not in _NOT_IN_ALL)


def _load_entry_points() -> None:
    """Register the ``optsched.policies`` entry points once (a broken one is named)."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _FACTORIES:
            continue
        try:
            factory = ep.load()
        except Exception as exc:  # a third-party import failing: say which entry point
            raise InvalidInstanceError(
                f"entry point {ENTRY_POINT_GROUP}:{ep.name}",
                f"{ep.value!r} failed to load: {type(exc).__name__}: {exc}",
            ) from exc
        register_policy(ep.name, factory)


def reload_entry_points() -> None:
    """Read the ``optsched.policies`` entry points again (after installing a distribution)."""
    global _entry_points_loaded
    _entry_points_loaded = False
    _load_entry_points()


def policy_names() -> tuple[str, ...]:
    """Every registered name: the built-in ones first, then plug-ins in registration order."""
    _load_entry_points()
    return tuple(_FACTORIES)


def import_plugin(module: str, *, field: str = "plugin") -> None:
    """Import ``module`` so that it registers its policies (``--plugin MODULE``).

    ``module`` is a module name on ``sys.path`` or the path of a ``.py`` file, loaded as the
    module named by its stem (``examples/my_policy.py``: ``my_policy``). A file's policies
    run in this process (``--backend serial``) unless its directory is on the workers'
    ``PYTHONPATH``.
    """
    if module.endswith(".py"):
        from importlib import util
        from pathlib import Path

        path = Path(module)
        if not path.is_file():
            raise InvalidInstanceError(field, f"no such file {module!r}")
        spec = util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise InvalidInstanceError(field, f"cannot load {module!r} as a Python module")
        loaded = util.module_from_spec(spec)
        sys.modules[path.stem] = loaded  # its classes pickle by this name
        try:
            spec.loader.exec_module(loaded)
        except Exception as exc:
            del sys.modules[path.stem]
            raise InvalidInstanceError(
                field, f"{module!r} failed to load: {type(exc).__name__}: {exc}"
            ) from exc
        return
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise InvalidInstanceError(field, f"cannot import {module!r}: {exc}") from exc


def _from_spec(spec: str, field: str) -> Policy:
    module, _, attr = spec.partition(":")
    try:
        target: object = importlib.import_module(module)
    except ImportError as exc:
        raise InvalidInstanceError(
            field, f"cannot import {module!r} (from {spec!r}): {exc}"
        ) from exc
    for part in attr.split("."):
        if not hasattr(target, part):
            raise InvalidInstanceError(field, f"{module!r} has no attribute {attr!r}")
        target = getattr(target, part)
    return _call(target, spec, field)


def _call(factory: object, name: str, field: str) -> Policy:
    made = factory() if callable(factory) else factory
    if not isinstance(made, Policy):
        raise InvalidInstanceError(
            field, f"the factory of {name!r} returned {type(made).__name__}, not a Policy"
        )
    return made


def make_policy(name: str | Policy, *, field: str = "policy") -> Policy:
    """A fresh policy by registered name (or ``module:attr``); a Policy object is returned as is.

    Raises
    ------
    InvalidInstanceError
        Naming ``field``: an unknown name (listing the known ones), a value neither a name nor
        a Policy, a factory that returns something else.
    """
    if isinstance(name, Policy):
        return name
    if not isinstance(name, str):
        raise InvalidInstanceError(
            field, f"must be a policy name or a Policy object, got {type(name).__name__}"
        )
    factory = _FACTORIES.get(name)
    if factory is None:
        _load_entry_points()
        factory = _FACTORIES.get(name)
    if factory is None:
        if ":" in name:
            return _from_spec(name, field)
        raise InvalidInstanceError(
            field, f"unknown policy {name!r}; known: {', '.join(policy_names())}"
        )
    return _call(factory, name, field)


def as_policies(
    policies: str | Policy | Iterable[str | Policy], *, field: str = "policies"
) -> list[Policy]:
    """Policies from a list of names and/or objects, a comma-separated string, or one object.

    ``"all"`` names every registered policy. Each policy is made fresh.

    Raises
    ------
    InvalidInstanceError
        Naming ``field``: no policy, an empty name in a comma list, an unknown name, a policy
        named twice.
    """
    if isinstance(policies, Policy):
        items: list[str | Policy] = [policies]
    elif isinstance(policies, str):
        text = policies.strip()
        if text == "all":
            items = list(all_policy_names())
        else:
            items = [t.strip() for t in policies.split(",")]
            if not text or any(not t for t in items):
                raise InvalidInstanceError(
                    field, f"expected comma-separated policy names, got {policies!r}"
                )
    else:
        try:
            items = list(policies)
        except TypeError:
            raise InvalidInstanceError(
                field,
                "must be a list of policy names or Policy objects, or a comma-separated string, "
                f"got {type(policies).__name__}",
            ) from None
    if not items:
        raise InvalidInstanceError(field, "name at least one policy")
    made = [make_policy(p, field=field) for p in items]
    names = [p.name for p in made]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise InvalidInstanceError(field, f"a policy is named twice: {', '.join(twice)}")
    return made
