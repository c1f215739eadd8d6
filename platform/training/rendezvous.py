"""The DDP process group meets on its node's address, not on every interface of the machine.

Ray Train's ``TorchConfig`` has rank 0 pick a free port and every rank call ``init_process_group("env://")``, where
torch's rank 0 starts the rendezvous store (``TCPStore``) that the others join. Torch's store server binds every
interface (``::``, else ``0.0.0.0``; torch 2.13 has no option for its address), so even a local run whose every Ray
process listens on 127.0.0.1 only (``driver.LOOPBACK_ONLY``) had one port open to the network. The server can be
handed a socket already bound and listening (``master_listen_fd``): here rank 0 binds one to its Ray node's address
(127.0.0.1 for a local Ray, the node's own address on a cluster), serves the store on it, and every rank, rank 0
included, joins it as a client. Gloo's own connections between the ranks go over the interface of that address.

``NodeAddressTorchConfig`` is ``TorchConfig`` with this start; Ray calls its backend's ``on_start`` once per worker
group (again after a restart, in the new workers).
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import psutil
import ray
import torch.distributed as dist
from ray.train.torch.config import TorchConfig, _set_torch_distributed_env_vars, _TorchBackend

# rank 0's store server: it lives as long as the worker process (Ray restarts a failed group in new processes)
_server: list[dist.TCPStore] = []


class NodeAddressTorchConfig(TorchConfig):
    @property
    def backend_cls(self):
        return _NodeAddressBackend


class _NodeAddressBackend(_TorchBackend):
    def on_start(self, worker_group, backend_config: TorchConfig) -> None:
        address, port = worker_group.execute_single(0, serve_store, timeout_s=backend_config.timeout_s)
        worker_group.execute(_set_torch_distributed_env_vars)       # LOCAL_RANK, RANK, ... as Ray's start sets
        world_size = len(worker_group)
        ray.get([worker_group.execute_single_async(rank, join_process_group, backend=backend_config.backend,
                                                   address=address, port=port, world_rank=rank,
                                                   world_size=world_size,
                                                   timeout_s=backend_config.timeout_s)
                 for rank in range(world_size)])


def serve_store(timeout_s: float) -> tuple[str, int]:
    """Start the rendezvous store on this worker's Ray node address and a free port; that address and port."""
    address = ray.util.get_node_ip_address()
    listener = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((address, 0))
    listener.listen()
    port = listener.getsockname()[1]
    # the store takes the socket over (detach: Python must not close it when the object goes)
    _server.append(dist.TCPStore(address, port, is_master=True, master_listen_fd=listener.detach(),
                                 wait_for_workers=False, timeout=timedelta(seconds=timeout_s)))
    return address, port


def join_process_group(*, backend: str, address: str, port: int, world_rank: int, world_size: int,
                       timeout_s: float) -> None:
    interface = interface_of(address)
    if backend == "gloo" and interface and "GLOO_SOCKET_IFNAME" not in os.environ:     # the user's choice wins
        os.environ["GLOO_SOCKET_IFNAME"] = interface
    store = dist.TCPStore(address, port, world_size, is_master=False, timeout=timedelta(seconds=timeout_s))
    dist.init_process_group(backend=backend, store=store, rank=world_rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout_s))


def interface_of(address: str) -> str | None:
    """The name of the network interface that carries ``address`` (``lo`` for 127.0.0.1 on Linux); None where no
    interface has it (an address translated on its way in), and gloo keeps its own choice."""
    for name, addresses in psutil.net_if_addrs().items():
        if any(entry.address.split("%")[0] == address for entry in addresses):
            return name
    return None
