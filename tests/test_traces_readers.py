"""Every trace reader on its real file and on the shipped fixtures, checked against an independent
parse (pandas / the csv module) or values worked out by hand from the fixture."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.traces import READER_CELLS

from optsched.errors import InvalidInstanceError
from optsched.traces import COLUMNS, FORMATS, Trace, detect_format, read_trace
from optsched.traces.elasticflow import read_elasticflow
from optsched.traces.gavel import split_job_type

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "traces"
_ROOT = Path(__file__).resolve().parents[1]
# ``../shared`` from a clone's root; one level further up from a worktree nested beside clones.
SHARED = next(
    (p / "shared" / "data" for p in (_ROOT.parent, _ROOT.parent.parent) if (p / "shared").is_dir()),
    _ROOT.parent / "shared" / "data",
)
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"the shared trace data ({SHARED}) is not present"
)

ELASTICFLOW_JOBS = {
    "cluster01.csv": 1595,
    "cluster02.csv": 5778,
    "cluster03.csv": 3011,
    "cluster04.csv": 15802,
    "cluster05.csv": 3629,
    "cluster06.csv": 2396,
    "cluster07.csv": 12699,
    "cluster08.csv": 13047,
    "cluster09.csv": 11134,
    "cluster10.csv": 260,
}


def _check_schema(trace: Trace) -> None:
    jobs = trace.jobs
    assert list(jobs.columns)[: len(COLUMNS)] == list(COLUMNS)
    assert jobs["num_gpus"].dtype == np.int64
    for name in ("arrival", "total_steps", "duration", "batch_size", "weight", "deadline"):
        assert jobs[name].dtype == np.float64
    assert bool(np.all(np.diff(jobs["arrival"].to_numpy()) >= 0))
    assert jobs["job_id"].is_unique


# --------------------------------------------------------------------------------------------
# ElasticFlow
# --------------------------------------------------------------------------------------------


def _elasticflow_by_pandas(path: Path) -> pd.DataFrame:
    """An independent parse: pandas' CSV reader, then the documented mapping."""
    raw = pd.read_csv(path, dtype={"job_id": str})
    out = pd.DataFrame(
        {
            "job_id": raw["job_id"],
            "arrival": raw["submission_time"].astype(float),
            "num_gpus": raw["num_gpu"].astype(np.int64),
            "model": raw["model_name"],
            "total_steps": raw["num_iteration"].astype(float),
            "duration": raw["duration"].astype(float),
            "batch_size": raw["batch_size"].astype(float),
            "weight": 1.0,
            "deadline": raw["deadline"].astype(float),
        }
    )
    return out.sort_values("arrival", kind="stable").reset_index(drop=True)


def _assert_same(trace: Trace, expected: pd.DataFrame) -> None:
    for name in expected.columns:
        got, want = trace.jobs[name].to_numpy(), expected[name].to_numpy()
        if expected[name].dtype == object:
            assert list(got) == list(want), name
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


def test_elasticflow_fixture_matches_pandas() -> None:
    path = DATA / "elasticflow" / "cluster10_head40.csv"
    trace = read_trace(path)
    assert trace.format == "elasticflow" and trace.meta["form"] == "elasticflow"
    assert len(trace) == 40
    _check_schema(trace)
    _assert_same(trace, _elasticflow_by_pandas(path))
    assert (trace.jobs["user"] == "").all()


def test_elasticflow_raw_form() -> None:
    trace = read_trace(DATA / "schema" / "elasticflow_raw.csv")
    assert trace.meta["form"] == "raw"
    # sorted by submission time: 16000, 16566, 17000
    assert list(trace.jobs["arrival"]) == [16000.0, 16566.0, 17000.0]
    assert list(trace.jobs["num_gpus"]) == [1, 4, 8]
    assert list(trace.jobs["duration"]) == [120.0, 3890.0, 7200.0]
    assert trace.jobs["total_steps"].isna().all() and (trace.jobs["model"] == "").all()


