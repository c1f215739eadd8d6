"""Distributed training on Ray Train (V2): the per-worker loop, its checkpoints, and the driver that runs it."""
