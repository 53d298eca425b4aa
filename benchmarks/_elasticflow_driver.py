"""Run ElasticFlow's own simulator once and write what it measured as JSON.

Runs under a Python with ElasticFlow's dependencies (not optsched's), so it imports nothing from
optsched. ElasticFlow (github.com/pkusys/ElasticFlow, Apache-2.0) is used unmodified: its
``scheduler/scheduler.py`` is run as its ``run_fig8b.sh`` runs it (``--simulation=True --print``
with the given ``--cluster_spec``, ``--scheme``, ``--schedule``, ``--scheduling_slot`` and
``--gpu_type``), in its own directory (it reads ``./throughputs_<GPU type>/``), through
``runpy`` so that its module state (``JOBS``: the accepted and declined counts it prints at the
end) can be read back. Its printing (one line per event with ``--print``) goes to
``LOG_DIR/stdout.txt``; its own logs (``job.csv``, ``final_result.csv``, ...) to ``LOG_DIR``.

Written: ``accepted`` and ``declined`` (ElasticFlow's counts: a job is accepted when it is
admitted and finishes by its deadline; its ``ddl_satis_ratio`` is accepted over accepted plus
declined), ``ratio`` (the ``ddl_satis_ratio`` of ``final_result.csv``), ``finished`` (per job id
of the trace: ``[end_time, ddl]`` from ``job.csv``, the jobs that ran to completion),
``wall_seconds`` and ``cpu_seconds`` (the run, not the imports), and ``error`` (an exception of
the run, recorded, not raised).

Usage: ``python _elasticflow_driver.py SCHEDULER_DIR TRACE CLUSTER_SPEC SCHEDULE SCHEME SLOT
GPU_TYPE LOG_DIR OUT``
"""

import contextlib
import csv
import json
import os
import runpy
import sys
import time
import traceback


def _finished(log_dir):
    """``{job_id: [end_time, ddl]}`` of the jobs ``job.csv`` records as completed."""
    path = os.path.join(log_dir, "job.csv")
    out = {}
    if not os.path.isfile(path):
        return out
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            out[row["job_id"]] = [float(row["end_time"]), float(row["ddl"])]
    return out


def _ratio(log_dir):
    path = os.path.join(log_dir, "final_result.csv")
    if not os.path.isfile(path):
        return None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return float(rows[-1]["ddl_satis_ratio"]) if rows else None


def main():
    sched_dir, trace, spec, schedule, scheme, slot, gpu_type, log_dir, out = sys.argv[1:10]
    os.makedirs(log_dir, exist_ok=True)
    os.chdir(sched_dir)
    sys.path.insert(0, sched_dir)
    sys.argv = [
        "scheduler.py",
        f"--cluster_spec={spec}",
        "--print",
        f"--scheme={scheme}",
        f"--trace_file={trace}",
        f"--schedule={schedule}",
        f"--log_path={log_dir}",
        "--simulation=True",
        f"--scheduling_slot={slot}",
        f"--gpu_type={gpu_type}",
    ]
    error = None
    module = {}
    start = time.perf_counter()
    cpu_start = time.process_time()
    with open(os.path.join(log_dir, "stdout.txt"), "w") as sink:
        with contextlib.redirect_stdout(sink):
            try:
                module = runpy.run_path("scheduler.py", run_name="__main__")
            except BaseException as exc:  # recorded, not raised (SystemExit included)
                error = f"{type(exc).__name__}: {exc}"
                traceback.print_exc(file=sink)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    jobs = module.get("JOBS")
    if jobs is None:  # run_path returns nothing when the run raised: read the module instead
        jobs = getattr(sys.modules.get("jobs"), "JOBS", None)
    with open(out, "w") as f:
        json.dump(
            {
                "schedule": schedule,
                "scheme": scheme,
                "slot": float(slot),
                "jobs": None if jobs is None else len(jobs.job_list),
                "accepted": None if jobs is None else jobs.num_accepted_job,
                "declined": None if jobs is None else jobs.num_declined_job,
                "ratio": _ratio(log_dir),
                "finished": _finished(log_dir),
                "wall_seconds": wall,
                "cpu_seconds": cpu,
                "error": error,
            },
            f,
        )


if __name__ == "__main__":
    main()
