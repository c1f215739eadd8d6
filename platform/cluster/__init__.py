"""Submitting skipview commands to a Ray cluster as jobs."""
