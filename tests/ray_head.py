"""A real Ray head of one CPU started by `ray start --head`, as a user starts a cluster: its own ports (other Rays
may run on this machine), the dashboard on 127.0.0.1, killed through its own process group (never `ray stop`,
which stops every Ray of the machine). `ray start` also records its address as the machine's current cluster (Ray's
`ray_current_cluster` file, which a bare `ray.init()` then joins) and only `ray stop` forgets it: the fixture forgets
its own, or the machine keeps naming a dead head (`<this machine's address>:<a test head's GCS port>`) to every
later bare `ray.init()`."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
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


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def ray_head(env: dict[str, str], *, cpus: int = 1, temp_dir: Path | None = None,
             timeout_s: float = 300) -> Iterator[Head]:
    """``temp_dir``: the head's temporary folder (Ray's ``--temp-dir``; default: a new one of its own, removed after
    it; never /tmp/ray, which every Ray of the machine shares). Keep its path short: Ray's sockets under it must fit
    in 107 bytes.

    The head is ready when its dashboard and its dashboard agent both listen: the agent is what takes a submitted
    job. ``ray start``'s output is kept in a file and put into the failure when the head does not come up."""
    own_temp_dir = temp_dir is None
    if own_temp_dir:
        temp_dir = Path(tempfile.mkdtemp(prefix="rh", dir="/tmp"))
    dashboard, gcs, agent = free_port(), free_port(), free_port()
    ports = {"--port": gcs, "--dashboard-port": dashboard, "--ray-client-server-port": free_port(),
             "--dashboard-agent-listen-port": agent, "--metrics-export-port": free_port(),
             "--runtime-env-agent-port": free_port(), "--node-manager-port": free_port(),
             "--object-manager-port": free_port(), "--dashboard-agent-grpc-port": free_port()}
    command = [str(Path(PYTHON_BIN) / "ray"), "start", "--head", "--block", f"--num-cpus={cpus}",
               "--include-dashboard=true", "--dashboard-host=127.0.0.1",
               "--disable-usage-stats", f"--temp-dir={temp_dir}", *[f"{flag}={port}" for flag, port in ports.items()]]
    output = tempfile.NamedTemporaryFile("w+", prefix="ray-start-", suffix=".log")
    head = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)

    def failure(what: str) -> str:
        output.seek(0)
        return f"{what}; `ray start` printed:\n{output.read()[-6000:]}"

    try:
        deadline = time.monotonic() + timeout_s
        while not (port_open(dashboard) and port_open(agent)):
            if head.poll() is not None:
                pytest.fail(failure(f"ray start exited with {head.returncode}"))
            if time.monotonic() > deadline:
                pytest.fail(failure(f"the Ray head did not open its dashboard ({dashboard}) and its agent "
                                    f"({agent}) in {timeout_s:.0f} s"))
            time.sleep(0.2)
        yield Head(f"http://127.0.0.1:{dashboard}", f"127.0.0.1:{gcs}")
    finally:
        stop_group(head)
        output.close()
        forget_address(gcs, temp_dir)
        if own_temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)


def stop_group(process: subprocess.Popen) -> None:
    """SIGKILL to the head's process group: every process of the head (GCS, raylet, dashboard, agents, workers) is in
    it, and nothing of a test head needs a graceful end. SIGTERM, which ``--block`` answers by stopping its processes
    one by one, took 34-60 s on a 2-core AMD EPYC. A group already gone is no error: the clean-up must never hide the
    failure that brought it here."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def forget_address(gcs_port: int, temp_dir: Path) -> None:
    """Remove Ray's record of the current cluster if it still names this head (another head may have replaced it)."""
    from ray._common.utils import get_ray_address_file

    record = Path(get_ray_address_file(str(temp_dir)))
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
