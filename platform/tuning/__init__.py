"""Hyperparameter search (Ray Tune) and the ablation study: search spaces, the ablation matrix, reports."""
