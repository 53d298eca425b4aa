"""The local sweep pool: never more workers than runs, and an absurd ``-j`` refused up front.

* an explicit ``n_jobs`` larger than the runs left starts one worker a run;
* an explicit ``n_jobs`` above ``MAX_WORKERS_PER_CORE`` x the cores is refused before the store
  is opened or read, naming ``n_jobs`` (``--n-jobs`` on the command line, exit 2);
* the remote backends size their own pools and are not bounded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.limits import MAX_WORKERS_PER_CORE
from optsched.runs import driver
from optsched.runs.driver import SweepTask, check_n_jobs, run_sweep, worker_count
from optsched.runs.store import RunStore

CALLED: list[int] = []


def _square(k: int) -> dict[str, int]:
    CALLED.append(k)
    return {"k": k, "square": k * k}


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "_cores", lambda: 2)


@pytest.mark.usefixtures("two_cores")
def test_the_pool_is_capped_at_the_runs_and_refused_above_the_core_multiple() -> None:
    most = MAX_WORKERS_PER_CORE * 2
    assert worker_count(most, 30) == most  # asked for: more than the cores, within the multiple
    assert worker_count(most, 3) == 3  # never more than the runs
    assert worker_count(None, 30) == 2 and worker_count(-1, 1) == 1
    for absurd in (most + 1, 1000):
        with pytest.raises(InvalidInstanceError) as err:
            worker_count(absurd, 30)
        assert err.value.field == "n_jobs"
        assert "absurd" in err.value.message and f"at most {most}" in err.value.message
    check_n_jobs(-1000)  # joblib's "all but k" never exceeds the cores: accepted


@pytest.mark.usefixtures("two_cores")
def test_the_pool_started_has_one_worker_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []

    def pool(fn: Any, todo: Any, n_jobs: int, local: bool = False) -> Any:
        sizes.append(n_jobs)
        return driver._serial(fn, todo)

    monkeypatch.setattr(driver, "_joblib", pool)
    tasks = [SweepTask(key=str(k), params=k) for k in range(3)]
    out = run_sweep(tasks, _square, backend="loky", n_jobs=MAX_WORKERS_PER_CORE * 2)
    assert sizes == [3] and [r["square"] for r in out.records] == [0, 1, 4]


@pytest.mark.usefixtures("two_cores")
def test_an_absurd_pool_is_refused_before_the_store_is_read(tmp_path: Path) -> None:
    CALLED.clear()
    tasks = [SweepTask(key=str(k), params=k) for k in range(3)]
    with RunStore(tmp_path / "runs.sqlite", kind="t", config={}) as store:
        read: list[int] = []
        original = store.items

        def items() -> Any:
            read.append(1)
            return original()

        store.items = items  # type: ignore[method-assign]
        with pytest.raises(InvalidInstanceError) as err:
            run_sweep(tasks, _square, store=store, backend="loky", n_jobs=1000)
    assert err.value.field == "n_jobs" and read == [] and CALLED == []
    # the serial backend takes no pool: n_jobs is not its business
    assert run_sweep(tasks, _square, backend="serial", n_jobs=1000).computed == 3


@pytest.mark.usefixtures("two_cores")
def test_sim_sweep_refuses_an_absurd_j_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.sqlite"
    args = ["sim", "sweep", "synthetic:3", "--cluster", "v100=2", "--policies", "fifo,srtf"]
    args += ["--seeds", "1,2", "--store", str(store), "--json"]
    assert main([*args, "-j", "1000"]) == 2
    payload = json.loads(capsys.readouterr().out)
    assert payload["field"] == "--n-jobs" and "absurd" in payload["message"]
    assert not store.exists()  # refused before the store was created
