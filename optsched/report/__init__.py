"""Reporting: tables, plots and sweep stores, shared by the CLI and notebooks.

Models never draw and never write sweep files; this layer does. Plots take ``ax=`` (a Matplotlib
Axes to draw on; a new Figure is made when omitted), return the Figure, and never change the
global Matplotlib backend.
"""

from optsched.runs.store import RunStore, run_key

__all__ = ["RunStore", "run_key"]
