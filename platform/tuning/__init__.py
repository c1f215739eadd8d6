"""Hyperparameter search with Ray Tune: the search (search.py), its typed spaces (space.py) and ``skipview tune``."""
