"""``skipview data ...``: corpus preparation and word vectors."""

import typer

app = typer.Typer(help="Prepare corpora and word vectors.", no_args_is_help=True)
