"""Contract on the environment and on absurd tables: named refusals, exit 2, nothing left behind.

* a throughput table with a denormal or huge rate is refused naming the table's file and field
  (once refused as ``max_time``, an option never given, or ``c[3]``, an LP coefficient);
* a full output (a file-size limit: writes fail like on a full disk) exits 2 naming the file,
  and leaves no partial file;
* a remote sweep backend that cannot be reached is refused naming ``--address``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.runs import driver
from optsched.sim.world.throughputs import MAX_RATE, MIN_RATE, throughputs_from_dict

HEADER = "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"


def _trace(tmp_path: Path, rows: int = 4) -> Path:
    path = tmp_path / "t.csv"
    body = "".join(
        f"j{i},{i * 30},1,ResNet-18,{200 + 50 * i},{100 + 20 * i},32,1,,u\n" for i in range(rows)
    )
    path.write_text(HEADER + body)
    return path


def _table(tmp_path: Path, rate: float) -> Path:
    path = tmp_path / "rates.json"
    path.write_text(json.dumps({g: {"('ResNet-18', 1)": {"null": rate}} for g in ("v100", "p100")}))
    return path


@pytest.mark.parametrize("rate", [5e-324, 1e-300, MIN_RATE / 2, MAX_RATE * 2, 1e308])
def test_absurd_rates_are_refused_naming_the_table_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rate: float
) -> None:
    table = _table(tmp_path, rate)
    argv = ["sim", "run", str(_trace(tmp_path)), "--cluster", "v100=4,p100=4"]
    code = main([*argv, "--throughputs", str(table), "--policy", "max-min", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 2
    assert payload["file"] == str(table)
    assert payload["field"] == "v100.('ResNet-18', 1).null"
    assert "max_time" not in payload["message"] and "c[" not in payload["message"]


@pytest.mark.parametrize("rate", [0.0, MIN_RATE, 1.0, MAX_RATE])
def test_rates_within_the_bounds_are_read(rate: float) -> None:
    doc = {"v100": {"('ResNet-18', 1)": {"null": rate}, "('A3C', 1)": {"null": 2.0}}}
    table = throughputs_from_dict(doc)
    assert table.rate("ResNet-18", 1, "v100") == rate


def test_a_rate_just_outside_is_refused_in_the_library() -> None:
    doc = {"v100": {"('ResNet-18', 1)": {"null": 1.0, "('A3C', 1)": [1.0, 1e300]}}}
    with pytest.raises(InvalidInstanceError) as info:
        throughputs_from_dict(doc)
    assert info.value.field == "v100.('ResNet-18', 1).('A3C', 1)[1]"


# --- a full output ----------------------------------------------------------------------

_FULL = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
from optsched.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_trace_convert_to_a_full_output_exits_2_naming_it(tmp_path: Path) -> None:
    source = _trace(tmp_path, rows=400)
    out = tmp_path / "out" / "converted.csv"
    out.parent.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _FULL, "trace", "convert", str(source), str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    payload = json.loads(done.stdout)
    assert payload["field"] == str(out)
    assert payload["errno"] == 27  # EFBIG, as ENOSPC on a full disk
    assert "Traceback" not in done.stderr
    assert list(out.parent.iterdir()) == []  # no partial file, no temporary left


# --- unreachable remote backends ---------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_reachable_refuses_a_closed_port_and_a_malformed_address() -> None:
    with pytest.raises(InvalidInstanceError) as info:
        driver.reachable(f"127.0.0.1:{_closed_port()}", "ray", timeout=2.0)
    assert info.value.field == "address"
    with pytest.raises(InvalidInstanceError):
        driver.reachable("no-port-here", "ray")
    driver.reachable(None, "ray")
    driver.reachable("auto", "ray")


def test_sweep_on_an_unreachable_ray_cluster_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ray")
    argv = ["sim", "sweep", str(_trace(tmp_path)), "--cluster", "v100=4", "--policies", "fifo"]
    code = main([*argv, "--backend", "ray", "--address", f"127.0.0.1:{_closed_port()}", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 2
    assert payload["field"] == "--address"


def test_sweep_on_an_unreachable_dask_scheduler_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr(driver, "CONNECT_TIMEOUT", 1.0)
    argv = ["sim", "sweep", str(_trace(tmp_path)), "--cluster", "v100=4", "--policies", "fifo"]
    address = f"tcp://127.0.0.1:{_closed_port()}"
    code = main([*argv, "--backend", "dask", "--address", address, "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 2
    assert payload["field"] == "--address"


def test_store_in_a_folder_no_file_may_be_created_in_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    def refuse(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("unable to open database file")

    # what sqlite answers in a read-only or forbidden folder (root ignores file modes)
    monkeypatch.setattr(sqlite3, "connect", refuse)
    store = tmp_path / "s.sqlite"
    argv = ["sim", "sweep", str(_trace(tmp_path)), "--cluster", "v100=4", "--policies", "fifo"]
    code = main([*argv, "--store", str(store), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 2
    assert payload["field"] == "store" and payload["file"] == str(store)


# --- no worker outlives its sweep --------------------------------------------------------

_SWEEP = """
import os, sys, time
from pathlib import Path
from optsched.runs.driver import SweepTask, run_sweep

def slow(k):
    Path(sys.argv[1], f"started-{os.getpid()}").touch()
    time.sleep(600)
    return {"k": k}

if __name__ == "__main__":
    run_sweep([SweepTask(key=str(k), params=k) for k in range(4)], slow, backend="loky", n_jobs=2)
"""


def _session(sid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_pool_workers_end_when_the_sweep_is_killed(tmp_path: Path) -> None:
    import os
    import signal
    import time

    script = tmp_path / "sweep_script.py"
    script.write_text(_SWEEP)
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path)], env=env, start_new_session=True
    )
    try:
        # both workers run a task: their parent watch (the pool's initializer) is in place
        deadline = time.monotonic() + 300
        while len(list(tmp_path.glob("started-*"))) < 2:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        workers = [int(p.name.split("-")[1]) for p in tmp_path.glob("started-*")]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # each worker notices within PARENT_POLL: the wait ends on that event; the cap only
        # guards against a hang (a loaded machine schedules the worker later, not this late)
        deadline = time.monotonic() + 600
        while any(Path(f"/proc/{w}").exists() and w in _session(proc.pid) for w in workers):
            assert time.monotonic() < deadline, "a worker outlived its killed sweep"
            time.sleep(0.2)
    finally:
        for pid in _session(proc.pid):
            os.kill(pid, signal.SIGKILL)


def test_output_in_a_folder_no_file_may_be_created_in_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    if os.geteuid() == 0:
        if not Path("/sys").is_dir():
            pytest.skip("root ignores file modes and there is no /sys")
        folder = Path("/sys")  # sysfs: no file may be created there, even by root
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
    argv = ["sim", "sweep", str(_trace(tmp_path)), "--cluster", "v100=4", "--policies", "fifo"]
    store = tmp_path / "s.sqlite"
    code = main([*argv, "--store", str(store), "-o", str(folder / "t.csv"), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 2
    assert "--output" in payload["message"]
    assert not store.exists()  # refused before any run
