"""Scheduling policies of the goodput world."""
