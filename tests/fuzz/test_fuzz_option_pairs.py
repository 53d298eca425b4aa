"""Option pairs of ``sim run`` and ``sim compare``: every combination exits 0, 2 or 3, never 1.

A refused combination (Gavel's mechanism with a policy it cannot run, an elastic factor with a
colocation policy, ...) is invalid input: exit 2 naming an option, before any run. Each pair of
the non-default settings below is tried with each policy, in-process (``optsched.cli.main``),
on a small trace; an exit 1 (an internal or unnamed error) or a traceback breaks the contract.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from optsched.cli import main

#: Non-default settings of the options ``sim run`` and ``sim compare`` share, one or two words.
SETTINGS: tuple[tuple[str, ...], ...] = (
    ("--mechanism", "gavel"),
    ("--elastic", "2"),
    ("--round-seconds", "60"),
    ("--restore-seconds", "10"),
    ("--load", "2"),
    ("--offered-load", "0.8"),
    ("--window", "1:3"),
)

#: Settings of ``sim run`` alone.
RUN_ONLY: tuple[tuple[str, ...], ...] = (
    ("--restore-on-first-start",),
    ("--max-time", "100"),
    ("--static-batches",),
)

#: Policies of different kinds: order, allocation, elastic, placement-free, fairness.
POLICIES = ("fifo", "optimus", "max-min", "gandiva", "themis")

TRACE = (
    "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
    + "".join(f"j{i},{30 * i},{1 + i % 2},ResNet-18,,{100 + 20 * i},32,1,,u\n" for i in range(5))
)

PAIRS = [
    (command, pair)
    for command, settings in (("run", SETTINGS + RUN_ONLY), ("compare", SETTINGS))
    for pair in itertools.combinations(settings, 2)
]


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pairs") / "t.csv"
    path.write_text(TRACE)
    return path


@pytest.mark.parametrize(
    ("command", "pair"), PAIRS, ids=[f"{c}{a[0]}+{b[0]}" for c, (a, b) in PAIRS]
)
def test_every_option_pair_exits_0_2_or_3_naming_the_option(
    trace: Path, capsys: pytest.CaptureFixture[str], command: str, pair: tuple[tuple[str, ...], ...]
) -> None:
    flag = "--policy" if command == "run" else "--policies"
    broken = []
    for policy in POLICIES:
        args = ["sim", command, str(trace), "--cluster", "v100=4", flag, policy]
        args += [word for setting in pair for word in setting] + ["--json"]
        code = main(args)
        out = capsys.readouterr().out
        if code not in (0, 2, 3):
            broken.append(f"exit {code}: optsched {' '.join(args)}\n  {out.strip()[-300:]}")
        elif code == 2 and not json.loads(out).get("field"):
            broken.append(f"exit 2 naming no option: optsched {' '.join(args)}")
    assert not broken, "\n".join(broken)
