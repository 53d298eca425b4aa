"""The command line's top-level contract (DESIGN §2.2).

Exit codes: 0 ok, 2 invalid input naming the field or flag, 3 the solver stopped short, 1 anything
else (an internal error included), 130 SIGINT. Under ``--json`` exactly one JSON object is printed
on stdout, also for every error; error text is never hard-wrapped.

The first part drives :func:`optsched.cli.main` in-process with probe commands that raise each
kind of error, and the shared option decorators (``solver_options``, ``output_option``); the
second part runs the real ``optsched`` command in a subprocess, as a user does.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from optsched.cli import cli, main
from optsched.cli.common import (
    SolverOptions,
    json_option,
    output_option,
    print_json,
    solver_options,
)
from optsched.errors import InvalidInstanceError, NotOptimalError
from optsched.results import ExactResult
from optsched.solvers.result import SolutionStatus, SolveResult, TerminationCondition

OPTSCHED = [str(Path(sys.executable).with_name("optsched"))]
if not Path(OPTSCHED[0]).exists():  # pragma: no cover - an install without the script
    OPTSCHED = [sys.executable, "-c", "from optsched.cli import main; main()"]


def _stopped() -> ExactResult[Any]:
    solve = SolveResult(
        termination=TerminationCondition.TIME_LIMIT,
        solution_status=SolutionStatus.FEASIBLE,
        objective=12.0,
        bound=10.0,
        gap=0.2,
        build_seconds=0.1,
        solve_seconds=1.0,
        solver="highs",
        solver_version="1",
    )
    return ExactResult.from_solve(solve, {"assignment": [1, 2]}, sense="min")


_RAISES: dict[str, Any] = {
    "internal": lambda: 1 / 0,
    "recursion": lambda: (_ for _ in ()).throw(RecursionError("maximum recursion depth")),
    "memory": lambda: (_ for _ in ()).throw(MemoryError()),
    "oserror": lambda: open("/nonexistent-dir/x"),
    "invalid": lambda: (_ for _ in ()).throw(
        InvalidInstanceError("jobs[2].epochs", "must be >= 1, got 0", file="inst.json")
    ),
    "flag": lambda: (_ for _ in ()).throw(InvalidInstanceError("time_limit", "must be > 0")),
    "stopped": lambda: (_ for _ in ()).throw(NotOptimalError(_stopped())),
    "interrupt": lambda: (_ for _ in ()).throw(KeyboardInterrupt()),
}


@pytest.fixture
def probe() -> Iterator[click.Group]:
    """A ``probe`` group on the real root command, removed afterwards."""
    group = click.Group("probe")
    for name, raise_ in _RAISES.items():

        def body(as_json: bool, raise_: Any = raise_) -> None:
            raise_()

        group.add_command(json_option(click.command(name)(body)))

    @group.command("solve")
    @json_option
    @solver_options()
    def solve(solver_opts: SolverOptions, as_json: bool) -> None:
        print_json({"opts": solver_opts.kwargs()})

    @group.command("write")
    @output_option((".json", ".toml"))
    @json_option
    def write(output: Path | None, as_json: bool) -> None:
        print_json({"output": str(output)})

    cli.add_command(group)
    try:
        yield group
    finally:
        cli.commands.pop("probe", None)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _one_object(out: str) -> dict[str, Any]:
    value, end = json.JSONDecoder().raw_decode(out.strip())
    assert not out.strip()[end:].strip(), f"more than one JSON document: {out!r}"
    assert isinstance(value, dict)
    return value


# ------------------------------------------------------------------------------------------
# In-process: every error class maps onto its exit code and one JSON object
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["internal", "recursion", "memory"])
def test_internal_error_exits_1_with_one_json_object(
    probe: click.Group, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    code, out, err = _run(capsys, "probe", name, "--json")
    assert code == 1
    payload = _one_object(out)
    assert payload["error"] == "InternalError"
    assert payload["type"] in {"ZeroDivisionError", "RecursionError", "MemoryError"}
    assert "report" in payload["hint"]
    assert "Traceback" not in err and "internal error" in err


def test_internal_error_without_json_prints_nothing_on_stdout(
    probe: click.Group, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _run(capsys, "probe", "internal")
    assert (code, out) == (1, "")
    assert "ZeroDivisionError" in err and "OPTSCHED_DEBUG" in err and "Traceback" not in err
    monkeypatch.setenv("OPTSCHED_DEBUG", "1")
    code, out, err = _run(capsys, "probe", "internal")
    assert code == 1 and "Traceback" in err


def test_os_error_exits_1(probe: click.Group, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "probe", "oserror", "--json")
    assert code == 1
    assert _one_object(out)["error"] == "FileNotFoundError"


def test_invalid_input_exits_2_naming_field_and_file(
    probe: click.Group, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "probe", "invalid", "--json")
    assert code == 2
    payload = _one_object(out)
    assert payload["field"] == "jobs[2].epochs" and payload["file"] == "inst.json"
    assert "jobs[2].epochs: must be >= 1, got 0" in payload["message"]
    assert "jobs[2].epochs" in err


def test_library_argument_is_reported_as_its_flag(
    probe: click.Group, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "probe", "flag", "--json")
    assert code == 2
    payload = _one_object(out)
    assert payload["field"] == "--time-limit"
    assert payload["message"].startswith("--time-limit: must be > 0")
    assert "time_limit" not in err


def test_stopped_solver_exits_3_with_the_incumbent(
    probe: click.Group, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "probe", "stopped", "--json")
    assert code == 3
    payload = _one_object(out)
    assert payload["error"] == "NotOptimalError"
    assert payload["status"] == "feasible" and payload["objective"] == 12.0
    assert payload["solution"] == {"assignment": [1, 2]}
    assert "--accept-feasible" in payload["message"]


def test_keyboard_interrupt_exits_130_with_an_error_object(
    probe: click.Group, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "probe", "interrupt", "--json")
    assert code == 130
    assert _one_object(out)["error"] == "Interrupted"


def test_usage_error_exits_2_with_one_json_object(
    probe: click.Group, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "probe", "solve", "--json", "--no-such-flag")
    assert code == 2
    payload = _one_object(out)
    assert payload["error"] == "UsageError" and "--no-such-flag" in payload["message"]
    code, out, _ = _run(capsys, "no-such-command", "--json")
    assert code == 2 and _one_object(out)["error"] == "UsageError"


def test_help_and_version_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "--help")[0] == 0
    code, out, _ = _run(capsys, "--version")
    assert code == 0 and "optsched" in out


# ------------------------------------------------------------------------------------------
# In-process: the shared option decorators
# ------------------------------------------------------------------------------------------


def test_solver_options_collects_valid_values(
    probe: click.Group, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(
        capsys,
        "probe", "solve", "--json", "--solver", "HiGHS", "--time-limit", "2.5",
        "--mip-gap", "0", "--threads", "2", "--accept-feasible",
    )  # fmt: skip
    assert code == 0
    assert _one_object(out)["opts"] == {
        "solver": "highs",
        "time_limit": 2.5,
        "mip_gap": 0.0,
        "threads": 2,
        "accept_feasible": True,
    }
    code, out, _ = _run(capsys, "probe", "solve", "--json")
    assert _one_object(out)["opts"] == SolverOptions().kwargs()


def test_solver_options_keeps_the_options_declared_below_it() -> None:
    @click.command()
    @solver_options()
    @json_option
    @click.option("--seed", type=int, default=0)
    def command(solver_opts: SolverOptions, as_json: bool, seed: int) -> None:
        pass

    names = {p.name for p in command.params}
    assert {"solver", "time_limit", "as_json", "seed"} <= names


def test_unknown_solver_exits_2_naming_the_flag(
    probe: click.Group, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "probe", "solve", "--json", "--solver", "bogus")
    assert code == 2
    message = _one_object(out)["message"]
    assert "--solver" in message and "bogus" in message and "highs" in message


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--time-limit", "nan"),
        ("--time-limit", "-1"),
        ("--time-limit", "inf"),
        ("--time-limit", "-inf"),
        ("--time-limit", "0"),
        ("--time-limit", "abc"),
        ("--mip-gap", "nan"),
        ("--mip-gap", "inf"),
        ("--mip-gap", "-0.1"),
        ("--threads", "0"),
        ("--threads", "1.5"),
    ],
)
def test_bad_solver_option_exits_2_naming_it(
    probe: click.Group, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    code, out, err = _run(capsys, "probe", "solve", "--json", flag, value)
    assert code == 2
    assert flag in _one_object(out)["message"]
    assert flag in err


@pytest.mark.parametrize("name", ["x.csv", "x", "x.json.bak", "x.jsonl"])
def test_output_with_a_wrong_extension_exits_2(
    probe: click.Group, capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    code, out, _ = _run(capsys, "probe", "write", "--json", "-o", str(tmp_path / name))
    assert code == 2
    message = _one_object(out)["message"]
    assert "--output" in message and ".json" in message
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize(
    ("parent", "why"), [("/dev/null", "is not a directory"), ("missing", "does not exist")]
)
def test_output_in_no_folder_exits_2_before_the_run(
    probe: click.Group, capsys: pytest.CaptureFixture[str], tmp_path: Path, parent: str, why: str
) -> None:
    # The writers create no folders: such a path once failed with an OSError, exit 1, after
    # the whole run (``-o /dev/full/x.json``).
    target = Path(parent) / "x.json" if parent.startswith("/") else tmp_path / parent / "x.json"
    code, out, _ = _run(capsys, "probe", "write", "--json", "-o", str(target))
    assert code == 2
    message = _one_object(out)["message"]
    assert "--output" in message and why in message
    assert not target.parent.is_dir()


@pytest.mark.parametrize("name", ["x.json", "x.toml", "X.JSON"])
def test_output_with_a_right_extension_is_taken(
    probe: click.Group, capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    code, out, _ = _run(capsys, "probe", "write", "--json", "-o", str(tmp_path / name))
    assert code == 0 and _one_object(out)["output"] == str(tmp_path / name)


# ------------------------------------------------------------------------------------------
# Subprocess: the real command
# ------------------------------------------------------------------------------------------


def _optsched(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    # the timeout is a hang guard: a loaded machine starts Python slower, never this slowly
    return subprocess.run(
        [*OPTSCHED, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_error_text_is_not_hard_wrapped_on_a_pipe(tmp_path: Path) -> None:
    deep = tmp_path / ("a-rather-long-directory-name-" * 6) / ("and-another-one-" * 6)
    missing = deep / "the-instance-file-that-is-not-there.json"
    done = _optsched("validate", str(missing))
    assert done.returncode == 2
    assert any(str(missing) in line for line in done.stderr.splitlines()), done.stderr
    done = _optsched("validate", str(missing), "--json")
    assert done.returncode == 2
    assert str(missing) in _one_object(done.stdout)["message"]
    assert any(str(missing) in line for line in done.stderr.splitlines()), done.stderr


_SLOW_COMMAND = textwrap.dedent(
    """
    import sys
    import click
    from optsched.cli import cli, main
    from optsched.cli.common import json_option

    @cli.command("spin")
    @json_option
    def spin(as_json):
        print("spinning", file=sys.stderr, flush=True)
        while True:  # until interrupted (the test kills it if it fails first)
            sum(range(10000))

    main()
    """
)

#: The real ``optsched tensorlights simulate`` command line, with one hook: the pure-Python
#: simulation loop announces itself on stderr as it starts, so that the test interrupts the
#: command inside its work, once, whatever the machine's speed (not after so many seconds or CPU
#: seconds: at 3 CPU seconds the loop had built a gigabyte of results, whose teardown after the
#: signal outlasted a fixed 60 s wait on a loaded machine).
_ANNOUNCED_SIMULATION = textwrap.dedent(
    """
    import sys
    from optsched.cli import main
    from optsched.comm.tensorlights import simulator

    inner = simulator.simulate_reference

    def announced(*args, **kwargs):
        print("simulating", file=sys.stderr, flush=True)
        return inner(*args, **kwargs)

    simulator.simulate_reference = announced
    main()
    """
)

#: A guard against a wedged child only: every wait below ends on an event (a line read, the
#: process's exit), and on a healthy machine of any speed long before this.
_HANG_GUARD_S = 600.0


def _await_line(proc: subprocess.Popen[str], text: str) -> None:
    """Read the child's stderr up to the line containing ``text`` (or fail on its exit/hang)."""
    import selectors

    assert proc.stderr is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        while True:
            assert sel.select(_HANG_GUARD_S), f"no {text!r} line within {_HANG_GUARD_S} s"
            line = proc.stderr.readline()
            assert line, f"the command ended before printing {text!r}"
            if text in line:
                return


