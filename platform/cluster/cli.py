"""``skipview submit``."""

from __future__ import annotations

from typing import Optional

import typer

from skipview.platform.errors import one_line


def submit(
    ctx: typer.Context,
    address: Optional[str] = typer.Option(None, envvar="RAY_ADDRESS",
                                          help="Ray dashboard address, e.g. http://head:8265"),
    env: list[str] = typer.Option([], "--env", help="NAME=VALUE environment variable for the job"),
    wait: bool = typer.Option(True, help="stream the job's logs and exit with its status"),
) -> None:
    """Run a skipview command on a Ray cluster: skipview submit --address URL -- train --objective gen ...

    The package is shipped as a content-hashed py_modules directory (always the code of this checkout). The
    cluster's token is sent from RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token.
    """
    from ray.exceptions import AuthenticationError

    from skipview.platform.cluster.submit import submit as submit_job

    variables = dict(pair.split("=", 1) for pair in env if "=" in pair)
    if len(variables) != len(env):
        raise typer.BadParameter("--env expects NAME=VALUE")
    try:
        _, status = submit_job(list(ctx.args), address=address, env=variables, wait=wait, echo=typer.echo)
    except ValueError as error:
        raise typer.BadParameter(one_line(error)) from error
    except AuthenticationError as error:                  # no token, or the wrong one: say so, no traceback
        typer.echo(f"error: {address or 'the cluster'} refused this client: {' '.join(error.message.split())}",
                   err=True)
        raise typer.Exit(1) from error
    if wait and status != "SUCCEEDED":
        raise typer.Exit(1)
