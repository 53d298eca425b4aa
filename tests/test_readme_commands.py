"""Every command in README.md runs as written.

Each fenced ``sh`` block of the README is run in order in a scratch directory laid out like the
repository's root (its top-level entries linked in, ``../shared`` beside it when the public data
is there), so files written by one command are read by the next one of the same block. Each
``optsched ...`` line must exit 0, or the code its trailing comment documents ("exits 3"), and a
``--json`` command must print exactly one JSON object on stdout. ``make`` lines must name a target
of the Makefile (running them would rebuild the environment; ``test_demo`` covers the demo).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The public traces the README reads, beside the repository as in a fresh checkout.
SHARED = ROOT.parent / "shared"
#: Runs the command line of the checked-out optsched, whatever is installed.
CLI = [sys.executable, "-c", "from optsched.cli import main; main()"]

_FENCE = re.compile(r"^```(\w*)\s*$")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S*)$")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_EXITS = re.compile(r"\bexits (\d+)\b")


@dataclass
class Command:
    """One runnable README line: its words after ``$VAR`` expansion and the expected exit code."""

    line: str
    argv: list[str]
    exit_code: int = 0
    comment: str = ""


@dataclass
class Block:
    """One fenced ``sh`` block: where it starts, its commands and its ``make`` targets."""

    start: int
    commands: list[Command] = field(default_factory=list)
    make_targets: list[str] = field(default_factory=list)

    @property
    def needs_shared(self) -> bool:
        return any("../shared" in word for c in self.commands for word in c.argv)


def _split(line: str) -> tuple[list[str], str]:
    """Words of a shell line and its trailing comment (shell quoting respected)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = ""  # comments are cut below, so their text can be read
    words: list[str] = []
    for word in lexer:
        if word.startswith("#"):
            return words, line[line.index(word) :]
        words.append(word)
    return words, ""


def _expand(word: str, env: dict[str, str], where: str) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name not in env:
            raise AssertionError(f"{where}: ${name} is not assigned earlier in its block")
        return env[name]

    return _VAR.sub(sub, word)


def parse_blocks(text: str) -> list[Block]:
    """The ``sh`` blocks of a Markdown text, each line classified or rejected.

    A line is blank, a comment, a variable assignment ``NAME=value`` (expanded in later lines of
    the block), a ``make TARGET`` line or an ``optsched ...`` command; anything else fails, so
    the README cannot grow a command this test does not run.
    """
    blocks: list[Block] = []
    current: Block | None = None
    in_fence = False
    env: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        fence = _FENCE.match(raw.strip())
        if fence:
            if not in_fence and fence.group(1) == "sh":
                current, env = Block(number), {}
            elif in_fence and current is not None:
                blocks.append(current)
                current = None
            in_fence = not in_fence
            continue
        if current is None:
            continue
        where = f"README.md:{number}"
        words, comment = _split(raw)
        if not words:
            continue
        assign = _ASSIGN.match(words[0]) if len(words) == 1 else None
        if assign:
            env[assign.group(1)] = _expand(assign.group(2), env, where)
            continue
        argv = [_expand(w, env, where) for w in words]
        if argv[0] == "make":
            assert len(argv) == 2, f"{where}: one make target per line: {raw!r}"
            current.make_targets.append(argv[1])
        elif argv[0] == "optsched":
            exits = _EXITS.search(comment)
            code = int(exits.group(1)) if exits else 0
            current.commands.append(Command(raw.strip(), argv[1:], code, comment))
        else:
            raise AssertionError(f"{where}: not a command this test knows how to run: {raw!r}")
    assert not in_fence, "README.md ends inside a fenced block"
    return blocks


BLOCKS = parse_blocks(README.read_text(encoding="utf-8"))


def _workdir(tmp_path: Path, block: Block) -> Path:
    """A directory where relative paths resolve as from the repository's root.

    An entry of the root that a command of the block names as a whole (``inst.json``, ``sweep/``,
    left over from running the tour by hand) is not linked, so the command writes its own copy
    here and never through a link into the checkout.
    """
    named = {word.rstrip("/") for c in block.commands for word in c.argv}
    work = tmp_path / "repo"
    work.mkdir()
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name not in named:
            (work / entry.name).symlink_to(entry)
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    return work


