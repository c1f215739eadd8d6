"""Where a path would vanish with Ray's temporary files.

Ray keeps everything of a session under its session folder (``<temp dir>/session_<time>_<pid>/``, /tmp/ray by
default): logs, sockets, and the runtime environments of jobs and actors in ``runtime_resources/``. A job submitted
with ``ray job submit --working-dir .`` runs in Ray's unpacked copy of that folder,
``session_*/runtime_resources/working_dir_files/_ray_pkg_<hash>/``, which Ray deletes when the package leaves its
cache or the session's temporary files are cleaned. So a relative ``./mlflow.db`` or ``--storage runs`` in such a job
writes the run's record and checkpoints where they disappear, and nothing says so.

The test is on the path, not on an environment variable: a job's entry point can ``cd`` elsewhere (then its relative
paths are safe) and a child process keeps the job's variables; what decides is whether the resolved path lies in a
session's ``runtime_resources`` (Ray 2.60: ``ray_constants.DEFAULT_RUNTIME_ENV_DIR_NAME`` under ``node.session_dir``).
"""

from __future__ import annotations

from pathlib import Path

RUNTIME_RESOURCES = "runtime_resources"
SESSION_PREFIX = "session_"


def ray_temporary_folder(path: str | Path) -> Path | None:
    """The Ray session folder whose runtime environments hold ``path`` (resolved), or None when it is elsewhere."""
    resolved = Path(path).expanduser().resolve()
    for folder in resolved.parents:
        if folder.name == RUNTIME_RESOURCES and folder.parent.name.startswith(SESSION_PREFIX):
            return folder.parent
    return None


def refuse_ray_temporary(path: str | Path, what: str, instead: str) -> None:
    """Raise ValueError, one line, when ``path`` (``what`` names it as the user gave it) lies in Ray's temporary
    files; ``instead`` says what to pass."""
    if ray_temporary_folder(path) is not None:
        raise ValueError(f"{what} resolves to {Path(path).expanduser().resolve()}, inside Ray's temporary files (a "
                         f"job's copy of its --working-dir), which Ray deletes with the run in it; {instead}")
