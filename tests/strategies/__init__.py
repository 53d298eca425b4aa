"""Hypothesis strategies shared by the test modules, one module per family."""
