"""Trained models in other tools' formats: ``skipview export``."""
