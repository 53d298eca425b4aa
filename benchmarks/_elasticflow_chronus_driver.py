"""Run ElasticFlow's Chronus simulator once, its solver swapped to CBC, and write what it measured.

Runs under a Python with ElasticFlow's dependencies (not optsched's), so it imports nothing from
optsched. ElasticFlow's ``chronus-scheduler`` (github.com/pkusys/ElasticFlow, Apache-2.0; the
Chronus artifact it ships) is run with its code unmodified, as its ``run_fig10.sh`` and
``run_fig8b.sh`` run it: the trace converted by its own ``utils/convert_ef_trace_to_chronus.py``
and ``utils/get_name_list.py``, then ``main.py --schedule=time-aware-with-lease --ident=chronus
--aggressive=True --mip_objective=adaptive --placement=local_search --profile=True
--check_time_interval=C --disable_turn_off=True --num_node_p_switch=N --lease_term_interval=240
--simulation=True --gpu_type=A100 --num_gpu_p_node=8``, in its own directory, through ``runpy``
so that its module state (``client.jobs.JOBS``) can be read back.

The one change, made here and not in its tree: its ``alg/scheduler/solver.py`` does ``from mip
import *`` and builds every model as ``Model(solver_name=GRB)`` (Gurobi, which needs a licence).
Before any of its modules is imported, this driver sets ``mip.GRB = mip.CBC``, so the name
``GRB`` its star import binds is python-mip's ``"CBC"``: every model it builds is solved by COIN-OR
CBC (the build bundled with python-mip), with its own time limits (``max_seconds``) unchanged.
Nothing else is touched.

Written: ``jobs``, ``satisfied`` (its own count, as ``summary_all_jobs`` prints it: end minus
submit within the job's ``expect_time``, which its admission may have moved to a lease end),
``met_trace`` (end by the trace's deadline), ``finished`` (per job id: ``[end_time, ddl of the
trace, expect_time + submit_time, accepted]``), ``solver``, ``wall_seconds``, ``cpu_seconds``
and ``error`` (an exception of the run, recorded, not raised). While it runs, ``progress.txt``
in the log directory gets a line every ``PROGRESS_SECONDS``: wall seconds, its simulated time
and the jobs ended, so a run stopped at a limit says how far it got.

Usage: ``python _elasticflow_chronus_driver.py EF_DIR TRACE NODES CHECK_SECONDS LOG_DIR OUT``
"""

import contextlib
import csv
import json
import os
import runpy
import sys
import threading
import time
import traceback

#: run_fig10.sh's and run_fig8b.sh's lease term
LEASE_SECONDS = 240
PROGRESS_SECONDS = 30


def _convert(ef_dir, trace, log_dir):
    """The trace and name list as ElasticFlow's own converters write them."""
    utils = os.path.join(ef_dir, "chronus-scheduler", "utils")
    out = os.path.join(log_dir, "trace.csv")
    names = os.path.join(log_dir, "trace.lst")
    argv = sys.argv
    try:
        sys.argv = ["convert_ef_trace_to_chronus.py", "-t", trace, "-o", out]
        runpy.run_path(os.path.join(utils, "convert_ef_trace_to_chronus.py"), run_name="__main__")
        sys.argv = ["get_name_list.py", "-t", out, "-o", names]
        runpy.run_path(os.path.join(utils, "get_name_list.py"), run_name="__main__")
    finally:
        sys.argv = argv
    return out, names


def _sim_time(main_thread):
    """The ``cur_time`` of the scheduler's ``run`` loop, read from the main thread's frames."""
    frame = sys._current_frames().get(main_thread)
    while frame is not None:
        if frame.f_code.co_name == "run" and "cur_time" in frame.f_locals:
            return frame.f_locals["cur_time"]
        frame = frame.f_back
    return None


def _watch(log_dir, main_thread, began, stop):
    with open(os.path.join(log_dir, "progress.txt"), "w") as f:
        f.write("wall_s,sim_time_s,jobs_ended,jobs\n")
        while not stop.wait(PROGRESS_SECONDS):
            jobs = getattr(sys.modules.get("client.jobs"), "JOBS", None)
            ended = total = None
            if jobs is not None:
                listed = list(jobs.job_list)
                total = len(listed)
                ended = sum(job["status"] == "END" for job in listed)
            now = time.perf_counter() - began
            f.write(f"{now:.0f},{_sim_time(main_thread)},{ended},{total}\n")
            f.flush()


def _deadlines(trace):
    with open(trace, newline="") as f:
        return {row["job_id"]: float(row["ddl"]) for row in csv.DictReader(f)}


def main():
    ef_dir, trace, nodes, check, log_dir, out = sys.argv[1:7]
    os.makedirs(log_dir, exist_ok=True)
    chronus_trace, names = _convert(ef_dir, trace, log_dir)
    import mip

    # the swap: solver.py's ``from mip import *`` binds GRB from here, so its Model(solver_name=
    # GRB) builds CBC models
    mip.GRB = mip.CBC
    sched = os.path.join(ef_dir, "chronus-scheduler")
    os.chdir(sched)
    sys.path.insert(0, sched)
    sys.argv = [
        "main.py",
        "--schedule=time-aware-with-lease",
        f"--trace={chronus_trace}",
        f"--save_log_dir={log_dir}",
        "--ident=chronus",
        "--aggressive=True",
        "--mip_objective=adaptive",
        "--placement=local_search",
        "--profile=True",
        f"--check_time_interval={check}",
        "--disable_turn_off=True",
        f"--num_node_p_switch={nodes}",
        f"--lease_term_interval={LEASE_SECONDS}",
        f"--name_list={names}",
        "--simulation=True",
        "--gpu_type=A100",
        "--num_gpu_p_node=8",
    ]
    error = None
    start = time.perf_counter()
    cpu_start = time.process_time()
    stop = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(log_dir, threading.get_ident(), start, stop), daemon=True
    )
    watcher.start()
    with open(os.path.join(log_dir, "stdout.txt"), "w") as sink:
        with contextlib.redirect_stdout(sink):
            try:
                runpy.run_path("main.py", run_name="__main__")
            except BaseException as exc:  # recorded, not raised (SystemExit included)
                error = f"{type(exc).__name__}: {exc}"
                traceback.print_exc(file=sink)
    stop.set()
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    jobs = getattr(sys.modules.get("client.jobs"), "JOBS", None)
    ddl = _deadlines(trace)
    finished = {}
    satisfied = met_trace = 0
    for job in [] if jobs is None else jobs.job_list:
        if job["status"] != "END":
            continue
        jid = str(job["job_id"])
        end, submit = float(job["end_time"]), float(job["submit_time"])
        ok = end - submit <= job["expect_time"]
        satisfied += ok
        met_trace += end <= ddl[jid]
        accepted = job.get("queue_priority") == 0  # ACCEPTED_SLO
        finished[jid] = [end, ddl[jid], submit + float(job["expect_time"]), accepted]
    with open(out, "w") as f:
        json.dump(
            {
                "schedule": "chronus (time-aware-with-lease)",
                "solver": f"CBC through python-mip {mip.__version__} (mip.GRB set to mip.CBC)",
                "jobs": None if jobs is None else len(jobs.job_list),
                "ended": len(finished),
                "satisfied": satisfied,
                "met_trace": met_trace,
                "finished": finished,
                "wall_seconds": wall,
                "cpu_seconds": cpu,
                "error": error,
            },
            f,
        )


if __name__ == "__main__":
    main()
