"""The ``skipview`` command. Each area of the platform registers its own sub-commands here.

Heavy imports (torch, ray, mlflow) happen inside the commands, so ``skipview --help`` answers at once.
"""

from __future__ import annotations

import typer

from skipview.platform.cluster import cli as cluster_cli
from skipview.platform.data import cli as data_cli
from skipview.platform.evaluation import cli as evaluation_cli
from skipview.platform.training import cli as training_cli
from skipview.platform.tuning import cli as tuning_cli

app = typer.Typer(
    name="skipview",
    help="Train and evaluate skip-thought-family sentence encoders (skip-thought, multi-view f/g) "
         "with Ray Train/Tune, MLflow and DVC.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
app.add_typer(data_cli.app, name="data")
evaluation_cli.register(app)
app.command("train")(training_cli.train)
app.command("submit", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
    cluster_cli.submit)
app.command("tune")(tuning_cli.tune)
app.command("ablation")(tuning_cli.ablation)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
