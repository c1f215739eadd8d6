"""Matrices of the shipped catalogue for the tests: Table 6 whole (its rows, its claims, every column)."""

from __future__ import annotations

from pathlib import Path

from skipview.platform.studies.matrix import Define, Matrix, load_catalogue, pick

CATALOGUE = Path(__file__).resolve().parents[1] / "studies" / "catalogue.yaml"
TABLE6_ROWS = ["gen-invertible", "gen-no-invertible", "disc-fg", "disc-ff", "disc-gg", "disc-f", "disc-g",
               "disc-f+disc-g", "disc-ff+disc-gg", "skipthought", "fasttext-avg", "fasttext-wr", "fasttext-sif",
               "fasttext-usif"]


def table6() -> Matrix:
    catalogue = load_catalogue(CATALOGUE)
    return pick(catalogue, Define(), TABLE6_ROWS, ["table6"], [c.name for c in catalogue.columns])
