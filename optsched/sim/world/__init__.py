"""The simulated world: jobs, the cluster, GPU rates and what shapes them.

Jobs and the world (:mod:`.jobs`), its file form (:mod:`.file`), the cluster (:mod:`.cluster`),
rates (:mod:`.throughputs`, :mod:`.sources`, :mod:`.elasticflow_profiles`), batch-size schedules
(:mod:`.batch_schedule`), colocation (:mod:`.colocation`), generators (:mod:`.generate`) and offered
load (:mod:`.load`).
"""
