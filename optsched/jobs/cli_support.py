"""File-level helpers behind ``optsched validate`` for OASiS instances and schedules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optsched.jobs.instance import load_instance
from optsched.jobs.schedule import load_schedule, validate

__all__ = ["validate_files"]


def validate_files(instance_path: str | Path, schedule_path: str | Path | None) -> dict[str, Any]:
    """Validate an instance file, and a schedule file against it.

    Returns
    -------
    dict
        ``{"valid": bool, "kind": "oasis-instance", "jobs": int, ...}``; with a schedule also
        ``"utility"`` (recomputed) and ``"violations"``; ``"lines"`` holds human-readable text.

    Raises
    ------
    InvalidInstanceError
        The instance or the schedule file is malformed (the message names the field).
    """
    instance = load_instance(instance_path)
    out: dict[str, Any] = {
        "valid": True,
        "kind": "oasis-instance",
        "jobs": instance.n_jobs,
        "horizon": instance.horizon,
        "worker_servers": len(instance.worker_servers),
        "ps_servers": len(instance.ps_servers),
    }
    lines = [
        f"instance: {instance.n_jobs} jobs, T = {instance.horizon}, "
        f"H = {len(instance.worker_servers)}, K = {len(instance.ps_servers)}: valid"
    ]
    if schedule_path is not None:
        schedule = load_schedule(schedule_path)
        report = validate(instance, schedule)
        out.update(report.to_dict())
        lines.append(
            f"schedule: {len(schedule.admitted)} admitted, utility {report.utility:.6g} "
            f"(recomputed): {'feasible' if report.ok else 'INFEASIBLE'}"
        )
        lines.extend(f"  {v}" for v in report.violations[:50])
    out["lines"] = lines
    return out
