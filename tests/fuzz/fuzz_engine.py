"""Mutation engine and contract checker for fuzzing the ``optsched`` command.

Shared by the in-suite fuzz tests (``tests/fuzz/test_fuzz_*.py``, seeded by Hypothesis) and the
longer campaign (``scripts/fuzz.py``, ``make fuzz``). Nothing here imports optsched: the command
is run as a user runs it, in a subprocess, under a wall-clock timeout and an address-space limit.

* :func:`make_seeds` writes one valid file of every format the command reads, with the command's
  own generators (and the library's price estimator for price files).
* :func:`mutate` turns a seed file into a hostile one, deterministically from ``(mutator, seed)``:
  byte flips, truncation, invalid UTF-8, deep nesting, extreme numbers, wrong types, missing,
  extra and duplicated keys, huge counts and horizons, blown-up lists.
* :data:`TARGETS` lists, per format, the command lines that read it; :data:`OPTION_CASES` the
  option values tried on each command.
* :func:`run_optsched` runs one command line; :func:`check_contract` classifies the outcome
  against the contract (exit 0, 2 naming a field, or 3; one JSON object on stdout with
  ``--json``; no traceback, no hang, no memory blow-up).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Wall-clock limit of one run (a run past it is a hang).
TIMEOUT_SECONDS = float(os.environ.get("OPTSCHED_FUZZ_TIMEOUT", "30"))
#: Wall-clock limit of a simulation over a blown-up trace: a mutant of up to
#: :data:`MAX_MUTANT_BYTES` holds some 60,000 jobs, which a policy replays in 20-50 s on two
#: shared cores (the 69,351-job ElasticFlow replay of ``bench_sim`` takes 21-73 s); that is work,
#: not a hang, so the limit is the simulator's, not the readers'.
SIM_BLOWUP_TIMEOUT_SECONDS = float(os.environ.get("OPTSCHED_FUZZ_SIM_TIMEOUT", "150"))
#: Address-space limit of one run (an allocation past it is a memory blow-up).
MEMORY_BYTES = int(float(os.environ.get("OPTSCHED_FUZZ_MEMORY", str(3 * 2**30))))
#: Largest mutant written (blown-up lists stop here).
MAX_MUTANT_BYTES = 8 * 2**20

REPO = Path(__file__).resolve().parents[2]


def optsched_command() -> list[str]:
    """The ``optsched`` command of the interpreter running the tests."""
    exe = Path(sys.executable).with_name("optsched")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("optsched")
    if found:
        return [found]
    return [sys.executable, "-c", "from optsched.cli import main; main()"]


# ------------------------------------------------------------------------------------------
# Running one command and checking the contract
# ------------------------------------------------------------------------------------------


@dataclass
class Run:
    """One finished (or killed) run of the command."""

    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    timeout: float = TIMEOUT_SECONDS


def _limits() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_optsched(
    args: Sequence[str], *, cwd: Path | None = None, timeout: float | None = None
) -> Run:
    """Run ``optsched ARGS`` under the timeout and the memory limit."""
    argv = [*optsched_command(), *args]
    env = dict(os.environ)
    env.pop("OPTSCHED_DEBUG", None)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[name] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    start = time.monotonic()
    with subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        preexec_fn=_limits,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=TIMEOUT_SECONDS if timeout is None else timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            timed_out = True
    return Run(
        argv=list(args),
        returncode=None if timed_out else proc.returncode,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        seconds=time.monotonic() - start,
        timed_out=timed_out,
        timeout=TIMEOUT_SECONDS if timeout is None else timeout,
    )


#: Outcome kinds, in the order the outcome table prints them.
KINDS = (
    "ok",
    "traceback",
    "hang",
    "memory",
    "signal",
    "exit1",
    "bad-exit",
    "json",
    "no-field",
    "unsafe",
)

_NAMED_PARAM = re.compile(r"'(-{1,2}[\w-]+|[A-Z][A-Z_]*)'|(--[a-z][\w-]+)|OPTSCHED_[A-Z_]+")


@dataclass
class Outcome:
    """How a run fared against the contract."""

    kind: str
    detail: str = ""
    payload: Any = None

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def _one_json_object(text: str) -> tuple[Any, str]:
    """The single JSON object on stdout, or an explanation of why there is not exactly one."""
    body = text.strip()
    if not body:
        return None, "no JSON object on stdout"
    constants: list[str] = []

    def constant(name: str) -> None:
        constants.append(name)

    try:
        value, end = json.JSONDecoder(parse_constant=constant).raw_decode(body)
    except json.JSONDecodeError as exc:
        return None, f"stdout is not JSON ({exc.msg} at {exc.pos})"
    if body[end:].strip():
        return None, "more than one JSON document on stdout"
    if not isinstance(value, dict):
        return None, f"stdout holds a JSON {type(value).__name__}, not an object"
    if constants:
        return value, f"stdout holds the non-standard token {constants[0]}"
    return value, ""


def _names_a_field(payload: Any, stderr: str) -> bool:
    if isinstance(payload, dict):
        if payload.get("field"):
            return True
        if payload.get("valid") is False and (
            payload.get("violations") or payload.get("errors") or payload.get("lines")
        ):
            return True
        message = str(payload.get("message", ""))
        if payload.get("error") == "UsageError" and _NAMED_PARAM.search(message):
            return True
        return False
    return bool(_NAMED_PARAM.search(stderr) or re.search(r"\b[\w.\[\]]+: ", stderr))


def _error_type(run: Run, payload: Any) -> str:
    if isinstance(payload, dict) and payload.get("type"):
        return str(payload["type"])
    if isinstance(payload, dict) and payload.get("error"):
        return str(payload["error"])
    match = re.findall(r"^(\w*(?:Error|Exception|Interrupt)\w*)\b", run.stderr, re.M)
    if match:
        return match[-1]
    match = re.search(r"internal error\s+(\w+)", run.stderr)
    return match.group(1) if match else ""


def check_contract(run: Run) -> Outcome:
    """Classify ``run`` (see :data:`KINDS`)."""
    wants_json = "--json" in run.argv
    payload, problem = _one_json_object(run.stdout) if wants_json else (None, "")
    tail = (run.stderr.strip().splitlines() or [""])[-1][:300]
    if run.timed_out:
        return Outcome("hang", f"no exit within {run.timeout:g} s", payload)
    etype = _error_type(run, payload)
    if "MemoryError" in etype or "MemoryError" in run.stderr or "bad_alloc" in run.stderr:
        return Outcome("memory", f"{etype}: {tail}", payload)
    if "Traceback (most recent call last)" in run.stderr:
        return Outcome("traceback", f"{etype}: {tail}", payload)
    assert run.returncode is not None
    if run.returncode < 0:
        return Outcome("signal", f"killed by signal {-run.returncode}: {tail}", payload)
    if run.returncode == 1:
        message = payload.get("message", "") if isinstance(payload, dict) else tail
        return Outcome("exit1", f"{etype}: {str(message)[:300]}", payload)
    if run.returncode not in (0, 2, 3):
        return Outcome("bad-exit", f"exit {run.returncode}: {tail}", payload)
    if wants_json and problem:
        return Outcome("json", problem, payload)
    if run.returncode == 2 and not _names_a_field(payload, run.stderr):
        return Outcome("no-field", f"exit 2 without a field named: {tail}", payload)
    return Outcome("ok", f"exit {run.returncode}", payload)


# ------------------------------------------------------------------------------------------
# Seeds: one valid file per format, written by the command's own generators
# ------------------------------------------------------------------------------------------

#: Format name -> seed file name.
SEED_FILES = {
    "oasis-instance": "oasis_instance.json",
    "oasis-instance-toml": "oasis_instance.toml",
    "oasis-schedule": "oasis_schedule.json",
    "oasis-prices": "oasis_prices.json",
    "placement-instance": "placement_instance.json",
    "placement": "placement.json",
    "tensorlights-instance": "tensorlights_instance.json",
    "dnn-profile": "dnn_profile.toml",
    "dnn-profile-json": "dnn_profile.json",
}


def _must(run: Run) -> None:
    if run.returncode != 0:
        raise RuntimeError(f"seed generation failed: optsched {' '.join(run.argv)}\n{run.stderr}")


def make_seeds(directory: Path) -> dict[str, Path]:
    """Write a small valid file of every format into ``directory``; return name -> path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    p = {name: d / file for name, file in SEED_FILES.items()}
    gen = ["--jobs", "4", "--worker-servers", "2", "--ps-servers", "2", "--horizon", "6"]
    _must(run_optsched(["oasis", "generate", *gen, "--seed", "1", "-o", str(p["oasis-instance"])]))
    _must(
        run_optsched(
            ["oasis", "generate", *gen, "--seed", "2", "-o", str(p["oasis-instance-toml"])]
        )
    )
    _must(
        run_optsched(["oasis", "offline", str(p["oasis-instance"]), "-o", str(p["oasis-schedule"])])
    )
    _write_prices(p["oasis-instance"], p["oasis-prices"])
    _must(
        run_optsched(
            [
                "placement",
                "generate",
                "--jobs",
                "3",
                "--servers",
                "3",
                "--seed",
                "1",
                "-o",
                str(p["placement-instance"]),
            ]
        )
    )
    _must(
        run_optsched(
            [
                "placement",
                "heuristic",
                str(p["placement-instance"]),
                "--name",
                "first-fit",
                "-o",
                str(p["placement"]),
            ]
        )
    )
    _must(
        run_optsched(
            [
                "tensorlights",
                "generate",
                "--generate",
                "--jobs",
                "3",
                "--iterations",
                "5,10",
                "--seed",
                "1",
                "-o",
                str(p["tensorlights-instance"]),
            ]
        )
    )
    profile = REPO / "optsched" / "models" / "alexnet.toml"
    shutil.copyfile(profile, p["dnn-profile"])
    p["dnn-profile-json"].write_text(
        json.dumps(tomllib.loads(profile.read_text(encoding="utf-8")), indent=1), encoding="utf-8"
    )
    return p


