"""The ``skipview`` command. Each area of the platform registers its own sub-commands here.

Imports go at the top of their module, except where deferring one keeps a command's start fast. The modules
``skipview --help`` loads (this one, each area's ``cli.py``, ``errors.py``, ``files.py``) import inside a command
whatever would add to every start: torch, numpy, pydantic, yaml, tqdm and the modules that bring them, even the data
readers (gzip, hashlib, ctypes: 10 ms of a 200 ms start). Ray, MLflow and scikit-learn (a CPU second or more each)
are imported in the function that uses them wherever a command loads the module before it needs them: the
training driver, the tracking store, the study, ablation and search modules (``skipview study index`` never
starts them; ``skipview train`` checks its inputs first). ``tests/test_packaging.py`` checks both. And matplotlib
is imported where a chart is drawn, which picks its Agg backend: importing a module must not switch its
importer's backend. No import is deferred to break a cycle: there is none.

Stops: every command stops on SIGTERM and SIGINT (Ctrl-C) as ``platform/stopping.py`` describes, exiting 143 or 130
with one line that says what was kept and the command that resumes.

Errors: a usage error (a bad option, a path that does not exist) and a user error (``platform/errors.py``) print
one line, ``error: ...``, and exit non-zero (2 for usage, 1 otherwise); ``skipview --debug COMMAND ...`` prints the
traceback instead. Other exceptions are bugs and always keep their traceback.
"""

from __future__ import annotations

import os
import sys

from skipview.platform import stopping

# This process is the command (`skipview ...`, `python -m skipview.platform.cli ...`), not a program importing it:
# a signal during the imports below, a second or more on a busy machine, ends it at once and says so
if __name__ == "__main__" or os.path.basename(sys.argv[0]) == "skipview":
    stopping.stop_at_once(["skipview", *sys.argv[1:]])

import shutil  # noqa: E402

import typer  # noqa: E402
import typer.rich_utils  # noqa: E402

from skipview.platform import errors  # noqa: E402
from skipview.platform.cluster import cli as cluster_cli
from skipview.platform.data import cli as data_cli
from skipview.platform.errors import DEBUG_HINT, one_line, user_error_types
from skipview.platform.evaluation import cli as evaluation_cli
from skipview.platform.export import cli as export_cli
from skipview.platform.training import cli as training_cli
from skipview.platform.studies import cli as studies_cli
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
app.command("heldout")(training_cli.heldout)
app.command("submit", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
    cluster_cli.submit)
app.command("tune")(tuning_cli.tune)
app.add_typer(studies_cli.app, name="study")
app.add_typer(export_cli.app, name="export")

# Help is sized to the terminal, 100 columns where there is none (a pipe, a log). Rich's boxed table needs 100: at 80
# the option names leave 18 columns for the help, and rich cuts a longer word ("params.yaml:trai…") and even an
# option's own name ("--wait-for-worke…"). Narrower, help is click's plain list, which wraps and never cuts.
HELP_MIN_WIDTH = 100


def help_width() -> int:
    """The width help is drawn at: an explicit TERMINAL_WIDTH (typer's) or COLUMNS as given, else the terminal's,
    at least ``HELP_MIN_WIDTH``."""
    for variable in ("TERMINAL_WIDTH", "COLUMNS"):
        if os.environ.get(variable, "").isdigit():
            return int(os.environ[variable])
    return max(shutil.get_terminal_size().columns, HELP_MIN_WIDTH)


@app.callback()
def options(debug: bool = typer.Option(False, "--debug", help="on an error, print the full traceback (anywhere "
                                                              "on the command line)")) -> None:
    """``run`` has already taken --debug out of the command line; the option is declared for --help."""


def run(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: this process's) and return its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug anywhere before a "--" (after it, the words belong to the command `submit` ships), not only before
    # the subcommand as click would have it: it is what one appends to a failed command line
    end = argv.index("--") if "--" in argv else len(argv)
    errors.debug = "--debug" in argv[:end]
    argv = [word for i, word in enumerate(argv) if i >= end or word != "--debug"]
    typer.rich_utils.MAX_WIDTH = width = help_width()
    app.rich_markup_mode = "rich" if width >= HELP_MIN_WIDTH else None       # None: click's plain help
    try:
        with stopping.handling_signals():
            result = app(args=argv, prog_name="skipview", standalone_mode=False)
    except stopping.Stopped as stop:
        typer.echo(stop.line(["skipview", *argv]), err=True)
        return stop.exit_status
    except typer.TyperException as error:
        # typer (>= 0.26) raises its own copy of click's exceptions, not click's; TyperException is their public
        # base. A group called without a subcommand (`skipview`, `skipview data`) "fails" with its help page: told
        # apart by class name, as typer's own error printer does (typer.rich_utils.rich_format_error)
        if type(error).__name__ == "NoArgsIsHelpError":
            typer.echo(error.format_message())
            return error.exit_code
        command = error.ctx.command_path if getattr(error, "ctx", None) is not None else None
        where = f"{command}: " if command else ""
        # a usage error (click's UsageError and its subclasses, e.g. typer.BadParameter) is the one that exits 2
        hint = f" (see {command} --help)" if command and error.exit_code == 2 else ""
        typer.echo(f"error: {where}{' '.join(error.format_message().split())}{hint}", err=True)
        return error.exit_code
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 130
    except Exception as error:
        if errors.debug or not isinstance(error, user_error_types()):
            raise
        typer.echo(f"error: {one_line(error)} {DEBUG_HINT}", err=True)
        return 1
    return result if isinstance(result, int) else 0


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
