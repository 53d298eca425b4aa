"""Harmony: learned placement of parameter-server jobs by deep reinforcement learning."""
