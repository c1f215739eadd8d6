"""How a failed command reaches its user: one line naming what is wrong and where, and a non-zero exit.

A mistake in a command line, a settings file, a path or a key is the user's to fix, and a traceback only hides
the one line that says how. These errors are the ones this code raises for such mistakes (and the ones the
standard library and pydantic raise for a missing file or a bad value); anything else is a bug or a failure of
the machinery and keeps its traceback. ``skipview --debug ...`` shows the traceback of every error.
"""

from __future__ import annotations

DEBUG_HINT = "(skipview --debug ... prints the traceback)"
# --debug on the command line (set by platform/cli.py): tracebacks, and Ray's and the workers' logs on the console
debug = False


# The project's own user-facing failures live here, where every command's error handling finds them without
# importing the modules that raise them (which would make this module, imported by every CLI, depend on them).
class FetchError(RuntimeError):
    """A corpus or data set that cannot be fetched or does not match its checksums."""


class CorruptCheckpoint(RuntimeError):
    """A checkpoint file is missing or cannot be loaded (truncated, damaged, or not a plain-data checkpoint)."""


class Diverged(RuntimeError):
    """Training stopped at a non-finite loss or gradient norm."""


class ClusterTooSmall(RuntimeError):
    """The cluster did not give the worker group its resources in the time the run waits for them."""


class StorageFull(RuntimeError):
    """An output does not fit on its file system (no space left, or over a quota or file-size limit)."""


def user_error_types() -> tuple[type[BaseException], ...]:
    # yaml is imported here, at the moment of an error: `skipview --help` must not pay for it
    import yaml

    # ValueError covers pydantic's ValidationError and this project's settings, matrix and space errors
    # ConnectionError: a cluster, dashboard or tracking server that does not answer at the address given
    return (ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError, FileExistsError, PermissionError,
            ConnectionError, yaml.YAMLError, FetchError, CorruptCheckpoint, Diverged, StorageFull,
            ClusterTooSmall)


def _message(error: BaseException) -> str:
    """The error as one line: pydantic's errors as ``key: problem (got value)``, an OS error as ``path: reason``."""
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        parts = []
        for item in error.errors():
            key = ".".join(str(part) for part in item["loc"]) or "settings"
            got = item.get("input")
            shown = "" if isinstance(got, dict) or item["type"] == "missing" else f" (got {got!r})"
            parts.append(f"{key}: {item['msg']}{shown}")
        return f"invalid {error.title} settings: " + "; ".join(parts)
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        return f"{error.filename}: {error.strerror.lower()}"
    if isinstance(error, KeyError) and error.args:          # str(KeyError) is the repr of its message
        return " ".join(str(error.args[0]).split())
    lines = [" ".join(line.split()) for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines) or type(error).__name__        # a multi-line message (one problem a line) as one line


def one_line(error: BaseException) -> str:
    """The error as one line (``_message``), then its notes (e.g. where the run's full log is)."""
    return "; ".join([_message(error), *getattr(error, "__notes__", [])])