@needs_shared
@pytest.mark.parametrize("name", sorted(ELASTICFLOW_JOBS))
def test_elasticflow_real_clusters(name: str) -> None:
    path = SHARED / "elasticflow" / name
    trace = read_trace(path)
    assert len(trace) == ELASTICFLOW_JOBS[name]
    _check_schema(trace)
    if name in {"cluster10.csv", "cluster01.csv"}:
        _assert_same(trace, _elasticflow_by_pandas(path))
    # deadlines are absolute: never before the submission
    assert bool((trace.jobs["deadline"] >= trace.jobs["arrival"]).all())


@needs_shared
def test_elasticflow_all_clusters_total() -> None:
    total = sum(len(read_trace(SHARED / "elasticflow" / n)) for n in ELASTICFLOW_JOBS)
    assert total == 69_351


@needs_shared
def test_elasticflow_195job() -> None:
    trace = read_trace(SHARED / "elasticflow" / "195job.csv")
    assert len(trace) == 195
    _assert_same(trace, _elasticflow_by_pandas(SHARED / "elasticflow" / "195job.csv"))


# --------------------------------------------------------------------------------------------
# Gavel
# --------------------------------------------------------------------------------------------


def _gavel_by_csv(path: Path) -> list[dict[str, object]]:
    """Independent parse with the csv module and the published field orders."""
    out = []
    with open(path, newline="") as fh:
        for i, parts in enumerate(csv.reader(fh, delimiter="\t")):
            if len(parts) == 10:
                job_type, steps, scale, weight, slo, arrival = (
                    parts[0], parts[5], parts[6], parts[7], parts[8], parts[9],
                )  # fmt: skip
            else:
                job_type, steps, arrival, scale = parts[0], parts[4], parts[5], parts[6]
                weight, slo = "1", "-1"
            out.append(
                {
                    "job_id": str(i),
                    "job_type": job_type,
                    "total_steps": float(int(steps)),
                    "num_gpus": int(scale),
                    "weight": float(weight),
                    "slo": float(slo),
                    "arrival": float(arrival),
                }
            )
    out.sort(key=lambda r: r["arrival"])  # type: ignore[arg-type,return-value]
    return out


@pytest.mark.parametrize(
    "path",
    [
        DATA / "gavel" / "msr_seed0_0e4a51_head40.trace",
        DATA / "gavel" / "physical_cluster_small_test.trace",
    ],
    ids=["7-field", "10-field"],
)
def test_gavel_fixture_matches_csv_parse(path: Path) -> None:
    trace = read_trace(path)
    assert trace.format == "gavel"
    _check_schema(trace)
    want = _gavel_by_csv(path)
    jobs = trace.jobs
    assert len(jobs) == len(want)
    assert list(jobs["job_id"]) == [w["job_id"] for w in want]
    assert list(jobs["arrival"]) == [w["arrival"] for w in want]
    assert list(jobs["num_gpus"]) == [w["num_gpus"] for w in want]
    assert list(jobs["total_steps"]) == [w["total_steps"] for w in want]
    assert list(jobs["weight"]) == [w["weight"] for w in want]
    for model, batch, w in zip(jobs["model"], jobs["batch_size"], want, strict=True):
        job_type = str(w["job_type"])
        if "(batch size " in job_type:
            assert f"{model} (batch size {int(batch)})" == job_type
        else:
            assert model == job_type and math.isnan(batch)
    assert jobs["duration"].isna().all() and jobs["deadline"].isna().all()
    if trace.meta["fields"] == 10:
        assert jobs["slo_factor"].isna().all()  # every SLO in the file is -1
    else:
        assert "slo_factor" not in jobs.columns


def test_split_job_type() -> None:
    assert split_job_type("ResNet-18 (batch size 64)") == ("ResNet-18", 64.0)
    assert split_job_type("Recommendation (batch size 8192)") == ("Recommendation", 8192.0)
    model, batch = split_job_type("CycleGAN")
    assert model == "CycleGAN" and math.isnan(batch)


