"""What the cluster test files share within a test process: one `mlflow server`. Its start costs about 12 CPU s (and
half a minute of a loaded 2-core machine's wall time); each file that needs a server records into experiments of its
own names, so one server serves every cluster file that lands in the same test process."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tracking_server(tmp_path_factory) -> str:
    """`mlflow server` on 127.0.0.1 with its own backend store and artifact destination; yields its URL."""
    from skipview.platform.studies.screenshot import mlflow_server

    root = tmp_path_factory.mktemp("mlflow-server")
    # its imports alone take minutes on a loaded 2-core machine
    with mlflow_server(f"sqlite:///{root}/mlflow.db", timeout_s=900, artifacts=root / "artifacts") as uri:
        yield uri
