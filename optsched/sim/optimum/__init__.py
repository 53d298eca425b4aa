"""How far any schedule is from the best one.

The exact round-world model (:mod:`.exact`, as matrices in :mod:`.exact_matrix`) and the certified
bounds valid for every policy's world (:mod:`.bounds`).
"""
