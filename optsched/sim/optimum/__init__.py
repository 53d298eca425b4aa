"""How far any schedule is from the best one.

The exact round-world model (:mod:`.exact`) and the certified bounds valid for every policy's
world (:mod:`.bounds`), in rooms by what they are, each importing only those below it:

* :mod:`.rounds`: the round world both exact models read (grid, floors, starts, values);
* :mod:`.pyomo_model`: the Pyomo model; :mod:`.exact`: solving it (or the matrix model);
* :mod:`.exact_matrix`: the matrix model for HiGHS, with its columns (:mod:`.matrix_layout`),
  one function per row family (:mod:`.matrix_rows`), the built model (:mod:`.matrix_model`),
  compact schedules (:mod:`.matrix_compact`) and the root pass (:mod:`.matrix_root`);
* :mod:`.job_limits`: what each job can do at best; :mod:`.interval_lp`: the interval LP;
  :mod:`.bounds`: every certified bound on them.
"""