def _interrupt_on_line(argv: list[str], text: str) -> tuple[int, str, str]:
    """Start ``argv``, send SIGINT once it prints ``text`` on stderr; its (code, stdout, stderr).

    Never signals before the line: on a loaded machine the wait is longer, not the signal
    earlier; and the exit is awaited, not timed (the guard only catches a hang).
    """
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            _await_line(proc, text)
            assert proc.poll() is None, "the command ended before it could be interrupted"
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=_HANG_GUARD_S)
        finally:
            if proc.poll() is None:
                proc.kill()
    return proc.returncode, out, err


def test_sigint_exits_130_with_an_error_object() -> None:
    code, out, err = _interrupt_on_line(
        [sys.executable, "-c", _SLOW_COMMAND, "spin", "--json"], "spinning"
    )
    assert code == 130, err
    assert _one_object(out)["error"] == "Interrupted"
    assert "Traceback" not in err


def test_sigint_to_a_running_optsched_command_exits_130() -> None:
    # A long pure-Python simulation through the real command line, interrupted as its loop
    # starts (the line it prints then), so the signal lands inside the command.
    code, out, err = _interrupt_on_line(
        [
            sys.executable, "-c", _ANNOUNCED_SIMULATION, "tensorlights", "simulate",
            "--generate", "--jobs", "6", "--iterations", "1000000,1000000",
            "--engine", "python", "--json",
        ],
        "simulating",
    )  # fmt: skip
    assert code == 130, err
    assert _one_object(out)["error"] == "Interrupted"
    assert "Traceback" not in err


