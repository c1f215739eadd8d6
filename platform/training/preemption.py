"""A run told to stop (SIGTERM or Ctrl-C at its driver) writes a checkpoint at its next step and ends, so a stop costs
at most one step, not up to ``checkpoint_every`` steps.

The signal reaches the driver only (``platform/stopping.py``); its workers may be on other nodes. The driver holds a
``StopRequest`` actor, named in the loop's config, that its workers wait on from a thread of their own
(``Preemption``): one pending actor call per worker, nothing per step. The ranks must stop at the same step, or DDP's
next all-reduce would wait for ever on a rank that left: every step each rank starts an all-reduce (max) of its own
flag on a gloo group of its own, without waiting, and reads the one it started a step earlier, so the decision
costs no wait and comes one step late, the same on every rank. The actor also counts the runs that are still
training, so that a driver with several runs (a search's trials) knows when all of them have written their
checkpoint.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time

import ray
import torch
import torch.distributed as dist

log = logging.getLogger(__name__)

STOPPED_METRIC = "stopped"             # reported with the stop's checkpoint: the run did not finish
# how long the driver waits, after the first signal, for its runs to write their checkpoint and end before it stops
# without them (a second signal does so at once); a step and a checkpoint at the paper's size take seconds
GRACE_ENV = "SKIPVIEW_STOP_GRACE_S"
DEFAULT_GRACE_S = 120.0


@ray.remote(num_cpus=0)
class StopRequest:
    """The driver's stop, as its workers see it (an async actor: ``wait`` calls hold no thread)."""

    def __init__(self):
        self.signum: int | None = None
        self.requested = asyncio.Event()
        self.training: set[str] = set()

    async def wait(self) -> int:
        await self.requested.wait()
        return self.signum

    async def request(self, signum: int) -> None:
        self.signum = signum
        self.requested.set()

    async def started(self, run: str) -> None:
        self.training.add(run)

    async def ended(self, run: str) -> None:
        self.training.discard(run)

    async def still_training(self) -> list[str]:
        return sorted(self.training)


class DriverStop:
    """The driver's side: the actor, and what the first signal does with it (``on_signal``)."""

    def __init__(self):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.name = f"skipview-stop-{socket.gethostname()}-{os.getpid()}"
        # on the driver's node, which lives as long as the driver: a worker node may be taken away
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
        self.actor = StopRequest.options(name=self.name, scheduling_strategy=here).remote()

    def on_signal(self, signum: int, then=None) -> None:
        """Ask every run to stop, wait up to the grace for them to end, then call ``then`` (e.g. end a search);
        past the grace, the signal again, which stops this process at once (``stopping``)."""
        ray.get(self.actor.request.remote(signum))
        grace = float(os.environ.get(GRACE_ENV, DEFAULT_GRACE_S))
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if not ray.get(self.actor.still_training.remote()):
                if then is not None:
                    then()
                return
        log.warning("the runs did not stop within %g s; stopping without them", grace)
        os.kill(os.getpid(), signum)

    def close(self) -> None:
        ray.kill(self.actor)


class Preemption:
    """A worker's side: ``agreed()``, called once a step by every rank, is True on every rank at the same step once
    the driver asked to stop."""

    def __init__(self, actor_name: str | None, run: str, rank: int, world_size: int):
        self.asked = threading.Event()
        self.run, self.rank = run, rank
        self.actor = ray.get_actor(actor_name) if actor_name else None
        if self.actor is not None:
            if rank == 0:
                ray.get(self.actor.started.remote(run))
            threading.Thread(target=self._wait, args=(self.actor.wait.remote(),), daemon=True,
                             name="stop-request").start()
        # a group of its own: these all-reduces run beside DDP's, which they must not be interleaved with
        self.group = dist.new_group(backend="gloo") if world_size > 1 and dist.is_initialized() else None
        self.pending: tuple[torch.Tensor, dist.Work] | None = None

    def _wait(self, request) -> None:
        try:
            ray.get(request)
        except ray.exceptions.RayError:     # the driver is gone, and Ray ends this run with it
            return
        self.asked.set()

    def agreed(self) -> bool:
        if self.group is None:
            return self.asked.is_set()
        stop = False
        if self.pending is not None:
            flag, work = self.pending
            work.wait()
            stop = bool(flag.item())
        self.pending = None
        if not stop:
            flag = torch.tensor([int(self.asked.is_set())], dtype=torch.int32)
            self.pending = (flag, dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.group, async_op=True))
        return stop

    def close(self) -> None:
        """The run ends (finished or stopped): the last all-reduce completes, and the driver hears of it."""
        if self.pending is not None:
            self.pending[1].wait()
            self.pending = None
        if self.actor is not None and self.rank == 0:
            ray.get(self.actor.ended.remote(self.run))
