"""Shared Hypothesis strategies and builders, one module per family."""
