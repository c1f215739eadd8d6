"""The token a local Ray cluster authenticates with, created private (0600) before Ray would create it.

Ray 2.60 turns token authentication on for a new local cluster and, when it finds no token, writes one to
``~/.ray/auth_token`` with the default umask: readable by every user of the machine until someone tightens it.
It is a credential (whoever holds it can run code on the cluster), so it is created here first, mode 0600 from
the moment the file exists, with the same 256 bits of randomness Ray would use. Ray then loads it as its own.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

TOKEN_SOURCES = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def token_path() -> Path:
    return Path.home() / ".ray" / "auth_token"


def ensure_private_token() -> Path | None:
    """Create ``~/.ray/auth_token`` (0600, in a 0700 folder) unless the token comes from elsewhere or exists.
    Returns the file created, or None."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled" or any(os.environ.get(v) for v in TOKEN_SOURCES):
        return None
    path = token_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        # O_EXCL: a token written meanwhile by another process is kept, never overwritten
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return None
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    return path
