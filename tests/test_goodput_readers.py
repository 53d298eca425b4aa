"""Readers and writers of Pollux's artifact data (optsched.goodput.workload, .traces)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from optsched.errors import InvalidInstanceError
from optsched.goodput.artifact import ENV_VAR, read_job_types, read_workload_of, simulator_dir
from optsched.goodput.traces import ARTIFACT_APPLICATIONS, ModelTraces, read_model_traces
from optsched.goodput.workload import PolluxJob, PolluxWorkload, read_workload

DATA = Path(__file__).parent / "data" / "pollux"


def artifact_dir() -> Path | None:
    """The artifact's ``simulator/`` folder, when a copy is at hand (see data/pollux/SOURCE.md)."""
    try:
        return simulator_dir()
    except InvalidInstanceError:
        return None


needs_artifact = pytest.mark.skipif(
    artifact_dir() is None,
    reason="Pollux's simulator folder is absent (set OPTSCHED_POLLUX_SIMULATOR; "
    "tests/data/pollux/SOURCE.md says how to make it)",
)


def test_workload_6() -> None:
    w = read_workload(DATA / "workload-6.csv")
    assert len(w) == 160
    assert w.jobs[0] == PolluxJob("cifar10-0", 53.0, "cifar10", 6, 2048)
    assert w.applications == sorted(ARTIFACT_APPLICATIONS)
    times = [j.time for j in w.jobs]
    assert times == sorted(times)
    assert len({j.name for j in w.jobs}) == 160


def test_workload_round_trip(tmp_path: Path) -> None:
    w = read_workload(DATA / "workload-6.csv")
    w.save(tmp_path / "w.csv")
    assert (tmp_path / "w.csv").read_text() == (DATA / "workload-6.csv").read_text()
    back = PolluxWorkload.load(tmp_path / "w.csv")
    assert back.jobs == w.jobs
    odd = PolluxWorkload((PolluxJob("a", 1.5, "ncf", 1, 256),))
    odd.save(tmp_path / "odd.csv")
    assert read_workload(tmp_path / "odd.csv").jobs == odd.jobs


@pytest.mark.parametrize(
    ("row", "column", "message"),
    [
        ("x,-1,ncf,1,256", "time", ">= 0"),
        ("x,1,ncf,0,256", "num_replicas", ">= 1"),
        ("x,1,ncf,1,25.5", "batch_size", "whole number"),
        ("x,1,,1,256", "application", "empty"),
        ("x,1,ncf,1", "batch_size", "missing"),
        ("cifar10-0,1,ncf,1,256", "name", "duplicate"),
    ],
)
def test_workload_errors_name_file_row_column(
    tmp_path: Path, row: str, column: str, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        f"name,time,application,num_replicas,batch_size\ncifar10-0,0,ncf,1,256\n{row}\n"
    )
    with pytest.raises(InvalidInstanceError) as err:
        read_workload(path)
    assert err.value.field == column
    assert err.value.row == 3
    assert err.value.file == str(path)
    assert message in str(err.value)


def test_workload_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("name,time,application,batch_size\na,0,ncf,256\n")
    with pytest.raises(InvalidInstanceError, match="num_replicas: missing from the header"):
        read_workload(path)
    with pytest.raises(InvalidInstanceError, match="cannot read"):
        read_workload(tmp_path / "absent.csv")


def test_model_traces_cifar10() -> None:
    t = read_model_traces(DATA / "traces" / "cifar10")
    assert t.name == "cifar10"
    assert len(t.placement) == 1183
    assert sorted(t.validation) == [128, 256, 512, 1024, 2048, 4096]
    assert all(len(run) == 100 for run in t.validation.values())
    assert t.max_epochs() == 100
    lim = t.limits()
    assert (lim.init_batch_size, lim.max_batch_size) == (128, 4096)
    assert (lim.min_local_bsz, lim.max_local_bsz) == (32, 1024)
    # placement "22": two nodes, four GPUs
    i = t.placement.index("22")
    assert (t.num_nodes[i], t.num_replicas[i]) == (2, 4)
    assert np.all(t.sync_time < t.step_time)


def _equal(a: ModelTraces, b: ModelTraces) -> bool:
    same = a.placement == b.placement and a.name == b.name
    for name in ("local_bsz", "step_time", "sync_time"):
        same &= np.array_equal(getattr(a, name), getattr(b, name))
    for name in a.scalability:
        same &= np.array_equal(a.scalability[name], b.scalability[name])
    same &= list(a.validation) == list(b.validation)
    for bsz, run in a.validation.items():
        for col in ("progress", "iteration", "metric", "grad_sqr", "grad_var"):
            same &= np.array_equal(
                getattr(run, col), getattr(b.validation[bsz], col), equal_nan=True
            )
    return bool(same)