# The family commands must use the shared option decorators: the same refusals everywhere.

_SOLVER_COMMANDS = [
    ["oasis", "offline", "{inst}"],
    ["oasis", "check", "{inst}"],
    ["placement", "solve", "{pinst}"],
    ["placement", "compare", "{pinst}"],
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("contract")
    inst, pinst = d / "inst.json", d / "pinst.json"
    assert (
        _optsched("oasis", "generate", "--jobs", "3", "--horizon", "4", "-o", str(inst)).returncode
        == 0
    )
    done = _optsched("placement", "generate", "--jobs", "2", "--servers", "2", "-o", str(pinst))
    assert done.returncode == 0, done.stderr
    return {"{inst}": str(inst), "{pinst}": str(pinst), "{dir}": str(d)}


def _fill(words: list[str], inputs: dict[str, str]) -> list[str]:
    return [inputs.get(w, w) for w in words]


@pytest.mark.parametrize("command", _SOLVER_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_unknown_solver_exits_2_on_every_command(
    command: list[str], inputs: dict[str, str]
) -> None:
    done = _optsched(*_fill(command, inputs), "--solver", "bogus", "--json")
    assert done.returncode == 2, done.stderr
    assert "--solver" in _one_object(done.stdout)["message"]


@pytest.mark.parametrize("value", ["nan", "-1", "inf"])
@pytest.mark.parametrize("command", _SOLVER_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_bad_time_limit_exits_2_on_every_command(
    command: list[str], value: str, inputs: dict[str, str]
) -> None:
    done = _optsched(*_fill(command, inputs), "--time-limit", value, "--json")
    assert done.returncode == 2, done.stderr
    assert "--time-limit" in _one_object(done.stdout)["message"]


_OUTPUT_COMMANDS = [
    ["oasis", "generate", "--jobs", "2"],
    ["oasis", "offline", "{inst}"],
    ["oasis", "online", "{inst}"],
    ["placement", "generate", "--jobs", "2"],
    ["placement", "solve", "{pinst}"],
    ["placement", "heuristic", "{pinst}", "--name", "first-fit"],
    ["tensorlights", "generate", "--generate"],
]


@pytest.mark.parametrize("command", _OUTPUT_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_output_with_a_wrong_extension_exits_2_on_every_command(
    command: list[str], inputs: dict[str, str]
) -> None:
    target = Path(inputs["{dir}"]) / f"out-{'-'.join(command[:2])}.csv"
    done = _optsched(*_fill(command, inputs), "-o", str(target))
    assert done.returncode == 2, done.stderr
    assert "--output" in done.stderr or "-o" in done.stderr
    assert not target.exists()
