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

A built-in name may also be *provided* by another package of optsched that builds on the
simulator (Harmony's placement policies, :data:`optsched.sim.policies.PROVIDED`): its factory
is a ``"module:attr"`` string (:class:`ProvidedFactory`), imported the first time the name is
made, so that the name is known at once and the simulator never imports that package.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import sys
from collections.abc import Callable, Iterable
from importlib import metadata

from optsched.errors import InvalidInstanceError
from optsched.sim.engine.policy import Policy

__all__ = [
    "ENTRY_POINT_GROUP",
    "ProvidedFactory",
    "all_policy_names",
    "as_policies",
    "import_plugin",
    "make_policy",
    "policy_names",
    "probe_plugin",
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


class ProvidedFactory:
    """The factory of a policy another package provides, imported on first use.

    Calling it imports the module of ``spec`` (``"module:attr"``) and returns ``attr(*args)``.
    The module is named by a string, so the simulator has no import of the providing package
    (which may import the simulator: Harmony runs on its engine).

    Parameters
    ----------
    spec : str
        ``"module:attr"``, ``attr`` a callable returning a :class:`Policy`.
    *args : object
        Passed to ``attr`` (a placement policy's name).
    """

    def __init__(self, spec: str, *args: object) -> None:
        module, _, attr = spec.partition(":")
        if not module or not attr:
            raise InvalidInstanceError("spec", f"must be 'module:attr', got {spec!r}")
        self.spec = spec
        self.args = args

    def __call__(self) -> Policy:
        module, _, attr = self.spec.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise InvalidInstanceError(
                "policy", f"the provider {self.spec!r} cannot be loaded: {exc}"
            ) from exc
        made: Policy = factory(*self.args)  # checked by the caller (make_policy)
        return made

    def __repr__(self) -> str:
        args = "".join(f", {a!r}" for a in self.args)
        return f"ProvidedFactory({self.spec!r}{args})"


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


#: Default seconds a plug-in's import may take in its probe (:func:`import_plugin`).
PLUGIN_PROBE_SECONDS = 60.0

#: What the probe prints once the import returned (a plug-in's own output cannot end in it).
_PROBE_DONE = "optsched-plugin-probe-done:"

_PROBE = """
import importlib, os, sys
target, done = sys.argv[1], sys.argv[2]
if target.endswith(".py"):
    from importlib import util
    from pathlib import Path
    path = Path(target)
    spec = util.spec_from_file_location(path.stem, path)
    module = util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
else:
    importlib.import_module(target)
sys.stdout.write("\\n" + done + "\\n")
sys.stdout.flush()
os._exit(0)
"""

#: Plug-ins imported in this process (module names and resolved ``.py`` paths).
_IMPORTED: set[str] = set()


def _last_line(text: bytes) -> str:
    lines = text.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:300] if lines else ""


def probe_plugin(module: str, *, field: str = "plugin", timeout: float | None = None) -> None:
    """Import ``module`` in a separate interpreter first, and refuse it if that import misbehaves.

    A module's import runs arbitrary code, and some of what it may do cannot be undone or caught
    in this process: ``os.abort()`` and a fatal signal end it with no word, ``signal.pause()``
    or an endless loop never returns, ``os._exit`` skips every handler. So the module is first
    imported in a child interpreter (same ``sys.path``, no standard input, its own session),
    which must print a completion line and exit 0 within ``timeout`` seconds.

    Guaranteed: a module whose import exits (any status), aborts, dies by a signal, raises, or
    does not return within ``timeout`` is refused naming ``field`` and the module, and nothing
    of it is imported into this process. Not guaranteed: a module that behaves differently on
    its second import (it reads a clock, a file, the network) is imported again in this process
    by :func:`import_plugin`, where only exceptions and ``SystemExit`` are caught; the probe
    also runs the module's import-time code once more than a plain import would.

    Raises
    ------
    InvalidInstanceError
        Naming ``field``: the import failed, exited, was killed, or timed out.
    """
    import os
    import signal
    import subprocess

    limit = PLUGIN_PROBE_SECONDS if timeout is None else timeout
    if not (isinstance(limit, int | float) and math.isfinite(limit) and limit > 0):
        raise InvalidInstanceError(f"{field}", f"probe timeout must be > 0, got {limit!r}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _PROBE, module, _PROBE_DONE],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise InvalidInstanceError(
            field, f"cannot start the import probe of {module!r}: {exc}"
        ) from None
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise InvalidInstanceError(
            field,
            f"plug-in {module!r} did not finish importing within {limit:g} s (it hangs or "
            "waits); nothing of it was imported",
        ) from None
    code = proc.returncode
    if code == 0 and out.decode("utf-8", "replace").rstrip().endswith(_PROBE_DONE):
        return
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        why = f"was killed by {name} while importing"
    elif out.decode("utf-8", "replace").rstrip().endswith(_PROBE_DONE):
        why = f"exited with status {code} after importing"
    elif code == 1 and b"Traceback" in err:
        why = f"failed to import: {_last_line(err)}"
    else:
        why = f"exited with status {code} while importing (it ends the process)"
    raise InvalidInstanceError(field, f"plug-in {module!r} {why}; nothing of it was imported")


def import_plugin(
    module: str, *, field: str = "plugin", probe: bool = True, timeout: float | None = None
) -> None:
    """Import ``module`` so that it registers its policies (``--plugin MODULE``), guarded.

    ``module`` is a module name on ``sys.path`` or the path of a ``.py`` file, loaded as the
    module named by its stem (``examples/my_policy.py``: ``my_policy``). A file's policies
    run in this process (``--backend serial``) unless its directory is on the workers'
    ``PYTHONPATH``. A plug-in already imported in this process is not imported again.

    The import is one guarded step: with ``probe`` (the default) it is first tried in a
    separate interpreter (:func:`probe_plugin`, ``timeout`` seconds), so that a module that
    exits, aborts or hangs while importing is refused naming ``field`` instead of ending or
    blocking this process; then it is imported here, where an exception or a ``SystemExit``
    is refused naming ``field`` too.

    Raises
    ------
    InvalidInstanceError
        Naming ``field``: no such file or module, or an import that fails, exits, aborts or
        hangs.
    """
    from pathlib import Path

    is_file = module.endswith(".py")
    if is_file and not Path(module).is_file():
        raise InvalidInstanceError(field, f"no such file {module!r}")
    ident = str(Path(module).resolve()) if is_file else module
    if ident in _IMPORTED:
        return
    if not is_file:
        from importlib import util

        try:
            # the top-level name only: finding ``pkg.mod`` would import ``pkg`` (run its code)
            # here, before the probe
            found = util.find_spec(module.partition(".")[0])
        except (ImportError, ValueError) as exc:
            raise InvalidInstanceError(field, f"cannot import {module!r}: {exc}") from None
        if found is None:
            raise InvalidInstanceError(field, f"cannot import {module!r}: no such module")
    if probe:
        probe_plugin(module, field=field, timeout=timeout)
    stem = Path(module).stem
    try:
        if is_file:
            from importlib import util

            spec = util.spec_from_file_location(stem, module)
            if spec is None or spec.loader is None:
                raise InvalidInstanceError(field, f"cannot load {module!r} as a Python module")
            loaded = util.module_from_spec(spec)
            sys.modules[stem] = loaded  # its classes pickle by this name
            spec.loader.exec_module(loaded)
        else:
            importlib.import_module(module)
    except InvalidInstanceError:
        raise
    except (Exception, SystemExit) as exc:
        if is_file:
            sys.modules.pop(stem, None)
        raise InvalidInstanceError(
            field, f"plug-in {module!r} failed to load: {type(exc).__name__}: {exc}"
        ) from None
    _IMPORTED.add(ident)


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
