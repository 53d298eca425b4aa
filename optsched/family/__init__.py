"""Families: the declared protocol every problem family follows."""