def _run(command: Command, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("COLUMNS", "160")
    return subprocess.run(
        [*CLI, *command.argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard only: no assertion depends on how fast the machine is
        check=False,
    )


def _one_object(stdout: str, line: str) -> dict[str, Any]:
    try:
        obj = json.loads(stdout)  # json.loads rejects anything after the first value
    except json.JSONDecodeError as exc:
        raise AssertionError(f"{line}: stdout is not exactly one JSON value ({exc})") from exc
    assert isinstance(obj, dict), f"{line}: stdout is JSON but not an object"
    return obj


def test_readme_has_the_tour() -> None:
    """The parser sees the blocks: a README edit cannot silently drop every command."""
    commands = [c for b in BLOCKS for c in b.commands]
    assert len(BLOCKS) >= 2
    assert BLOCKS[0].make_targets == ["demo", "test"], "the README opens with make demo / test"
    assert len(commands) >= 20
    for c in commands:
        assert not re.search(r"\b(FILE|TRACE)\b", c.line), f"placeholder left in {c.line!r}"


def test_parser_reads_assignments_comments_and_exit_codes() -> None:
    text = "\n".join(
        [
            "```python",
            "optsched not-shell",
            "```",
            "```sh",
            "# a comment line",
            "A=../shared/x  # where the data is",
            "B=${A}/y",
            'optsched run $B "two words" --json   # exits 3 when unproven',
            "make demo",
            "```",
        ]
    )
    (block,) = parse_blocks(text)
    assert block.start == 4 and block.make_targets == ["demo"] and block.needs_shared
    (command,) = block.commands
    assert command.argv == ["run", "../shared/x/y", "two words", "--json"]
    assert command.exit_code == 3 and command.comment.startswith("# exits 3")
    with pytest.raises(AssertionError, match="not a command"):
        parse_blocks("```sh\nrm -rf build\n```")
    with pytest.raises(AssertionError, match=r"\$C is not assigned"):
        parse_blocks("```sh\noptsched x $C\n```")
    with pytest.raises(AssertionError, match="inside a fenced block"):
        parse_blocks("```sh\noptsched x\n")


def test_make_targets_exist() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    defined = set(re.findall(r"^([A-Za-z][\w-]*)\s*:", makefile, flags=re.MULTILINE))
    for block in BLOCKS:
        for target in block.make_targets:
            assert target in defined, f"README names `make {target}`, not in the Makefile"


@pytest.mark.solver("highs")  # the README's exact solves use the default solver
@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.commands], ids=lambda b: f"README.md:{b.start}"
)
def test_readme_block_runs(block: Block, tmp_path: Path) -> None:
    if block.needs_shared and not SHARED.is_dir():
        pytest.skip(f"the public traces are not at {SHARED} (../shared beside the repository)")
    work = _workdir(tmp_path, block)
    for command in block.commands:
        done = _run(command, work)
        assert done.returncode == command.exit_code, (
            f"{command.line}\nexit {done.returncode}, expected {command.exit_code}\n"
            f"stderr:\n{done.stderr[-3000:]}"
        )
        if "--json" in command.argv:
            obj = _one_object(done.stdout, command.line)
            _check_result(command, obj)
        quoted = re.search(r"(\d+) jobs", command.comment)
        if command.argv[:2] == ["trace", "convert"] and quoted:
            table = (work / command.argv[3]).read_text(encoding="utf-8").splitlines()
            assert len(table) - 1 == int(quoted.group(1)), f"{command.line}: {len(table) - 1} jobs"


def _check_result(command: Command, obj: dict[str, Any]) -> None:
    """What the README's comments promise about a command's result."""
    if command.argv[:2] == ["sim", "compare"]:
        rows = {row["policy"]: row for row in obj["policies"]}
        if {"max-min", "max-min-perf"} <= rows.keys():
            # Side by side, the heterogeneity-aware LP must schedule differently from the
            # agnostic one; identical rows mean every GPU type ran equally fast (uniform
            # throughputs), which makes the comparison say nothing.
            keys = ("jct_mean", "makespan", "rho_max")
            assert [rows["max-min"][k] for k in keys] != [rows["max-min-perf"][k] for k in keys]
    # The throughput table a comment names is the one the run states it used.
    quoted = re.search(r"throughputs: (\w+)", command.comment)
    if command.argv[:1] == ["sim"] and quoted:
        assert obj["throughputs"] == quoted.group(1), command.line
    # Counts the README's comments quote are the ones the command reports.
    quoted = re.search(r"([\d,]+) parameters", command.comment)
    if command.argv[:1] == ["profile"] and quoted:
        assert obj["total_params"] == int(quoted.group(1).replace(",", ""))
    quoted = re.search(r"(\d+) jobs", command.comment)
    if command.argv[:2] == ["trace", "info"] and quoted:
        assert obj["jobs"] == int(quoted.group(1))


@pytest.mark.solver("highs")
def test_oasis_ratio_summary_goes_to_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``oasis ratio`` prints its summary on stdout; stderr keeps progress and the file note."""
    from optsched.cli import main

    argv = ["oasis", "ratio", "--instances", "2", "--jobs", "3", "--horizon", "4"]
    argv += ["--worker-servers", "2", "--ps-servers", "2", "-o", str(tmp_path / "sweep")]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    rows = dict(line.split(None, 1) for line in out.splitlines() if line.strip())
    assert rows["instances"] == "2"
    assert {"opt_proven", "within_proven_bound", "all_valid"} <= rows.keys()
    assert "instances" not in err and "opt_proven" not in err
    assert "table.md" in err and "table.md" not in out
    # With --json the same summary is inside the one object on stdout (the rerun resumes).
    assert main([*argv, "--json"]) == 0
    out, _ = capsys.readouterr()
    obj = _one_object(out, "oasis ratio --json")
    assert obj["summary"]["instances"] == 2
    assert obj["summary"]["opt_proven"] == int(rows["opt_proven"])
