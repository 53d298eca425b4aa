"""Runs: the run store and the sweep drivers.

Results of long runs are written as they finish, so an interruption loses nothing. Nothing in a
model package imports this one.
"""
