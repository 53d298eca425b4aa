"""Size budgets (``optsched.limits``): defaults, scoping, the environment, and refusals."""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import limits
from optsched.errors import InvalidInstanceError

DEFAULTS = {
    "max_file_bytes": 64 * 2**20,
    "max_trace_bytes": 4 * 2**30,
    "max_trace_rows": 20_000_000,
    "max_convert_rows": 1_000_000,
    "max_json_depth": 64,
    "max_int_digits": 40,
    "max_model_variables": 1_000_000,
    "max_array_cells": 100_000_000,
    "max_events": 200_000_000,
    "max_exact_job_rounds": 2_500,
    "max_schedule_epochs": 100_000,
    "max_checkpoint_weights": 2**24,
    "max_harmony_servers": 4_096,
    "max_harmony_types": 256,
    "max_harmony_job_tasks": 256,
}


@pytest.fixture(autouse=True)
def _fresh_process_budget(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts from an unread environment and leaves the process budget as it was."""
    for name in DEFAULTS:
        monkeypatch.delenv(f"OPTSCHED_{name.upper()}", raising=False)
    monkeypatch.setattr(limits, "_process_budget", None)
    yield


def test_defaults_are_the_documented_ones() -> None:
    assert limits.current().describe() == DEFAULTS
    assert limits.Budget().describe() == DEFAULTS
    # Every budget is documented in the class docstring.
    for name in DEFAULTS:
        assert f"{name} : int" in (limits.Budget.__doc__ or "")


def test_budget_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.current().max_events = 1  # type: ignore[misc]


def test_override_nests_and_restores() -> None:
    base = limits.current()
    with limits.override(max_events=10) as outer:
        assert outer.max_events == 10 and limits.current() is outer
        with limits.override(max_array_cells=20) as inner:
            assert (inner.max_events, inner.max_array_cells) == (10, 20)
            with limits.override(max_events=30):
                assert limits.current().max_events == 30
                assert limits.current().max_array_cells == 20
            assert limits.current() is inner
        assert limits.current() is outer
    assert limits.current() == base


def test_override_restores_after_an_exception() -> None:
    base = limits.current()
    with pytest.raises(RuntimeError), limits.override(max_file_bytes=1):
        raise RuntimeError("boom")
    assert limits.current() == base


def test_override_is_local_to_its_thread() -> None:
    seen: list[int] = []
    with limits.override(max_events=7):
        worker = threading.Thread(target=lambda: seen.append(limits.current().max_events))
        worker.start()
        worker.join()
        assert limits.current().max_events == 7
    assert seen == [DEFAULTS["max_events"]]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"max_bananas": 3}, "max_bananas"),
        ({"max_events": 0}, "max_events"),
        ({"max_events": -1}, "max_events"),
        ({"max_events": 1.5}, "max_events"),
        ({"max_events": float("inf")}, "max_events"),
        ({"max_events": True}, "max_events"),
        ({"max_events": "10"}, "max_events"),
    ],
)
def test_bad_budget_changes_are_refused_naming_them(changes: dict, field: str) -> None:
    base = limits.current()
    with pytest.raises(InvalidInstanceError) as info, limits.override(**changes):
        pass
    assert info.value.field == field
    with pytest.raises(InvalidInstanceError) as info:
        limits.set_budget(**changes)
    assert info.value.field == field
    assert limits.current() == base


def test_unknown_budget_lists_the_known_ones() -> None:
    with pytest.raises(InvalidInstanceError) as info:
        limits.set_budget(max_gpus=3)
    for name in DEFAULTS:
        assert name in str(info.value)


def test_set_budget_lasts_for_the_process_and_overrides_scope_above_it() -> None:
    out = limits.set_budget(max_events=11, max_file_bytes=12)
    assert out == limits.current()
    assert (limits.current().max_events, limits.current().max_file_bytes) == (11, 12)
    with limits.override(max_events=13):
        assert limits.current().max_events == 13
        assert limits.current().max_file_bytes == 12
    assert limits.current().max_events == 11
    seen: list[int] = []
    worker = threading.Thread(target=lambda: seen.append(limits.current().max_events))
    worker.start()
    worker.join()
    assert seen == [11]


def test_set_budget_inside_an_override_keeps_only_its_own_change() -> None:
    with limits.override(max_file_bytes=10):
        limits.set_budget(max_events=5)
    assert limits.current().max_events == 5
    assert limits.current().max_file_bytes == DEFAULTS["max_file_bytes"]


# ------------------------------------------------------------------------------------------
# Environment
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"), [("1000", 1000), ("1e3", 1000), (" 64 ", 64), ("1", 1), ("2e9", 2 * 10**9)]
)
def test_environment_sets_the_budget(monkeypatch: pytest.MonkeyPatch, raw: str, value: int) -> None:
    monkeypatch.setenv("OPTSCHED_MAX_FILE_BYTES", raw)
    monkeypatch.setenv("OPTSCHED_MAX_EVENTS", "5")
    budget = limits.current()
    assert budget.max_file_bytes == value
    assert budget.max_events == 5
    assert budget.max_array_cells == DEFAULTS["max_array_cells"]


def test_environment_is_read_once_and_overrides_still_apply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPTSCHED_MAX_EVENTS", "5")
    assert limits.current().max_events == 5
    monkeypatch.setenv("OPTSCHED_MAX_EVENTS", "6")
    assert limits.current().max_events == 5
    with limits.override(max_events=9):
        assert limits.current().max_events == 9


@pytest.mark.parametrize(
    "raw", ["", "abc", "0x10", "nan", "inf", "-inf", "1e999", "0", "-5", "0.5"]
)
def test_bad_environment_values_are_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("OPTSCHED_MAX_ARRAY_CELLS", raw)
    with pytest.raises(InvalidInstanceError) as info:
        limits.current()
    assert info.value.field == "OPTSCHED_MAX_ARRAY_CELLS"
    assert repr(raw) in str(info.value)
    # The refusal is repeated (never a half-read budget), and a fixed value is then taken.
    with pytest.raises(InvalidInstanceError):
        limits.current()
    monkeypatch.setenv("OPTSCHED_MAX_ARRAY_CELLS", "77")
    assert limits.current().max_array_cells == 77


def test_unrelated_environment_variables_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTSCHED_MAX_BANANAS", "nonsense")
    monkeypatch.setenv("OPTSCHED_DEBUG", "1")
    assert limits.current().describe() == DEFAULTS


# ------------------------------------------------------------------------------------------
# check_size
# ------------------------------------------------------------------------------------------


def test_check_size_accepts_up_to_the_budget() -> None:
    limit = limits.current().max_array_cells
    limits.check_size("horizon", limit, "max_array_cells")
    limits.check_size("horizon", float(limit), "max_array_cells")
    limits.check_size("horizon", 0, "max_array_cells")


def test_check_size_message_names_field_size_budget_and_remedy() -> None:
    limit = limits.current().max_array_cells
    with pytest.raises(InvalidInstanceError) as info:
        limits.check_size("horizon", 10**9 * 24 * 3, "max_array_cells", what="slot-server cells")
    err = info.value
    assert err.field == "horizon"
    text = str(err)
    assert text.startswith("horizon: ")
    assert "72,000,000,000 slot-server cells" in text
    assert f"max_array_cells = {limit:,}" in text
    assert "optsched.limits.override(max_array_cells=...)" in text
    assert "OPTSCHED_MAX_ARRAY_CELLS" in text
    with pytest.raises(InvalidInstanceError):
        limits.check_size("horizon", limit + 1, "max_array_cells")


def test_check_size_follows_overrides() -> None:
    with limits.override(max_events=100):
        limits.check_size("period", 100, "max_events")
        with pytest.raises(InvalidInstanceError) as info:
            limits.check_size("period", 101, "max_events", what="periods")
    assert "max_events = 100" in str(info.value)
    limits.check_size("period", 101, "max_events")


@pytest.mark.parametrize("size", [math.nan, math.inf, -math.inf])
def test_check_size_refuses_non_finite_sizes(size: float) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        limits.check_size("chunks", size, "max_array_cells")
    assert info.value.field == "chunks"
    assert str(size) in str(info.value)


def test_check_size_refuses_an_integer_beyond_the_float_range() -> None:
    with pytest.raises(InvalidInstanceError) as info:
        limits.check_size("horizon", 10**400, "max_array_cells")
    assert info.value.field == "horizon"


@given(st.floats(min_value=0, max_value=1e300), st.integers(min_value=1, max_value=10**12))
def test_check_size_agrees_with_the_comparison(size: float, limit: int) -> None:
    with limits.override(max_events=limit):
        if size <= limit:
            limits.check_size("x", size, "max_events")
        else:
            with pytest.raises(InvalidInstanceError):
                limits.check_size("x", size, "max_events")
