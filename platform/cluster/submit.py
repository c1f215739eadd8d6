"""``skipview submit``: run any skipview command on a Ray cluster as a Ray job, with this checkout's code.

How the code gets there (measured on Ray 2.60): ``--working-dir`` alone leaves ``skipview`` unimportable (the
package maps ``models/`` and ``platform/`` to other import names); a wheel in ``py_modules`` is cached by file
name, so an unchanged version number runs stale code; a ``pip`` runtime env cloned a 6 GB environment and still
ran stale code. What works: a ``py_modules`` *directory* ``skipview/{models,platform}`` staged from the sources.
Ray names the uploaded package by a hash of its contents, so every code change is a new package and an
unchanged one is uploaded once (~12 s per job here).

Token authentication: the job client sends the token Ray finds in ``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or
``~/.ray/auth_token``, whether or not ``RAY_AUTH_MODE=token`` is set (``send_token``); a cluster with auth on refuses
a client without it ("Missing authentication token") or with another one ("Invalid authentication token").
"""

from __future__ import annotations

import logging
import shlex
import tempfile
import time
from pathlib import Path

from ray._private.authentication import authentication_token_setup
from ray.job_submission import JobSubmissionClient

from skipview.platform.cluster.package import stage_package
from skipview.platform.tracking.lineage import git_commit

TERMINAL = {"SUCCEEDED", "FAILED", "STOPPED"}
AGENT_WAIT_S = 300          # how long a job waits for the job agent of a head that is still starting


def entrypoint(command: list[str]) -> str:
    if not command:
        raise ValueError("nothing to submit: give a skipview command after --, e.g. -- train --objective gen ...")
    if command[0] == "skipview":
        command = command[1:]
    return shlex.join(["python", "-m", "skipview.platform.cli", *command])


def send_token() -> None:
    """Make Ray's job client send the token it can find. It sends one only in ``RAY_AUTH_MODE=token``, which
    ``ray.init`` turns on by itself when a token exists but the job client (and ``ray job submit``) does not: a token
    in ``~/.ray/auth_token`` was never sent, and a wrong ``RAY_AUTH_TOKEN`` was reported as "Missing". This is the
    step ``ray.init`` takes (``ray/_private/worker.py``); an explicit ``RAY_AUTH_MODE`` is left as it is."""
    # its "Token authentication is enabled for this Ray cluster" warning is about starting a cluster, not a client
    setup_log = logging.getLogger(authentication_token_setup.__name__)
    level = setup_log.level
    setup_log.setLevel(logging.ERROR)
    try:
        authentication_token_setup.maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    finally:
        setup_log.setLevel(level)


def submit(command: list[str], *, address: str | None, env: dict[str, str] | None = None,
           wait: bool = True, poll_s: float = 2.0, echo=print) -> tuple[str, str]:
    """Submit ``command`` (skipview arguments); with ``wait`` stream its logs and return its final status."""
    send_token()
    client = JobSubmissionClient(address)
    with tempfile.TemporaryDirectory() as scratch:
        package = stage_package(Path(scratch))
        runtime_env = {"py_modules": [str(package)],
                       "env_vars": {"SKIPVIEW_GIT_COMMIT": git_commit(), **(env or {})}}
        deadline = time.monotonic() + AGENT_WAIT_S
        while True:
            try:
                job_id = client.submit_job(entrypoint=entrypoint(command), runtime_env=runtime_env)
                break
            except RuntimeError as error:
                # a head that has just started answers before its job agent is up ("please try again later")
                if "No available agent" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(poll_s)
    echo(f"submitted job {job_id}")
    if not wait:
        return job_id, "PENDING"
    printed = 0
    while True:
        status = str(client.get_job_status(job_id).value)
        logs = client.get_job_logs(job_id)
        if len(logs) > printed:
            echo(logs[printed:].rstrip("\n"))
            printed = len(logs)
        if status in TERMINAL:
            echo(f"job {job_id}: {status}")
            return job_id, status
        time.sleep(poll_s)
