"""The one sweep driver (``optsched.runs.driver.run_sweep``).

Checked: records come back in task order whatever order the runs end in; a rerun computes only
the keys the store lacks and returns what an uninterrupted sweep returns; a run refusing its
input leaves the others stored and the error keeps its field, file and row across processes;
fresh records equal stored ones; the worker count never exceeds the runs left nor, unless
asked, the cores; an unknown backend or a bad worker count is refused naming the field.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from optsched.errors import InvalidInstanceError
from optsched.runs import driver
from optsched.runs.driver import BACKENDS, SweepTask, run_sweep, worker_count
from optsched.runs.store import RunStore, as_stored, run_key

cloudpickle = pytest.importorskip("cloudpickle")
# The process backends ship these functions by value: the workers cannot import this file.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

CALLS: list[int] = []


def square(k: int) -> dict:
    CALLS.append(k)
    if k < 0:
        raise InvalidInstanceError("k", f"must be >= 0, got {k}", file="grid.csv", row=-k)
    return {"k": k, "square": k * k, "ratio": float("inf") if k == 0 else 1 / k, "pid": 0}


def square_in_a_process(k: int) -> dict:
    out = square(k)
    out["pid"] = os.getpid()
    return out


def tasks(ks: list[int]) -> list[SweepTask]:
    return [SweepTask(key=run_key(k=k), params=k) for k in ks]


def test_records_in_task_order_and_in_the_stored_form() -> None:
    CALLS.clear()
    out = run_sweep(tasks([3, 0, 2, 3]), square)
    assert [r["k"] for r in out.records] == [3, 0, 2, 3]
    assert out.computed == 3 and sorted(CALLS) == [0, 2, 3]  # a repeated key is run once
    assert out.records[1] == as_stored(square(0)) and out.records[1]["ratio"] == "inf"


def test_a_rerun_computes_only_what_the_store_lacks(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    with RunStore(tmp_path, kind="t", config={}) as store:
        first = run_sweep(tasks([1, 2]), square, store=store)
    CALLS.clear()
    with RunStore(tmp_path, kind="t", config={}) as store:
        again = run_sweep(
            tasks([1, 2, 4, 5]), square, store=store, progress=lambda d, t: seen.append((d, t))
        )
        assert len(store) == 4
    assert sorted(CALLS) == [4, 5] and again.computed == 2
    assert again.records[:2] == first.records
    assert again.records == run_sweep(tasks([1, 2, 4, 5]), square).records
    assert seen == [(2, 4), (3, 4), (4, 4)]


def test_a_refused_run_leaves_the_others_stored(tmp_path: Path) -> None:
    with RunStore(tmp_path, kind="t", config={}) as store:
        with pytest.raises(InvalidInstanceError) as err:
            run_sweep(tasks([1, -7, 2]), square, store=store)
        assert (err.value.field, err.value.file, err.value.row) == ("k", "grid.csv", 7)
        assert store.keys() == {run_key(k=1), run_key(k=2)}


def test_a_corrupt_stored_record_stops_the_sweep_before_any_run(tmp_path: Path) -> None:
    import sqlite3

    with RunStore(tmp_path, kind="t", config={}) as store:
        run_sweep(tasks([1]), square, store=store)
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        db.execute("UPDATE runs SET record = replace(record, '1', '9')")
    db.close()
    CALLS.clear()
    with RunStore(tmp_path, kind="t", config={}) as store, pytest.raises(InvalidInstanceError):
        run_sweep(tasks([1, 2]), square, store=store)
    assert CALLS == []


def test_loky_collects_the_same_records_and_carries_errors_across(tmp_path: Path) -> None:
    ks = [5, 1, 4, 2, 3]
    with RunStore(tmp_path, kind="t", config={}) as store:
        out = run_sweep(tasks(ks), square_in_a_process, store=store, backend="loky", n_jobs=2)
    assert [r["k"] for r in out.records] == ks
    assert all(r["pid"] != os.getpid() for r in out.records)  # they ran in worker processes
    plain = run_sweep(tasks(ks), square)
    assert [{**r, "pid": 0} for r in out.records] == plain.records
    with pytest.raises(InvalidInstanceError) as err:
        run_sweep(tasks([1, -3]), square_in_a_process, backend="joblib", n_jobs=2)
    assert (err.value.field, err.value.row) == ("k", 3)


def test_one_worker_runs_in_this_process() -> None:
    out = run_sweep(tasks([1, 2]), square_in_a_process, backend="loky", n_jobs=1)
    assert {r["pid"] for r in out.records} == {os.getpid()}


def test_worker_count_never_exceeds_the_runs_nor_unasked_the_cores(monkeypatch) -> None:
    monkeypatch.setattr(driver, "_cores", lambda: 4)
    assert worker_count(None, 100) == 4 and worker_count(-1, 100) == 4
    assert worker_count(-2, 100) == 3 and worker_count(-9, 100) == 1
    assert worker_count(None, 2) == 2 and worker_count(16, 3) == 3
    assert worker_count(16, 100) == 16  # asked for: more than the cores
    assert worker_count(None, 0) == 1
    for bad in (0, 1.5, True):
        with pytest.raises(InvalidInstanceError) as err:
            worker_count(bad, 5)  # type: ignore[arg-type]
        assert err.value.field == "n_jobs"


def test_an_unknown_backend_is_refused() -> None:
    assert set(BACKENDS) == {"serial", "loky", "dask", "ray"}
    with pytest.raises(InvalidInstanceError) as err:
        run_sweep(tasks([1]), square, backend="spark")
    assert err.value.field == "backend"
    with pytest.raises(InvalidInstanceError) as err:
        run_sweep(tasks([1]), square, backend="loky", n_jobs=0)
    assert err.value.field == "n_jobs"