@pytest.mark.parametrize("model", ["cifar10", "bert"])
def test_model_traces_round_trip(tmp_path: Path, model: str) -> None:
    t = ModelTraces.load(DATA / "traces" / model)
    t.save(tmp_path / model)
    assert _equal(read_model_traces(tmp_path / model), t)


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "bert"
    read_model_traces(DATA / "traces" / "bert").save(folder)
    return folder


@pytest.mark.parametrize(
    ("file", "line", "column", "message"),
    [
        ("placements.csv", "2x,4,1.0,0.5", "placement", "digits"),
        ("placements.csv", "2,4,1.0,1.5", "sync_time", "< step_time"),
        ("placements.csv", "2,-4,1.0,0.5", "local_bsz", "> 0"),
        ("scalability.csv", "4,2,8,1.0,0.5", "num_replicas", ">= num_nodes"),
        ("validation-12.csv", "0.5,1,1,1,1", "progress", "must not decrease"),
        ("validation-12.csv", "1e9,1,1,nan,1", "grad_sqr", "finite"),
    ],
)
def test_model_trace_errors_name_file_row_column(
    tmp_path: Path, file: str, line: str, column: str, message: str
) -> None:
    folder = _copy(tmp_path)
    path = folder / file
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, line]) + "\n")
    with pytest.raises(InvalidInstanceError) as err:
        read_model_traces(folder)
    assert err.value.field == column
    assert err.value.row == len(lines) + 1
    assert err.value.file == str(path)
    assert message in str(err.value)


def test_model_trace_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInstanceError, match="is not a folder"):
        read_model_traces(tmp_path / "absent")
    folder = _copy(tmp_path)
    for path in folder.glob("validation-*.csv"):
        path.unlink()
    with pytest.raises(InvalidInstanceError, match="no validation"):
        read_model_traces(folder)
    (folder / "placements.csv").unlink()
    with pytest.raises(InvalidInstanceError, match="cannot read"):
        read_model_traces(folder)


@needs_artifact
def test_every_artifact_file_reads() -> None:
    root = artifact_dir()
    assert root is not None
    for model in ARTIFACT_APPLICATIONS:
        t = read_model_traces(root / "traces" / model)
        assert t.max_epochs() <= min(len(run) for run in t.validation.values())
    count = 0
    for path in sorted(root.glob("workloads*/*.csv")):
        w = read_workload(path)
        assert set(w.applications) <= set(ARTIFACT_APPLICATIONS)
        count += 1
    assert count == 40  # 8 workloads x (1.0, 0.5, 1.5, 2.0, realistic)


def test_progress_helpers_refuse_what_the_traces_do_not_cover() -> None:
    from optsched.goodput.progress import (
        gradient_stats,
        measured_step_time,
        normalize_placement,
        progress_at_epoch,
    )

    assert normalize_placement((0, 3, 1, 0)) == "13"
    assert normalize_placement("2121") == "1212"
    with pytest.raises(InvalidInstanceError, match="placement"):
        normalize_placement((0, 0))
    t = read_model_traces(DATA / "traces" / "cifar10")
    # a measured placement is read off its own rows: "13" is measured as "31" rotated
    assert measured_step_time(t, (1, 3), 64) == measured_step_time(t, (3, 1), 64)
    with pytest.raises(InvalidInstanceError, match="local_bsz"):
        measured_step_time(t, (1,), 4096 * 4)
    with pytest.raises(InvalidInstanceError, match="batch_size"):
        gradient_stats(t, 64, 0)
    with pytest.raises(InvalidInstanceError, match="epoch"):
        gradient_stats(t, 256, 100)
    with pytest.raises(InvalidInstanceError, match="epoch"):
        progress_at_epoch(t, 101)
    assert progress_at_epoch(t, 0) == 0.0


def test_workload_row_budget() -> None:
    from optsched import limits

    with limits.override(max_trace_rows=100), pytest.raises(InvalidInstanceError) as err:
        read_workload(DATA / "workload-6.csv")
    assert "max_trace_rows" in str(err.value)
    assert err.value.row == 102  # the header, 100 jobs, then the one over


def test_simulator_dir_refuses_a_folder_without_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(InvalidInstanceError, match=ENV_VAR):
        simulator_dir()
    with pytest.raises(InvalidInstanceError, match="no traces"):
        read_job_types(tmp_path)
    # the shipped slice has the layout of the artifact's folder for what it holds
    (tmp_path / "traces").symlink_to(DATA / "traces")
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "workload-6.csv").write_bytes((DATA / "workload-6.csv").read_bytes())
    assert simulator_dir() == tmp_path
    assert len(read_workload_of(6)) == 160
    with pytest.raises(InvalidInstanceError, match="variant"):
        read_workload_of(6, "3.0")
    with pytest.raises(InvalidInstanceError, match="number"):
        read_workload_of(9)


@needs_artifact
def test_read_everything_from_the_artifact() -> None:
    types = read_job_types()
    assert sorted(types) == sorted(ARTIFACT_APPLICATIONS)
    for variant in ("1.0", "0.5", "1.5", "2.0", "realistic"):
        assert read_workload_of(6, variant).applications