def _write_prices(instance: Path, out: Path) -> None:
    """A price file holding the prices the library estimates for ``instance`` in hindsight."""
    code = (
        "import json, sys\n"
        "from optsched.online.oasis.instance import load_instance\n"
        "from optsched.online.oasis.prices import estimate_prices\n"
        "inst = load_instance(sys.argv[1])\n"
        "p = estimate_prices(inst)\n"
        "res = list(p.resources)\n"
        "doc = {'upper_worker': {r: float(u) for r, u in zip(res, p.upper_worker) if u > 0},\n"
        "       'upper_ps': {r: float(u) for r, u in zip(res, p.upper_ps) if u > 0},\n"
        "       'lower_worker': p.lower_worker, 'lower_ps': p.lower_ps}\n"
        "open(sys.argv[2], 'w').write(json.dumps(doc, indent=1))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(instance), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"price seed failed:\n{done.stderr}")


# ------------------------------------------------------------------------------------------
# Targets: the command lines that read each format
# ------------------------------------------------------------------------------------------

#: ``{f}`` is the mutant; ``{oasis-instance}`` etc. name a valid seed; ``{out}`` a fresh directory.
TARGETS: dict[str, list[list[str]]] = {
    "oasis-instance": [
        ["validate", "{f}", "--json"],
        ["oasis", "offline", "{f}", "--time-limit", "10", "--json"],
        ["oasis", "online", "{f}", "--json"],
        ["oasis", "check", "{f}", "--time-limit", "10", "--json"],
    ],
    "oasis-instance-toml": [
        ["validate", "{f}", "--json"],
        ["oasis", "online", "{f}", "--json"],
    ],
    "oasis-schedule": [["validate", "{oasis-instance}", "{f}", "--json"]],
    "oasis-prices": [["oasis", "online", "{oasis-instance}", "--prices", "{f}", "--json"]],
    "placement-instance": [
        ["validate", "{f}", "--json"],
        ["placement", "solve", "{f}", "--time-limit", "10", "--json"],
        ["placement", "heuristic", "{f}", "--name", "best-fit-decreasing", "--json"],
        ["placement", "compare", "{f}", "--objective", "servers", "--time-limit", "5", "--json"],
    ],
    "placement": [["validate", "{placement-instance}", "{f}", "--json"]],
    "tensorlights-instance": [
        ["validate", "{f}", "--json"],
        ["tensorlights", "simulate", "{f}", "--json"],
        ["tensorlights", "compare", "{f}", "--json"],
        ["tensorlights", "best-order", "{f}", "--json"],
    ],
    "dnn-profile": [
        ["profile", "{f}", "--json"],
        ["pace", "run", "{f}", "--workers", "4", "--json"],
    ],
    "dnn-profile-json": [
        ["profile", "{f}", "--json"],
        ["pace", "run", "{f}", "--workers", "4", "--json"],
    ],
}


def command_name(template: Sequence[str]) -> str:
    """The subcommand words of a template (``oasis offline``)."""
    words = []
    for word in template:
        if word.startswith("{") or word.startswith("-"):
            break
        words.append(word)
    return " ".join(words)


def fill(
    template: Sequence[str], seeds: dict[str, Path], mutant: Path | None, out: Path
) -> list[str]:
    """Substitute the placeholders of a command template."""
    subs = {f"{{{name}}}": str(path) for name, path in seeds.items()}
    subs["{out}"] = str(out)
    if mutant is not None:
        subs["{f}"] = str(mutant)
    result = []
    for word in template:
        for key, value in subs.items():
            word = word.replace(key, value)
        result.append(word)
    return result


# ------------------------------------------------------------------------------------------
# Mutations
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """A token written verbatim (non-standard numbers, deep nesting)."""

    token: str


@dataclass
class DupDict:
    """An object written with a duplicated key."""

    pairs: list[tuple[str, Any]] = field(default_factory=list)


#: Numbers that break naive code: zero, negatives, extremes, non-finite, over-long.
NUMBER_TOKENS = [
    "0",
    "-1",
    "-0.0",
    "0.5",
    "1e308",
    "-1e308",
    "5e-324",
    "1e-300",
    "1e999",
    "-1e999",
    "NaN",
    "Infinity",
    "-Infinity",
    "1000000000",
    "1000000000000000000",
    "18446744073709551616",
    "9" * 4301,
    "2147483648",
    "1e30",
    "-1000000000",
]

#: Values for fields that drive sizes, loop counts or time scales.
EXTREME_TOKENS = [
    "1000000000",
    "10000000",
    "1000000000000",
    "1000000000000000000",
    "1e30",
    "1e18",
    "1e-12",
    "1e-300",
    "5e-324",
    "0",
    "-1",
    "1e308",
]

#: Field names that drive sizes, loop counts, time scales or divisors in the shipped formats.
SIZE_KEYS = re.compile(
    r"horizon|chunks|epochs|minibatch|count|iterations|workers|arrival|start|slot_s|"
    r"bandwidth|message_bytes|compute_time_s|_ms$|params|flops|capacity|gpu|cpu|memory|"
    r"dtype_bytes|total_params|weight|load|demand|deadline|period|throughput|batch",
    re.I,
)

WRONG_VALUES: list[Any] = [[], {}, "x", None, True, [1, 2], {"a": 1}, "", "1e3", [[]], -1, 1.5]


def _json_text(value: Any, toml_style: bool = False) -> str:
    """Serialise ``value`` (with :class:`Raw` and :class:`DupDict` leaves) as JSON."""
    if isinstance(value, Raw):
        return value.token
    if isinstance(value, DupDict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_json_text(v)}" for k, v in value.pairs) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_json_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_json_text(v) for v in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return json.dumps(value)


_TOML_RAW = {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, Raw):
        return _TOML_RAW.get(value.token, value.token)
    if isinstance(value, DupDict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.pairs) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if value is None:
        return '""'  # TOML has no null; the closest wrong type
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))