def test_gavel_scale_factor_zero_is_skipped(tmp_path: Path) -> None:
    line = "A3C\tcmd\t--n\t1\t{steps}\t{arrival}\t{scale}\n"
    text = line.format(steps=10, arrival=0, scale=1) + line.format(steps=20, arrival=5, scale=0)
    text += line.format(steps=30, arrival=7, scale=2)
    path = tmp_path / "x.trace"
    path.write_text(text)
    trace = read_trace(path)
    # ids follow file order, so the skipped row's id "1" is absent
    assert list(trace.jobs["job_id"]) == ["0", "2"]
    assert trace.meta["skipped"] == {"scale_factor 0": 1}


def test_gavel_slo_and_weight(tmp_path: Path) -> None:
    row = "LM (batch size 5)\tpython3 x\tlm\t-n\t1\t100\t2\t{w}\t{slo}\t{t}\n"
    path = tmp_path / "y.trace"
    path.write_text(row.format(w=5, slo="1.5", t=30) + row.format(w=1, slo="-1.000000", t=10))
    jobs = read_trace(path).jobs
    assert list(jobs["job_id"]) == ["1", "0"]
    assert list(jobs["weight"]) == [1.0, 5.0]
    assert math.isnan(jobs["slo_factor"][0]) and jobs["slo_factor"][1] == 1.5


@needs_shared
def test_gavel_real_traces() -> None:
    files = sorted((SHARED / "gavel" / "traces").glob("*/*.trace"))
    assert len(files) == 23
    for path in files:
        trace = read_trace(path)
        with open(path) as fh:
            lines = [ln for ln in fh if ln.strip()]
        assert len(trace) == len(lines), path
        _check_schema(trace)
        fields = len(lines[0].split("\t"))
        assert trace.meta["fields"] == fields
        if path.name == "0e4a51.trace":
            assert len(trace) == 1181
            assert trace.jobs["num_gpus"].max() == 8


# --------------------------------------------------------------------------------------------
# Tiresias, Helios/Philly, PAI (files written in the published schemas)
# --------------------------------------------------------------------------------------------


def test_tiresias() -> None:
    trace = read_trace(DATA / "schema" / "tiresias_jobs.csv")
    assert trace.format == "tiresias"
    jobs = trace.jobs
    assert list(jobs["job_id"]) == ["0", "1", "2", "3"]
    assert list(jobs["num_gpus"]) == [1, 8, 2, 4]
    assert list(jobs["arrival"]) == [0.0, 30.0, 53.0, 79.0]
    assert list(jobs["total_steps"]) == [606.0, 133.0, 157.0, 1200.0]
    assert list(jobs["duration"]) == [164.0, 147.0, 127.0, 980.0]
    assert list(jobs["model"]) == ["vgg19", "vgg11", "inception4", "resnet50"]


def test_helios() -> None:
    trace = read_trace(DATA / "schema" / "helios_cluster_log.csv")
    assert trace.format == "helios"
    jobs = trace.jobs
    # the CPU job (gpu_num 0) and the zero-duration job are skipped and counted
    assert trace.meta["skipped"] == {"gpu_num 0 (CPU job)": 1, "no positive duration": 1}
    assert list(jobs["job_id"]) == ["1425511", "1425512", "1425515"]
    # 18:41:01 is the origin; 18:41:27 is 26 s later; 19:00:00 is 18 min 59 s later
    assert list(jobs["arrival"]) == [0.0, 26.0, 1139.0]
    assert trace.meta["time_origin"] == "2020-06-09 18:41:01"
    assert list(jobs["duration"]) == [36848.0, 246.0, 7200.0]
    assert list(jobs["num_gpus"]) == [1, 4, 16]
    assert list(jobs["user"]) == ["uXBbc", "uVMrF", "uVMrF"]
    assert list(jobs["vc"]) == ["vcJkd", "vchbv", "vchbv"]
    assert list(jobs["status"]) == ["COMPLETED", "FAILED", "COMPLETED"]
    assert list(jobs["queue_delay"]) == [0.0, 3.0, 600.0]


