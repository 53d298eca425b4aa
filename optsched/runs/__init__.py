"""Runs: the run store, the one sweep driver and the sweeps.

* :mod:`optsched.runs.store`: :class:`RunStore`, one keyed, checksummed SQLite record per run;
* :mod:`optsched.runs.driver`: :func:`run_sweep`, which runs the tasks a store lacks on a
  serial, process (loky), Dask or Ray backend and writes each record as it finishes;
* the sweeps built on it: :mod:`optsched.runs.oasis_ratio` (``oasis ratio``),
  :mod:`optsched.runs.pace_sweep` (``pace sweep``) and :mod:`optsched.runs.sim_sweep`
  (``sim sweep``).

Results of long runs are written as they finish, so an interruption loses nothing. This layer
may import the model packages; no model package imports it (nor :mod:`optsched.report`, nor the
command line), which ``tests/test_layering.py`` checks on every source file.
"""

from optsched.runs.driver import SweepOutcome, SweepTask, run_sweep
from optsched.runs.store import RunStore, run_key

__all__ = ["RunStore", "SweepOutcome", "SweepTask", "run_key", "run_sweep"]