def _toml_text(doc: Any) -> str:
    """Serialise a document as TOML (top-level keys, every nested value inline)."""
    if isinstance(doc, DupDict):
        items = doc.pairs
    elif isinstance(doc, dict):
        items = list(doc.items())
    else:  # a TOML document is a table: wrap anything else in one key
        items = [("value", doc)]
    return "".join(f"{_toml_key(k)} = {_toml_value(v)}\n" for k, v in items)


def _paths(doc: Any) -> list[tuple[Any, ...]]:
    """Every path (tuple of keys/indices) in ``doc``, the root first (iterative)."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        value, path = stack.pop()
        out.append(path)
        if isinstance(value, dict):
            stack.extend((v, (*path, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
    out.sort(key=lambda p: [str(x) for x in p])
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _describe(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<root>"


def _leaves(doc: Any, pred: Callable[[tuple[Any, ...], Any], bool]) -> list[tuple[Any, ...]]:
    return [p for p in _paths(doc) if pred(p, _get(doc, p))]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


Mutation = tuple[bytes, str]


def _byte_flip(rng: random.Random, raw: bytes, _: str) -> Mutation:
    data = bytearray(raw)
    n = rng.randint(1, 8)
    spots = sorted(rng.randrange(len(data)) for _ in range(n)) if data else []
    for i in spots:
        data[i] ^= rng.randint(1, 255)
    return bytes(data), f"flipped bytes at {spots}"


def _truncate(rng: random.Random, raw: bytes, _: str) -> Mutation:
    cut = rng.choice([0, 1, rng.randrange(len(raw) + 1), len(raw) // 2, len(raw) - 1])
    return raw[: max(cut, 0)], f"truncated to {max(cut, 0)} of {len(raw)} bytes"


_BAD_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\xbc", b"\x80", b"\xfe\xff"]


def _invalid_utf8(rng: random.Random, raw: bytes, _: str) -> Mutation:
    # Inside a string value when there is one (the loader must still name the line).
    quotes = [i for i, b in enumerate(raw) if b == 0x22]
    at = rng.choice(quotes) + 1 if quotes and rng.random() < 0.7 else rng.randrange(len(raw) + 1)
    bad = rng.choice(_BAD_UTF8)
    return raw[:at] + bad + raw[at:], f"inserted invalid UTF-8 {bad!r} at byte {at}"


def _structured(
    fn: Callable[[random.Random, Any], tuple[Any, str]],
) -> Callable[[random.Random, bytes, str], Mutation]:
    def mutate_doc(rng: random.Random, raw: bytes, suffix: str) -> Mutation:
        text = raw.decode("utf-8")
        doc = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
        doc, what = fn(rng, doc)
        out = _toml_text(doc) if suffix == ".toml" else _json_text(doc)
        return out.encode("utf-8"), what

    mutate_doc.__name__ = fn.__name__
    return mutate_doc


def _deep_nesting(rng: random.Random, doc: Any) -> tuple[Any, str]:
    path = rng.choice(_paths(doc)[1:] or [()])
    depth = rng.choice([65, 1000, 100_000])
    if rng.random() < 0.5:
        token = "[" * depth + "1" + "]" * depth
    else:
        token = '{"a": ' * depth + "1" + "}" * depth
    return _set(doc, path, Raw(token)), f"{_describe(path)} nested {depth} deep"


def _number(rng: random.Random, doc: Any) -> tuple[Any, str]:
    numbers = _leaves(doc, lambda p, v: _is_number(v) and bool(p))
    path = rng.choice(numbers or _paths(doc)[1:] or [()])
    token = rng.choice(NUMBER_TOKENS)
    shown = token if len(token) < 30 else f"{token[:5]}...({len(token)} digits)"
    return _set(doc, path, Raw(token)), f"{_describe(path)} = {shown}"


def _extreme_size(rng: random.Random, doc: Any) -> tuple[Any, str]:
    def sized(p: tuple[Any, ...], v: Any) -> bool:
        names = [k for k in p if isinstance(k, str)]
        return _is_number(v) and bool(names) and bool(SIZE_KEYS.search(names[-1]))

    targets = _leaves(doc, sized) or _leaves(doc, lambda p, v: _is_number(v) and bool(p))
    if not targets:
        return _number(rng, doc)
    path = rng.choice(targets)
    token = rng.choice(EXTREME_TOKENS)
    return _set(doc, path, Raw(token)), f"{_describe(path)} = {token}"


def _wrong_type(rng: random.Random, doc: Any) -> tuple[Any, str]:
    path = rng.choice(_paths(doc)[1:] or [()])
    value = rng.choice(WRONG_VALUES)
    return _set(doc, path, value), f"{_describe(path)} = {json.dumps(value)}"


def _missing_key(rng: random.Random, doc: Any) -> tuple[Any, str]:
    objects = _leaves(doc, lambda p, v: isinstance(v, dict) and bool(v))
    if not objects:
        return _wrong_type(rng, doc)
    path = rng.choice(objects)
    key = rng.choice(sorted(_get(doc, path)))
    del _get(doc, path)[key]
    return doc, f"removed {_describe((*path, key))}"


def _extra_key(rng: random.Random, doc: Any) -> tuple[Any, str]:
    objects = _leaves(doc, lambda p, v: isinstance(v, dict))
    if not objects:
        return _wrong_type(rng, doc)
    path = rng.choice(objects)
    key = rng.choice(["zz_extra", "Kind", "__proto__", "", "kind", "horizon", "jobs"])
    value = rng.choice([1, "x", None, [], {"nested": 1}])
    _get(doc, path)[key] = value
    return doc, f"added {_describe((*path, key))} = {json.dumps(value)}"


def _duplicate_key(rng: random.Random, doc: Any) -> tuple[Any, str]:
    objects = _leaves(doc, lambda p, v: isinstance(v, dict) and bool(v))
    if not objects:
        return _wrong_type(rng, doc)
    path = rng.choice(objects)
    obj = _get(doc, path)
    key = rng.choice(sorted(obj))
    pairs = list(obj.items())
    other = rng.choice([obj[key], 0, "x", None])
    pairs.insert(rng.randrange(len(pairs) + 1), (key, other))
    return _set(doc, path, DupDict(pairs)), f"duplicated key {_describe((*path, key))}"


def _list_blowup(rng: random.Random, doc: Any) -> tuple[Any, str]:
    lists = _leaves(doc, lambda p, v: isinstance(v, list) and bool(v))
    if not lists:
        return _extreme_size(rng, doc)
    path = rng.choice(lists)
    items = _get(doc, path)
    size = max(len(_json_text(x)) for x in items) + 2
    target = min(rng.choice([1000, 5000, 20000, 100_000]), MAX_MUTANT_BYTES // size)
    grown = [items[i % len(items)] for i in range(max(target, len(items)))]
    grown = json.loads(json.dumps(grown, default=str)) if not _has_raw(grown) else grown
    return _set(doc, path, grown), f"{_describe(path)} grown to {len(grown)} items"


def _has_raw(value: Any) -> bool:
    return "Raw(" in repr(value) or "DupDict(" in repr(value)


def _empty(rng: random.Random, doc: Any) -> tuple[Any, str]:
    containers = _leaves(doc, lambda p, v: isinstance(v, (list, dict)))
    path = rng.choice(containers or [()])
    value: Any = [] if isinstance(_get(doc, path), list) else {}
    return _set(doc, path, value), f"{_describe(path)} emptied"


def _bom_and_nul(rng: random.Random, raw: bytes, _: str) -> Mutation:
    choice = rng.choice(["bom", "nul", "crlf", "bom-twice"])
    if choice == "bom":
        return b"\xef\xbb\xbf" + raw, "prefixed a UTF-8 byte order mark"
    if choice == "bom-twice":
        return b"\xef\xbb\xbf\xef\xbb\xbf" + raw, "prefixed two byte order marks"
    if choice == "crlf":
        return raw.replace(b"\n", b"\r\n"), "CRLF line ends"
    at = rng.randrange(len(raw) + 1)
    return raw[:at] + b"\x00" + raw[at:], f"inserted a NUL byte at {at}"


#: Mutator name -> function(rng, seed bytes, suffix) -> (mutant bytes, description).
MUTATORS: dict[str, Callable[[random.Random, bytes, str], Mutation]] = {
    "byte-flip": _byte_flip,
    "truncate": _truncate,
    "invalid-utf8": _invalid_utf8,
    "bom-nul-crlf": _bom_and_nul,
    "deep-nesting": _structured(_deep_nesting),
    "number": _structured(_number),
    "extreme-size": _structured(_extreme_size),
    "wrong-type": _structured(_wrong_type),
    "missing-key": _structured(_missing_key),
    "extra-key": _structured(_extra_key),
    "duplicate-key": _structured(_duplicate_key),
    "list-blowup": _structured(_list_blowup),
    "empty": _structured(_empty),
}


def mutate(seed_path: Path, mutator: str, seed: int) -> Mutation:
    """The mutant of ``seed_path`` made by ``mutator`` from ``seed`` (deterministic)."""
    rng = random.Random(f"{seed_path.name}:{mutator}:{seed}")
    raw = seed_path.read_bytes()
    return MUTATORS[mutator](rng, raw, seed_path.suffix.lower())


# ------------------------------------------------------------------------------------------
# Option mutations
# ------------------------------------------------------------------------------------------

#: Hostile option values.
HOSTILE_VALUES = [
    "nan",
    "inf",
    "-inf",
    "-1",
    "0",
    "1e-300",
    "1e308",
    "1e999",
    "abc",
    "",
    "-5",
    "1000000000",
    "99999999999999999999999",
    "0x10",
]

#: (command template, option, values): the command line gets ``option value`` appended.
OPTION_CASES: list[tuple[list[str], str, list[str]]] = [
    (["oasis", "offline", "{oasis-instance}", "--json"], "--time-limit", HOSTILE_VALUES),
    (["oasis", "offline", "{oasis-instance}", "--json"], "--mip-gap", [*HOSTILE_VALUES, "10"]),
    (["oasis", "offline", "{oasis-instance}", "--json"], "--solver", ["bogus", "", "HIGHS"]),
    (
        ["oasis", "offline", "{oasis-instance}", "--json"],
        "-o",
        ["{out}/x.csv", "{out}/x", "{out}", "/dev/full/x.json"],
    ),
    (["oasis", "online", "{oasis-instance}", "--json"], "--multiplier", HOSTILE_VALUES),
    (["oasis", "online", "{oasis-instance}", "--json"], "--warmup", HOSTILE_VALUES),
    (
        ["oasis", "online", "{oasis-instance}", "--json"],
        "--prices",
        ["{out}", "/dev/zero", "{out}/absent.json", "{fifo}", "bogus"],
    ),
    (["oasis", "check", "{oasis-instance}", "--json"], "--time-limit", ["nan", "inf", "-1"]),
    (
        ["oasis", "generate", "--jobs", "3", "-o", "{out}/g.json"],
        "--horizon",
        ["1000000000", "1000000000000000000", "-1", "0"],
    ),
    (["oasis", "generate", "--horizon", "5", "-o", "{out}/g.json"], "--jobs", ["1000000000"]),
    (["oasis", "generate", "--jobs", "3", "-o", "{out}/g.json"], "--seed", ["-5", "2" * 60]),
    (
        [
            "oasis",
            "ratio",
            "--instances",
            "2",
            "--jobs",
            "3",
            "--horizon",
            "4",
            "-o",
            "{out}/r",
            "--json",
        ],
        "--seed",
        ["-5", "99999999999999999999999"],
    ),
    (
        [
            "oasis",
            "ratio",
            "--instances",
            "2",
            "--jobs",
            "3",
            "--horizon",
            "4",
            "-o",
            "{out}/r",
            "--json",
        ],
        "--time-limit",
        ["nan", "inf"],
    ),
    (["placement", "solve", "{placement-instance}", "--json"], "--time-limit", HOSTILE_VALUES),
    (["placement", "solve", "{placement-instance}", "--json"], "--solver", ["bogus"]),
    (["placement", "solve", "{placement-instance}", "--json"], "-o", ["{out}/x.csv"]),
    (
        ["placement", "generate", "--servers", "3", "-o", "{out}/p.json"],
        "--jobs",
        ["1000000000", "-1"],
    ),
    (
        ["placement", "generate", "--jobs", "3", "-o", "{out}/p.json"],
        "--gpus",
        ["1000000000", "1000000000000000000"],
    ),
    (
        ["tensorlights", "simulate", "--generate", "--json"],
        "--period",
        ["1e-300", "5e-324", "nan", "inf"],
    ),
    (
        ["tensorlights", "simulate", "--generate", "--policy", "rotate", "--json"],
        "--period",
        ["1e-300", "5e-324", "1e308", "nan"],
    ),
    (["tensorlights", "simulate", "--generate", "--json"], "--bandwidth", HOSTILE_VALUES),
    (["tensorlights", "simulate", "--generate", "--json"], "--jobs", ["1000000000"]),
    (["tensorlights", "simulate", "--generate", "--json"], "--jitter", ["nan", "0.99999", "-0"]),
    (["tensorlights", "compare", "--generate", "--json"], "--period", ["1e-300", "nan"]),
    (["pace", "run", "alexnet", "--json"], "--workers", HOSTILE_VALUES),
    (["pace", "run", "alexnet", "--json"], "--bandwidth", HOSTILE_VALUES),
    (["pace", "run", "alexnet", "--json"], "--latency-us", HOSTILE_VALUES),
    (["pace", "run", "alexnet", "--json"], "--partition-mb", HOSTILE_VALUES),
    (["pace", "run", "alexnet", "--json"], "--fusion-mb", ["nan", "0", "-1", "1e-300"]),
    (["pace", "run", "alexnet", "--json"], "--cycle-ms", ["nan", "0", "-1", "1e-300"]),
    (["pace", "run", "alexnet", "--json"], "--update-ms-per-mb", ["nan", "-1", "1e308"]),
    (["profile", "--json"], "", ["{out}", "/dev/zero", "{fifo}", "{out}/absent.toml", "no-such"]),
    (["validate", "--json"], "", ["{out}", "/dev/zero", "{fifo}", "{out}/absent.json"]),
]


def option_cases() -> list[tuple[list[str], str]]:
    """Every (command template, description) of :data:`OPTION_CASES`, flattened."""
    out = []
    for template, option, values in OPTION_CASES:
        for value in values:
            extra = [option, value] if option else [value]
            out.append(([*template, *extra], f"{option or 'argument'} {value!r}"))
    return out


def prepare_special_files(out: Path) -> dict[str, Path]:
    """Files that are not regular: a FIFO (nobody writes to it)."""
    fifo = out / "fifo.json"
    if not fifo.exists():
        os.mkfifo(fifo)
    return {"fifo": fifo}


# ------------------------------------------------------------------------------------------
# The simulator's surface: traces of every format, world files, throughput tables, run stores
# and cluster strings (the campaign of ``make fuzz``; the in-suite tests keep to TARGETS)
# ------------------------------------------------------------------------------------------

_TRACE_DATA = REPO / "tests" / "data"

#: Format name -> (seed file name, the shipped sample it is cut from: header and 12 rows).
TRACE_SEEDS: dict[str, tuple[str, Path]] = {
    "trace-elasticflow": (
        "elasticflow.csv",
        _TRACE_DATA / "traces" / "elasticflow" / "cluster10_head40.csv",
    ),
    "trace-gavel": (
        "gavel.trace",
        _TRACE_DATA / "traces" / "gavel" / "physical_cluster_small_test.trace",
    ),
    "trace-tiresias": ("tiresias.csv", _TRACE_DATA / "traces" / "schema" / "tiresias_jobs.csv"),
    "trace-helios": ("helios.csv", _TRACE_DATA / "traces" / "schema" / "helios_cluster_log.csv"),
    "trace-philly": ("philly.csv", _TRACE_DATA / "traces" / "schema" / "philly_trace.csv"),
    "trace-pai-job": ("pai_job.csv", _TRACE_DATA / "traces" / "schema" / "pai_job_table.csv"),
    "trace-pai-task": ("pai_task.csv", _TRACE_DATA / "traces" / "schema" / "pai_task_table.csv"),
}

#: Formats whose seeds :func:`make_sim_seeds` writes, -> seed file name.
SIM_SEED_FILES = {
    **{name: file for name, (file, _) in TRACE_SEEDS.items()},
    "trace-normalized": "normalized.csv",
    "sim-world": "world.json",
    "throughputs": "throughputs.json",
    "run-store": "runs.sqlite",
    "sim-experiment": "experiment.toml",
    "experiment-store": "experiment.sqlite",
}

_SIM_CLUSTER = "v100=16,p100=16,k80=16"
#: The cluster of the traces of ElasticFlow's profiled models (its A100 table is their default).
_EF_CLUSTER = "a100=16:8"

#: ``{f}`` is the mutant; ``{trace-normalized}`` etc. a valid seed; ``{out}`` a fresh folder.
SIM_TARGETS: dict[str, list[list[str]]] = {
    **{
        name: [
            ["trace", "info", "{f}", "--json"],
            ["trace", "convert", "{f}", "{out}/c.csv", "--json"],
            [
                "sim",
                "run",
                "{f}",
                "--cluster",
                _EF_CLUSTER if name in ("trace-elasticflow", "trace-normalized") else _SIM_CLUSTER,
                "--policy",
                "fifo",
                "--json",
            ],
        ]
        for name in (*TRACE_SEEDS, "trace-normalized")
        if not name.startswith("trace-pai")
    },
    # a PAI job table has its GPU demand in the task table beside it
    "trace-pai-job": [
        ["trace", "info", "{f}", "--tasks", "{trace-pai-task}", "--json"],
        ["trace", "convert", "{f}", "{out}/c.csv", "--tasks", "{trace-pai-task}", "--json"],
    ],
    "trace-pai-task": [
        ["trace", "info", "{trace-pai-job}", "--tasks", "{f}", "--json"],
        ["trace", "convert", "{trace-pai-job}", "{out}/c.csv", "--tasks", "{f}", "--json"],
    ],
    "sim-world": [["validate", "{f}", "--json"]],
    "throughputs": [
        [
            "sim",
            "run",
            "{trace-normalized}",
            "--cluster",
            "v100=16,p100=16",
            "--throughputs",
            "{f}",
            "--policy",
            "max-min",
            "--json",
        ]
    ],
    # an experiment file: its outputs (store, report) are written beside the mutant
    "sim-experiment": [["sim", "sweep", "{f}", "--backend", "serial", "--json"]],
    "experiment-store": [["sim", "report", "{f}", "-o", "{out}/report", "--json"]],
    "run-store": [
        [
            "sim",
            "sweep",
            "{trace-normalized}",
            "--cluster",
            _EF_CLUSTER,
            "--policies",
            "fifo,srtf",
            "-j",
            "1",
            "--store",
            "{f}",
            "--json",
        ]
    ],
}

#: Hostile cluster strings (``--cluster``), tried on ``sim run`` by the option campaign.
CLUSTER_VALUES = [
    "",
    "v100",
    "=4",
    "v100=",
    "v100=0",
    "v100=-1",
    "v100=nan",
    "v100=1e999",
    "v100=99999999999999999999",
    "v100=4:0",
    "v100=4:1e308",
    "v100=4:-2",
    "v100=4,v100=4",
    "v100=4,,p100=4",
    "V100=4",
    "v 100=4",
    "x" * 10_000 + "=1",
    "v100=4;p100=4",
    "v100=1000000000",
]

SIM_OPTION_CASES: list[tuple[list[str], str, list[str]]] = [
    (
        ["sim", "run", "{trace-normalized}", "--policy", "fifo", "--json"],
        "--cluster",
        CLUSTER_VALUES,
    ),
    (
        ["sim", "sweep", "{trace-normalized}", "--policies", "fifo", "--json"],
        "--cluster",
        ["a100=0", "a100=1e999", "=4"],
    ),
    (
        ["sim", "sweep", "{trace-normalized}", "--cluster", _EF_CLUSTER, "--json"],
        "-j",
        ["0", "-1000", "1000", "abc"],
    ),
    (
        ["sim", "compare", "{trace-normalized}", "--cluster", _EF_CLUSTER, "--json"],
        "--time-limit",
        ["nan", "inf", "-1", "0", "1e-300"],
    ),
]


def sim_option_cases() -> list[tuple[list[str], str]]:
    """Every (command template, description) of :data:`SIM_OPTION_CASES`, flattened."""
    out = []
    for template, option, values in SIM_OPTION_CASES:
        for value in values:
            out.append(([*template, option, value], f"{option} {value[:40]!r}"))
    return out


def make_sim_seeds(directory: Path) -> dict[str, Path]:
    """Write a small valid file of every simulator format into ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    p = {name: d / file for name, file in SIM_SEED_FILES.items()}
    for name, (_, sample) in TRACE_SEEDS.items():
        lines = sample.read_bytes().splitlines(keepends=True)
        p[name].write_bytes(b"".join(lines[:13]))
    _must(
        run_optsched(["trace", "convert", str(p["trace-elasticflow"]), str(p["trace-normalized"])])
    )
    shutil.copyfile(_TRACE_DATA / "gavel" / "simulation_throughputs_alone.json", p["throughputs"])
    code = (
        "import sys\n"
        "from optsched.traces import read_trace\n"
        "from optsched.sim import parse_cluster\n"
        "from optsched.sim.comparison import world_from_trace\n"
        "world = world_from_trace(read_trace(sys.argv[1]), parse_cluster('v100=16'), 'uniform')\n"
        "world.save(sys.argv[2])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(p["trace-normalized"]), str(p["sim-world"])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"world seed failed:\n{done.stderr}")
    store_argv = [
        word.replace("{trace-normalized}", str(p["trace-normalized"])).replace(
            "{f}", str(p["run-store"])
        )
        for word in SIM_TARGETS["run-store"][0]
    ]
    _must(run_optsched(store_argv))
    p["sim-experiment"].write_text(EXPERIMENT_SEED, encoding="utf-8")
    _must(
        run_optsched(
            [
                *("sim", "sweep", str(p["sim-experiment"]), "--backend", "serial"),
                *("--store", str(p["experiment-store"]), "--json"),
            ]
        )
    )
    return p


# ------------------------------------------------------------------------------------------
# Experiment files, experiment stores and the writers (the third campaign's surface)
# ------------------------------------------------------------------------------------------

#: A valid experiment file: two policies (one with options), a store and a report beside it.
EXPERIMENT_SEED = """name = "seed"
description = "fuzz seed"
traces = ["synthetic:6"]
clusters = ["v100=8"]
policies = ["fifo", { name = "fifo", label = "bf", options = { backfill = true } }]
seeds = [0]
loads = [1.0]
cluster_scales = [1.0]
round_seconds = 360.0
restore_s = 0.0
reference = "v100"

[outputs]
store = "experiment-runs.sqlite"
report = "experiment-report"
"""

#: A module whose import leaves ``IMPORTED`` in the folder it is imported from (the run's
#: folder): any import the data file causes is seen.
MARKER_MODULE = "from pathlib import Path\nPath('IMPORTED').write_text('x')\n"

#: A name that is HTML, console markup and Matplotlib math text at once.
HOSTILE_NAME = "<script>alert(1)</script> <img src=x onerror=alert(1)> [/x] $\\bad{$ |`"

#: Hostile strings tried at every text key of an experiment file.
HOSTILE_STRINGS = [
    "os:abort",
    "sys:exit",
    "signal:pause",
    "plug:Policy",
    "{outside}/out",  # an absolute path beside the run's folder (fuzz.py fills it in)
    "../escape",
    HOSTILE_NAME,
    "",
    "no",
]

#: Hostile scalars tried at every number or boolean key.
HOSTILE_SCALARS: list[Any] = [1e300, 1e-300, -1, 0, True, "no", "false", [], {}]

_TEXT_KEYS: list[tuple[Any, ...]] = [
    ("name",),
    ("description",),
    ("traces", 0),
    ("clusters", 0),
    ("policies", 0),
    ("policies", 1, "name"),
    ("policies", 1, "label"),
    ("outputs", "store"),
    ("outputs", "report"),
    ("outputs", "csv"),
    ("reference",),
    ("throughputs",),
]
_NUMBER_KEYS: list[tuple[Any, ...]] = [
    ("round_seconds",),
    ("restore_s",),
    ("loads", 0),
    ("seeds", 0),
    ("cluster_scales", 0),
    ("policies", 1, "options", "backfill"),
]
_PLUGINS = [["plug.py"], ["os"], ["plug.py", "plug.py"], [HOSTILE_NAME]]


def _put(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    target = doc
    for part in path[:-1]:
        target = target[part]
    if isinstance(target, dict) or (isinstance(target, list) and path[-1] < len(target)):
        target[path[-1]] = value
    return doc


def experiment_cases() -> list[tuple[str, str]]:
    """Every (experiment file text, description): hostile values at every key of the seed."""
    seed = tomllib.loads(EXPERIMENT_SEED)
    out: list[tuple[str, str]] = []
    for keys, values in ((_TEXT_KEYS, HOSTILE_STRINGS), (_NUMBER_KEYS, HOSTILE_SCALARS)):
        for path in keys:
            for value in values:
                doc = _put(json.loads(json.dumps(seed)), path, value)
                out.append((_toml_text(doc), f"{_describe(path)} = {json.dumps(value)[:50]}"))
    for plugins in _PLUGINS:
        doc = {**json.loads(json.dumps(seed)), "plugins": plugins}
        out.append((_toml_text(doc), f"plugins = {json.dumps(plugins)[:50]}"))
    return out


#: Structured mutators applied to a stored record (or the stored config) before its checksum
#: is recomputed: the store's checksum then matches, and only the reader's checks stand.
STORE_REWRITES = ("deep-nesting", "number", "wrong-type", "missing-key", "extra-key", "empty")

_STRUCTURED_FNS: dict[str, Callable[[random.Random, Any], tuple[Any, str]]] = {
    "deep-nesting": _deep_nesting,
    "number": _number,
    "wrong-type": _wrong_type,
    "missing-key": _missing_key,
    "extra-key": _extra_key,
    "empty": _empty,
}


def rewrite_store(store: Path, mutator: str, seed: int) -> str:
    """Mutate one record (or the config) of ``store`` and give it a checksum that matches.

    The checksum is recomputed as anyone editing the file can: SHA-256 of the kind, the key and
    the text (:mod:`optsched.runs.store`). Returns the description of the edit.
    """
    import hashlib
    import sqlite3

    rng = random.Random(f"store:{mutator}:{seed}")
    fn = _STRUCTURED_FNS[mutator]
    with sqlite3.connect(store) as db:
        meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
        rows = db.execute("SELECT key, record FROM runs ORDER BY key").fetchall()
        if rng.random() < 0.2 or not rows:
            doc, what = fn(rng, json.loads(meta["config"]))
            db.execute("UPDATE meta SET value = ? WHERE name = 'config'", (_json_text(doc),))
            return f"config: {what}"
        key, text = rng.choice(rows)
        doc, what = fn(rng, json.loads(text))
        new = _json_text(doc)
        digest = hashlib.sha256(f"{meta['kind']}\0{key}\0{new}".encode()).hexdigest()
        db.execute("UPDATE runs SET record = ?, checksum = ? WHERE key = ?", (new, digest, key))
        return f"record: {what}"


def outside(work: Path) -> Path:
    """The folder beside ``work`` that a hostile absolute output path of its run names."""
    return work.with_name(work.name + "-outside")


def writer_breach(work: Path) -> str:
    """A breach found in what a run left in ``work``: an import, or raw HTML in a report.

    Returns ``""`` when none. Fenced blocks of ``report.md`` are text (the experiment file is
    quoted in one), so only what lies outside them counts.
    """
    if (work / "IMPORTED").exists():
        return "a module named by a data file was imported"
    if outside(work).exists():
        shutil.rmtree(outside(work), ignore_errors=True)
        return "a data file wrote outside its folder"
    for path in work.rglob("report.md"):
        text = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1$", "", path.read_text(errors="replace"))
        for bad in ("<script", "<img"):
            if bad in text:
                return f"{path.name} carries {bad!r} unescaped"
    for path in work.rglob("report.html"):
        if "<script" in path.read_text(errors="replace"):
            return f"{path.name} carries '<script' unescaped"
    return ""


#: Suffixes of row-per-line files: the structured mutators edit their cells.
TABULAR = (".csv", ".trace")


def mutate_any(seed_path: Path, mutator: str, seed: int) -> Mutation:
    """:func:`mutate`, with the structured mutators made cell-wise for CSV and Gavel traces,
    and byte-wise for binary files (a SQLite store)."""
    suffix = seed_path.suffix.lower()
    if suffix in (".json", ".toml") or mutator in _BYTE_MUTATORS:
        return mutate(seed_path, mutator, seed)
    rng = random.Random(f"{seed_path.name}:{mutator}:{seed}")
    raw = seed_path.read_bytes()
    if suffix not in TABULAR:
        # a binary store: what a damaged disk does (flips, truncation, NUL runs)
        return _byte_flip(rng, raw, suffix)
    return _tabular(rng, raw, mutator)


_BYTE_MUTATORS = {"byte-flip", "truncate", "invalid-utf8", "bom-nul-crlf"}


def _tabular(rng: random.Random, raw: bytes, mutator: str) -> Mutation:
    text = raw.decode("utf-8", "replace")
    lines = text.splitlines()
    sep = "\t" if "\t" in lines[0] else ","
    rows = [line.split(sep) for line in lines]
    # Gavel's traces have no header; every other format's first line is one
    first = 0 if sep == "\t" else 1
    body = rows[first:] or rows
    width = max(len(r) for r in rows)
    col = rng.randrange(width)
    if mutator in ("number", "extreme-size", "wrong-type", "deep-nesting"):
        row = rng.choice(body)
        col = rng.randrange(len(row))
        pool = {
            "number": NUMBER_TOKENS,
            "extreme-size": EXTREME_TOKENS,
            "wrong-type": ["", "x", "[]", "{}", "true", "None", '"', "1,5", "0x10"],
            "deep-nesting": ["[" * 1000, "9" * 100_000, sep * 500],
        }[mutator]
        token = rng.choice(pool)
        row[col] = token
        what = f"cell {col} of a row set to {token[:40]!r}"
    elif mutator == "missing-key":
        for r in rows:
            if col < len(r):
                del r[col]
        what = f"column {col} removed"
    elif mutator == "extra-key":
        for r in rows:
            r.append("bogus")
        what = "an extra column"
    elif mutator == "duplicate-key":
        rows.append(list(rng.choice(body)))
        if first:
            rows[0].append(rows[0][col])
        what = "a duplicated row (and header column)"
    elif mutator == "list-blowup":
        copies = max(1, MAX_MUTANT_BYTES // max(1, len(raw)))
        rows = rows[:first] + body * copies
        what = f"rows repeated {copies} times"
    else:  # "empty"
        rows = rows[:first]
        what = "every row removed"
    out = "\n".join(sep.join(r) for r in rows) + "\n"
    return out.encode("utf-8")[:MAX_MUTANT_BYTES], what


# ------------------------------------------------------------------------------------------
# Hostile Harmony checkpoints: settings, shapes, weights and archives
# ------------------------------------------------------------------------------------------
#: Values put in every setting of a checkpoint (re-saved with a valid digest, so that the
#: loader's bounds, not its integrity check, are what answers).
CHECKPOINT_VALUES: tuple[Any, ...] = (0, -1, 10**9, 10**12, 1e300, "x", None, [1], {"a": 1})


def _shipped_checkpoint() -> tuple[dict[str, Any], dict[str, Any]]:
    import json

    import numpy as np

    from optsched.harmony.agent import default_model_path

    with np.load(default_model_path(), allow_pickle=False) as z:
        params = {k.removeprefix("param/"): z[k] for k in z.files if k.startswith("param/")}
        meta = json.loads(bytes(z["meta"]).decode("utf-8"))
    return params, meta


def _setting_paths(meta: dict[str, Any]) -> list[tuple[str, ...]]:
    """Every scalar setting of a checkpoint's configuration (records and digests left out)."""
    skip = {"curve", "record", "digest", "record_digest", "signature", "format"}
    out: list[tuple[str, ...]] = []

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if not path and k in skip:
                    continue
                walk(v, (*path, k))
        elif not isinstance(node, list):
            out.append(path)

    walk(meta, ())
    return out


def checkpoint_cases() -> list[str]:
    """The names of the hostile checkpoints :func:`write_hostile_checkpoint` builds."""
    _, meta = _shipped_checkpoint()
    names = [
        f"setting:{'.'.join(p)}={i}"
        for p in _setting_paths(meta)
        for i in range(len(CHECKPOINT_VALUES))
    ]
    names += [
        "weights:3e38",
        "weights:nan",
        "weights:inf",
        "weights:shape",
        "archive:bomb",
        "archive:extra-member",
        "archive:duplicate-member",
        "archive:missing-member",
        "archive:pickled-meta",
        "archive:truncated",
        "archive:not-a-zip",
    ]
    return names


def write_hostile_checkpoint(name: str, path: Path) -> str:
    """Write the hostile checkpoint ``name`` to ``path``; return what it holds."""
    import copy
    import io
    import zipfile

    import numpy as np

    from optsched.harmony.checkpoint import save_checkpoint

    params, meta = _shipped_checkpoint()
    kind, _, what = name.partition(":")
    if kind == "setting":
        dotted, _, index = what.rpartition("=")
        keys = dotted.split(".")
        value = CHECKPOINT_VALUES[int(index)]
        meta = copy.deepcopy(meta)
        node = meta
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
        save_checkpoint(path, params, meta)
        return f"{dotted} = {value!r} (valid digest)"
    if kind == "weights":
        first = sorted(params)[0]
        changed = dict(params)
        if what == "shape":
            changed[first] = np.zeros((3, 5), dtype=np.float32)
        else:
            value = {"3e38": 3e38, "nan": np.nan, "inf": np.inf}[what]
            changed[first] = np.full_like(params[first], value)
        save_checkpoint(path, changed, meta)
        return f"param/{first}: {what} (valid digest)"
    save_checkpoint(path, params, meta)
    raw = path.read_bytes()
    if what == "bomb":
        # 1 GiB of zeros in a few MB on disk: refused from the directory, never inflated
        buf = io.BytesIO(raw)
        with zipfile.ZipFile(buf, "a", compression=zipfile.ZIP_DEFLATED) as z:
            with z.open("junk.npy", "w", force_zip64=True) as fh:
                block = b"\0" * (1 << 20)
                for _ in range(1024):
                    fh.write(block)
        path.write_bytes(buf.getvalue())
    elif what in ("extra-member", "duplicate-member"):
        import warnings

        buf = io.BytesIO(raw)
        with warnings.catch_warnings(), zipfile.ZipFile(buf, "a") as z:
            warnings.simplefilter("ignore")  # zipfile warns of the duplicate it is asked for
            member = "extra.npy" if what == "extra-member" else "meta.npy"
            with z.open(member, "w") as fh:
                np.save(fh, np.zeros(4, dtype=np.float32))
        path.write_bytes(buf.getvalue())
    elif what == "missing-member":
        buf = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(buf, "w") as dst:
            for info in src.infolist()[1:]:
                dst.writestr(info, src.read(info))
        path.write_bytes(buf.getvalue())
    elif what == "pickled-meta":
        buf = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(buf, "w") as dst:
            for info in src.infolist():
                if info.filename == "meta.npy":
                    with dst.open("meta.npy", "w") as fh:
                        np.save(fh, np.array([{"a": 1}], dtype=object), allow_pickle=True)
                else:
                    dst.writestr(info, src.read(info))
        path.write_bytes(buf.getvalue())
    elif what == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif what == "not-a-zip":
        path.write_bytes(b"not a checkpoint\n" * 10)
    return what
