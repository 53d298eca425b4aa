"""What a run leaves and what is read from it.

The record (:mod:`.record`), the independent validator (:mod:`.validate`) and the metrics
(:mod:`.metrics`).
"""
