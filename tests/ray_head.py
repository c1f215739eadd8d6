"""A real Ray head of one CPU started by `ray start --head`, as a user starts a cluster: its own ports (other Rays
may run on this machine), the dashboard on 127.0.0.1, stopped through its own process group (never `ray stop`,
which stops every Ray of the machine). `ray start` also records its address as the machine's current cluster (Ray's
`ray_current_cluster` file, which a bare `ray.init()` then joins) and only `ray stop` forgets it: the fixture forgets
its own, or the machine keeps naming a dead head (`<this machine's address>:<a test head's GCS port>`) to every
later bare `ray.init()`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

PYTHON_BIN = str(Path(sys.executable).parent)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Head:
    dashboard: str          # http://127.0.0.1:PORT, what job clients use
    gcs: str                # 127.0.0.1:PORT, what ray.init(address=...) uses


@contextmanager
def ray_head(env: dict[str, str], *, cpus: int = 1, temp_dir: Path | None = None) -> Iterator[Head]:
    """``temp_dir``: the head's own temporary folder (Ray's ``--temp-dir``; default /tmp/ray, shared with every Ray of
    the machine). Keep its path short: Ray's sockets under it must fit in 107 bytes."""
    dashboard, gcs = free_port(), free_port()
    ports = {"--port": gcs, "--dashboard-port": dashboard, "--ray-client-server-port": free_port(),
             "--dashboard-agent-listen-port": free_port(), "--metrics-export-port": free_port(),
             "--runtime-env-agent-port": free_port(), "--node-manager-port": free_port(),
             "--object-manager-port": free_port(), "--dashboard-agent-grpc-port": free_port()}
    command = [str(Path(PYTHON_BIN) / "ray"), "start", "--head", "--block", f"--num-cpus={cpus}",
               "--include-dashboard=true", "--dashboard-host=127.0.0.1",
               "--disable-usage-stats", *[f"{flag}={port}" for flag, port in ports.items()],
               *([f"--temp-dir={temp_dir}"] if temp_dir is not None else [])]
    head = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", dashboard)) == 0:
                    break
            if head.poll() is not None:
                pytest.fail(f"ray start exited with {head.returncode}")
            time.sleep(1)
        else:
            pytest.fail("the Ray head did not open its dashboard in 180 s")
        time.sleep(3)
        yield Head(f"http://127.0.0.1:{dashboard}", f"127.0.0.1:{gcs}")
    finally:
        os.killpg(head.pid, signal.SIGTERM)        # --block: the head stops its raylet/GCS on SIGTERM
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        forget_address(gcs, temp_dir)


def forget_address(gcs_port: int, temp_dir: Path | None) -> None:
    """Remove Ray's record of the current cluster if it still names this head (another head may have replaced it)."""
    from ray._common.utils import get_ray_address_file

    record = Path(get_ray_address_file(str(temp_dir) if temp_dir is not None else None))
    try:
        if record.read_text().strip().endswith(f":{gcs_port}"):
            record.unlink()
    except FileNotFoundError:
        pass


def driver_error(stderr: str) -> str:
    """The one `error:` line a failed command printed, checked to be alone and without a traceback of skipview's.
    Ray's processes may log to the driver's stderr after it, their own tracebacks prefixed by the actor's name."""
    lines = stderr.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, stderr[-3000:]
    assert not [line for line in lines if line.startswith("Traceback")], stderr[-3000:]
    return errors[0]
