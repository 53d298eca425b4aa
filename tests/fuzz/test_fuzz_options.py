"""Hostile option values and paths: every command refuses them with exit 2 naming the option
(or runs and exits 0/3), never a traceback, hang or memory blow-up.

Hypothesis samples ``OPTSCHED_FUZZ_OPTION_EXAMPLES`` (default 16) of the cases of
``fuzz_engine.OPTION_CASES``; ``scripts/fuzz.py --options`` runs them all.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fuzz_engine import check_contract, fill, option_cases, run_optsched
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

CASES = option_cases()
EXAMPLES = int(os.environ.get("OPTSCHED_FUZZ_OPTION_EXAMPLES", "16"))


@settings(
    max_examples=EXAMPLES,
    phases=[Phase.explicit, Phase.generate],
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=st.sampled_from(CASES))
def test_hostile_option_keeps_the_contract(
    seeds: dict[str, Path], case: tuple[list[str], str]
) -> None:
    template, what = case
    with tempfile.TemporaryDirectory() as d:
        args = fill(template, seeds, None, Path(d))
        run = run_optsched(args, cwd=Path(d))
    outcome = check_contract(run)
    assert outcome.ok, (
        f"{what} broke the contract: {outcome}\n  replay: optsched {' '.join(args)}\n"
        f"  stderr tail: {run.stderr.strip()[-800:]}"
    )
    if outcome.payload is not None and run.returncode == 2:
        # The refusal names the option (or the file) the user gave.
        option = what.split()[0]
        text = str(outcome.payload)
        assert option == "argument" or option in text or option.lstrip("-") in text, text