def test_philly_in_helios_schema() -> None:
    path = DATA / "schema" / "philly_trace.csv"
    assert detect_format(path) == "helios"
    trace = read_trace(path, format="philly")
    assert trace.format == "philly"
    jobs = trace.jobs
    assert list(jobs["job_id"]) == [
        "application_1506638472019_10241",
        "application_1506638472019_10238",
        "application_1506638472019_10240",
    ]
    assert list(jobs["arrival"]) == [0.0, 65.0, 120.0]
    assert list(jobs["status"]) == ["Failed", "Pass", "Killed"]
    assert list(jobs["num_gpus"]) == [2, 1, 8]


def test_helios_duration_from_times(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text(
        "job_id,gpu_num,submit_time,start_time,end_time\n"
        "7,2,100,130,1130\n"
        "8,1,50,60,\n"  # no end: skipped
    )
    trace = read_trace(path)
    assert list(trace.jobs["duration"]) == [1000.0]
    assert list(trace.jobs["queue_delay"]) == [30.0]
    assert list(trace.jobs["arrival"]) == [100.0]  # numeric times are kept unshifted
    assert trace.meta["skipped"] == {"no positive duration": 1}


def test_pai_tasks_alone() -> None:
    trace = read_trace(DATA / "schema" / "pai_task_table.csv")
    assert trace.format == "pai-task"
    jobs = trace.jobs
    # j5: 3 x 33.333333333 % + 1 x 100 % = 2 GPUs; j1: 2 x 50 % (ps has none) = 1; j2: 300 % = 3
    assert list(jobs["job_id"]) == ["j5", "j1", "j2"]
    assert list(jobs["num_gpus"]) == [2, 1, 3]
    assert list(jobs["arrival"]) == [950.0, 1010.0, 1150.0]  # first task launch
    assert list(jobs["duration"]) == [550.0, 590.0, 150.0]  # last end - first launch
    assert list(jobs["gpu_type"]) == ["mixed", "V100", "T4"]
    assert list(jobs["status"]) == ["Terminated", "Terminated", "Failed"]
    np.testing.assert_allclose(jobs["gpu_fraction"], [2.0, 1.0, 3.0], rtol=1e-9)
    assert trace.meta["skipped"] == {
        "task without start, end or inst_num (unfinished)": 1,
        "no GPU requested (CPU job)": 1,
    }


def test_pai_jobs_joined_with_tasks() -> None:
    trace = read_trace(DATA / "schema" / "pai_job_table.csv")
    assert trace.format == "pai-job"
    jobs = trace.jobs
    assert list(jobs["job_id"]) == ["j5", "j1", "j2"]
    assert list(jobs["arrival"]) == [900.0, 1000.0, 1100.0]  # submission times
    assert list(jobs["user"]) == ["u2", "u1", "u2"]
    assert list(jobs["duration"]) == [550.0, 590.0, 150.0]
    assert list(jobs["status"]) == ["Terminated", "Terminated", "Failed"]


def test_pai_jobs_without_task_table(tmp_path: Path) -> None:
    path = tmp_path / "pai_job_table.csv"
    path.write_text((DATA / "schema" / "pai_job_table.csv").read_text())
    with pytest.raises(InvalidInstanceError) as info:
        read_trace(path)
    assert info.value.field == "tasks"
    trace = read_trace(path, tasks=DATA / "schema" / "pai_task_table.csv")
    assert len(trace) == 3


def test_pai_header_line_is_accepted(tmp_path: Path) -> None:
    header = "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,"
    header += "plan_gpu,gpu_type\n"
    path = tmp_path / "tasks.csv"
    path.write_text(header + (DATA / "schema" / "pai_task_table.csv").read_text())
    assert detect_format(path) == "pai-task"
    assert len(read_trace(path)) == 3


# --------------------------------------------------------------------------------------------
# Detection
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (DATA / "gavel" / "msr_seed0_0e4a51_head40.trace", "gavel"),
        (DATA / "gavel" / "physical_cluster_small_test.trace", "gavel"),
        (DATA / "elasticflow" / "cluster10_head40.csv", "elasticflow"),
        (DATA / "schema" / "elasticflow_raw.csv", "elasticflow"),
        (DATA / "schema" / "tiresias_jobs.csv", "tiresias"),
        (DATA / "schema" / "helios_cluster_log.csv", "helios"),
        (DATA / "schema" / "pai_job_table.csv", "pai-job"),
        (DATA / "schema" / "pai_task_table.csv", "pai-task"),
    ],
)
def test_detection(path: Path, expected: str) -> None:
    assert detect_format(path) == expected
    assert read_trace(path).format == expected


def test_detection_of_normalized(tmp_path: Path) -> None:
    from optsched.traces import write_trace

    out = write_trace(read_trace(DATA / "schema" / "tiresias_jobs.csv"), tmp_path / "n.csv")
    assert detect_format(out) == "optsched"


def test_format_override_and_unknown(tmp_path: Path) -> None:
    path = DATA / "schema" / "tiresias_jobs.csv"
    assert read_trace(path, format="TIRESIAS").format == "tiresias"
    with pytest.raises(InvalidInstanceError) as info:
        read_trace(path, format="nope")
    assert info.value.field == "format"
    # forcing the wrong reader names the missing column, never a traceback
    with pytest.raises(InvalidInstanceError) as info:
        read_trace(path, format="elasticflow")
    assert info.value.field == "submission_time" and info.value.file == str(path)
    with pytest.raises(InvalidInstanceError) as info:
        read_trace(path, format="gavel")
    assert info.value.row == 1
    short = tmp_path / "short.trace"
    short.write_text("ResNet-18 (batch size 64)\tpython3 x\t-n\t1\t100\n")
    with pytest.raises(InvalidInstanceError) as info:
        read_trace(short)  # the extension says Gavel; its reader names the field count
    assert info.value.row == 1 and "7 or 10" in info.value.message
    weird = tmp_path / "weird.txt"
    weird.write_text("hello world\n")
    with pytest.raises(InvalidInstanceError) as info:
        read_trace(weird)
    assert info.value.field == "format"
    empty = tmp_path / "empty.csv"
    empty.write_text("\n\n")
    with pytest.raises(InvalidInstanceError):
        read_trace(empty)
    assert set(FORMATS) >= {"gavel", "elasticflow", "tiresias", "helios", "philly"}


# --------------------------------------------------------------------------------------------
# ElasticFlow's columnar pass accepts exactly what the row-checking reader accepts
# --------------------------------------------------------------------------------------------


def _outcome(path: Path, columnar: bool) -> Trace | tuple[str, int | None]:
    try:
        return read_elasticflow(path, columnar=columnar)
    except InvalidInstanceError as exc:
        return (exc.field, exc.row)


@given(data=st.data())
def test_columnar_pass_matches_row_reader(data: st.DataObject, tmp_path_factory) -> None:
    lines = (DATA / "elasticflow" / "cluster10_head40.csv").read_text().splitlines()
    for _ in range(data.draw(st.integers(0, 3), label="edits")):
        i = data.draw(st.integers(1, len(lines) - 1), label="line")
        parts = lines[i].split(",")
        j = data.draw(st.integers(0, len(parts) - 1), label="field")
        parts[j] = data.draw(READER_CELLS, label="value")
        lines[i] = ",".join(parts)
    path = tmp_path_factory.mktemp("ef") / "c.csv"
    path.write_text("\n".join(lines) + "\n")
    fast, slow = _outcome(path, True), _outcome(path, False)
    if isinstance(slow, Trace):
        assert isinstance(fast, Trace) and fast.equals(slow)
        assert dict(fast.meta) == dict(slow.meta)
    else:
        assert fast == slow


@needs_shared
def test_columnar_pass_matches_row_reader_on_real_clusters() -> None:
    for name in ("cluster01.csv", "cluster10.csv", "195job.csv"):
        path = SHARED / "elasticflow" / name
        fast, slow = read_elasticflow(path), read_elasticflow(path, columnar=False)
        assert fast.equals(slow) and dict(fast.meta) == dict(slow.meta)
