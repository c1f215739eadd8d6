"""A cluster simulated on this machine: two Ray nodes (one CPU each, their own scratch folders), checkpoints on an
S3-compatible object store (moto's server on 127.0.0.1) and MLflow behind a tracking server (`mlflow server`), the
way a cluster shares them. Nothing here may rely on one local disk: the storage is the object store, each node's
temporary folder is its own, and the model directory comes back to the driver through the object store.

`skipview train --workers 2` must place one worker on each node, survive a SIGKILL of one worker mid-run by
resuming from the checkpoint in the object store, and record one MLflow run on the server. That run is submitted as
a job (`skipview submit`), whose test examines the same run. The tests print what they saw (nodes, placements,
object-store keys, the kill and the resume): run them with `-s` to read that log.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from skipview.platform.tracking import store
from skipview.platform.training import run_folder

REPO = Path(__file__).resolve().parents[3]
TRAINING_TESTS = REPO / "tests" / "platform" / "training"
BUCKET = "skipview"
STEPS, CHECKPOINT_EVERY = 12, 4

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, what: str, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"{what} did not answer at {url} within {timeout:.0f} s")


@pytest.fixture(scope="module")
def env_patch():
    patch = pytest.MonkeyPatch()
    yield patch
    patch.undo()


@pytest.fixture(scope="module")
def object_store(env_patch):
    """moto's S3 server on 127.0.0.1; every process (the Ray nodes, their workers, the CLI) reaches it through the
    standard AWS variables, which pyarrow's S3 filesystem under Ray's storage layer reads."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for key, value in {"AWS_ACCESS_KEY_ID": "skipview-test", "AWS_SECRET_ACCESS_KEY": "skipview-test",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}.items():
        env_patch.setenv(key, value)
    client = boto3.client("s3", endpoint_url=endpoint)
    client.create_bucket(Bucket=BUCKET)
    yield client
    server.stop()


@pytest.fixture(scope="module")
def cluster(object_store, env_patch, tmp_path_factory):
    """Two Ray nodes with one CPU each and their own temporary folders (TMPDIR of their raylet and workers)."""
    from ray.cluster_utils import Cluster

    scratch = tmp_path_factory.mktemp("nodes")
    # the nodes' processes (and a submitted job's `python`) see this environment: the tiny test objective, the venv
    env_patch.setenv("PYTHONPATH", os.pathsep.join([str(TRAINING_TESTS), os.environ.get("PYTHONPATH", "")]))
    env_patch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env_patch.delenv("RAY_ADDRESS", raising=False)
    # the nodes' processes start in the scratch folder: a submitted job's driver runs in its raylet's folder and
    # writes its ./runs there, not into the checkout pytest runs in
    env_patch.chdir(scratch)
    nodes = {name: scratch / name for name in ("node_a", "node_b")}
    for folder in nodes.values():
        folder.mkdir()
    # Ray gives a starting raylet a fixed 30 s to register (ray/_private/node.py); on a loaded 2-core machine a
    # start can miss it, so a failed start is retried with a fresh cluster
    for attempt in range(3):
        dashboard = free_port()
        cluster = Cluster()
        try:
            # the head's dashboard takes `skipview submit`'s jobs through its agent's HTTP port, whose default (52365)
            # any other Ray on the machine may hold: then the agent runs without it and every submit is answered "No
            # available agent" (three failures of this test beside a training), so each node gets a free one
            cluster.add_node(num_cpus=1, resources={"node_a": 1}, env_vars={"TMPDIR": str(nodes["node_a"])},
                             include_dashboard=True, dashboard_host="127.0.0.1", dashboard_port=dashboard,
                             dashboard_agent_listen_port=free_port())
            cluster.add_node(num_cpus=1, resources={"node_b": 1}, env_vars={"TMPDIR": str(nodes["node_b"])},
                             dashboard_agent_listen_port=free_port())
            cluster.wait_for_nodes()
            break
        except Exception:
            cluster.shutdown()
            if attempt == 2:
                raise
    cluster.dashboard = f"http://127.0.0.1:{dashboard}"
    yield cluster, nodes
    cluster.shutdown()


def object_keys(client, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


@dataclass
class SubmittedRun:
    status: int                 # `skipview submit`'s exit status
    output: str                 # what it printed: the job's logs, then its final status
    seconds: float
    folder: Path                # the run's local files: its model, metrics, placements, the kill's marker


@pytest.fixture(scope="module")
def submitted_run(tracking_server, cluster, tmp_path_factory) -> SubmittedRun:
    """`skipview submit -- train --workers 2` on the two nodes, rank 1's worker SIGKILLed once mid-run: the one run
    that both the killed-worker test and the submission test examine (a Ray Train run costs ~30 CPU s before it
    trains; the claims of both hold of a training submitted as a job)."""
    from prepared_data import write_training_data

    ray_cluster, _ = cluster
    folder = tmp_path_factory.mktemp("submitted")
    corpus, wordvecs = write_training_data(folder / "data")
    (folder / "placements").mkdir()
    wait_for(f"{ray_cluster.dashboard}/api/version", "the head's dashboard")
    command = [sys.executable, "-m", "skipview.platform.cli", "submit", "--address", ray_cluster.dashboard,
               "--env", f"MLFLOW_TRACKING_URI={tracking_server}", "--",
               "train", "--objective", "tiny_objective:build",
               "--corpus", str(corpus), "--wordvecs", str(wordvecs), "--storage", f"s3://{BUCKET}/runs",
               "--name", "multinode", "--workers", "2", "--experiment", "multinode",
               "--output", str(folder / "model"), "--metrics", str(folder / "metrics.json"),
               "--set", f"max_steps={STEPS}", "--set", f"checkpoint_every={CHECKPOINT_EVERY}",
               "--set", "batch_size=8", "--set", "postprocessing_sentences=50",
               # forward call 7 of rank 1: after the step-4 checkpoint, once Ray has registered it
               "--set", "objective_settings.fail_at_call=7", "--set", "objective_settings.fail_rank=1",
               "--set", "objective_settings.failure=sigkill",
               "--set", f"objective_settings.marker={folder / 'killed-once'}",
               "--set", "objective_settings.registered_before_failing=1",
               "--set", f"objective_settings.placement_dir={folder / 'placements'}"]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    start = time.time()
    done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True, timeout=900)
    return SubmittedRun(done.returncode, done.stdout + done.stderr, time.time() - start, folder)


def test_two_node_training_survives_a_killed_worker_through_the_object_store(
        submitted_run, tracking_server, cluster, object_store):
    ray_cluster, node_scratch = cluster
    tracking_uri = tracking_server
    folder, output = submitted_run.folder, submitted_run.output
    placements, marker = folder / "placements", folder / "killed-once"
    assert submitted_run.status == 0, output[-4000:]
    log = re.search(r"Ray's and the workers' log: (\S+)", output)
    assert log, output[-4000:]
    output += Path(log[1]).read_text()          # the job's driver keeps it in its ./runs (s3 storage)

    from ray.util.state import list_nodes

    # through the head's state API, not ray.init: this test process may already be the driver of a local Ray
    alive = [n for n in list_nodes(address=ray_cluster.dashboard, detail=True) if n.state == "ALIVE"]
    node_of = {n.node_id: next(r for r in ("node_a", "node_b") if r in n.resources_total) for n in alive}
    # one file per worker process, oldest first: the first two are the original workers, the last two the restart
    records = [json.loads(p.read_text()) for p in sorted(placements.iterdir(), key=lambda p: p.stat().st_mtime_ns)]
    keys = object_keys(object_store, "runs/multinode/")
    resumed = re.findall(r"rank (\d) resumed at step (\d+) \(.*?\) from (\S+)", output)
    print(f"\n--- multi-node run ({submitted_run.seconds:.0f} s) ---")
    print("nodes:", {node_of[n.node_id]: n.node_ip for n in alive})
    for r in records:
        print(f"worker rank {r['rank']} pid {r['pid']} on {node_of[r['node_id']]} (scratch {r['scratch']})")
    print("killed:", f"rank 1 worker pid {marker.read_text()} (SIGKILL at forward call 7)" if marker.exists()
          else "nothing")
    print("resumed:", resumed)
    print("object store:", *[f"  s3://{BUCKET}/{k}" for k in keys], sep="\n")

    assert len(alive) == 2
    first, restarted = records[:2], records[2:]
    assert {r["rank"] for r in first} == {r["rank"] for r in restarted} == {0, 1}
    assert marker.exists() and len(restarted) == 2, "the worker was not killed and restarted"
    assert marker.read_text().isdigit(), marker.read_text()             # the killed worker's pid, not a timeout
    for group in (first, restarted):                         # one worker per node, before and after the kill
        assert {node_of[r["node_id"]] for r in group} == {"node_a", "node_b"}
        for r in group:
            assert r["scratch"] == str(node_scratch[node_of[r["node_id"]]])
    assert {rank for rank, _, _ in resumed} == {"0", "1"}
    assert {int(step) for _, step, _ in resumed} == {CHECKPOINT_EVERY}
    assert all(path.startswith(f"{BUCKET}/runs/multinode/checkpoint_") for _, _, path in resumed)
    assert "runs/multinode/checkpoint_manager_snapshot.json" in keys
    # files inside runs/multinode/checkpoint_*/ (the store also lists each folder itself, ending in "/", and the
    # run's checkpoint_manager_snapshot.json)
    parts = [k.split("/", 3) for k in keys]
    checkpoint_files = {p[3] for p in parts if len(p) == 4 and p[2].startswith("checkpoint_") and p[3]}
    assert {"state.pt", "rng-rank0.pt", "rng-rank1.pt", "model/config.json"} <= checkpoint_files

    record = json.loads((folder / "metrics.json").read_text())
    assert record["metrics"]["step"] == STEPS and record["checkpoint"].startswith(f"{BUCKET}/runs/multinode/")
    assert (folder / "model" / "config.json").is_file()
    client = store.client(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name("multinode").experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    steps = sorted(m.step for m in client.get_metric_history(runs[0].info.run_id, "loss"))
    assert steps == list(range(1, STEPS + 1))            # steps 5-6 were trained twice and logged once
    assert runs[0].data.tags["skipview.model_uri"]


def test_resume_finds_the_latest_run_on_object_storage(object_store, tmp_path, monkeypatch):
    from skipview.platform.training import driver

    for run in ("disc-c-20261101-100000", "disc-c-20261102-090000", "gen-c-20261201-000000"):
        object_store.put_object(Bucket=BUCKET, Key=f"resume/{run}/checkpoint_manager_snapshot.json", Body=b"{}")
    assert driver.latest_run_name(f"s3://{BUCKET}/resume", "disc-c-") == "disc-c-20261102-090000"
    assert driver.latest_run_name(f"s3://{BUCKET}/resume", "skipthought-c-") is None
    monkeypatch.chdir(tmp_path)              # a URI is no local folder: local outputs go to ./runs, not ./s3:
    assert driver.local_root(f"s3://{BUCKET}/runs") == tmp_path / "runs"


def test_tune_runs_its_trials_on_both_nodes(tracking_server, cluster, object_store, tmp_path):
    """Two concurrent trials of one worker (one CPU) each fill the two one-CPU nodes: one trial per node."""
    from prepared_data import write_toy_sts14, write_training_data

    from skipview.platform.training.loop import NODES_TAG
    from skipview.platform.tuning.search import PARENT_TAG

    ray_cluster, _ = cluster
    tracking_uri = tracking_server
    corpus, wordvecs = write_training_data(tmp_path / "data")
    senteval = write_toy_sts14(tmp_path / "senteval")
    (tmp_path / "space.yaml").write_text(
        "objective: disc\nspace:\n  objective:\n    hidden_size: 8\n  training:\n"
        "    optimizer.lr: {distribution: loguniform, low: 1.0e-3, high: 1.0e-2}\n")
    (tmp_path / "base.yaml").write_text("batch_size: 16\nmax_steps: 4\ncheckpoint_every: 2\n"
                                        "postprocessing_sentences: 50\n")
    command = [sys.executable, "-m", "skipview.platform.cli", "tune", "--space", str(tmp_path / "space.yaml"),
               "--config", str(tmp_path / "base.yaml"), "--corpus", str(corpus), "--wordvecs", str(wordvecs),
               "--senteval-dir", str(senteval), "--num-samples", "2", "--max-concurrent", "2",
               "--storage", f"s3://{BUCKET}/tune", "--name", "twonodes", "--experiment", "multinode-tune"]
    env = {**os.environ, "RAY_ADDRESS": ray_cluster.address, "MLFLOW_TRACKING_URI": tracking_uri}
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]

    client = store.client(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name("multinode-tune").experiment_id])
    trials = [r for r in runs if PARENT_TAG in r.data.tags]
    nodes = {r.info.run_name: r.data.tags[NODES_TAG] for r in trials}
    keys = object_keys(object_store, "tune/twonodes")
    print("\n--- tune on two nodes ---", *[f"trial {n}: node {node}" for n, node in nodes.items()],
          f"object store: {len(keys)} keys under s3://{BUCKET}/tune/twonodes*", sep="\n")
    assert len(trials) == 2 and len(set(nodes.values())) == 2, nodes
    assert any(k.endswith("/state.pt") for k in keys) and (tmp_path / "runs" / "twonodes" / "best_config.yaml").is_file()


def test_submit_runs_a_training_job_on_the_cluster(submitted_run, tracking_server, object_store):
    """`skipview submit` ships this checkout to the head's job server; the job trains across both nodes (the run
    of ``submitted_run``, which the killed-worker test examines too)."""
    output = submitted_run.output
    assert submitted_run.status == 0 and "SUCCEEDED" in output, output[-4000:]
    client = store.client(tracking_server)
    runs = client.search_runs([client.get_experiment_by_name("multinode").experiment_id])
    keys = object_keys(object_store, "runs/multinode/")
    print("\n--- submitted job ---", next(line for line in output.splitlines() if "submitted job" in line),
          f"MLflow run {runs[0].info.run_id} {runs[0].info.status}, worker nodes {runs[0].data.tags.get('skipview.worker_nodes')}",
          f"object store: {len(keys)} keys under s3://{BUCKET}/runs/multinode/", sep="\n")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert len(set(runs[0].data.tags["skipview.worker_nodes"].split())) == 2
    assert any(k.endswith("/model/config.json") for k in keys)


def registered_checkpoints(client, run_prefix: str) -> set[str]:
    """The checkpoint folders Ray's checkpoint snapshot of a run in the object store registers (none before it exists)."""
    try:
        text = client.get_object(Bucket=BUCKET, Key=f"{run_prefix}/{run_folder.SNAPSHOT}")["Body"].read().decode()
        return {name for name in run_folder.registered_names(text) if name.startswith("checkpoint_")}
    except (client.exceptions.NoSuchKey, ValueError):          # not written yet, or caught mid-rewrite
        return set()


def test_a_node_taken_away_mid_run_fails_in_one_line_and_the_run_resumes_when_it_is_back(
        tracking_server, cluster, object_store, tmp_path):
    """SIGTERM to the worker node's Ray processes (a node drained, a pod preempted) while a two-worker run trains:
    the one node left cannot hold both workers, so the run fails after --wait-for-workers in one line; with the node
    back, the same command resumes it from its last checkpoint in the object store. Prints the steps lost."""
    from prepared_data import write_training_data

    ray_cluster, node_scratch = cluster
    corpus, wordvecs = write_training_data(tmp_path / "data")
    calls_file = tmp_path / "calls"
    command = [sys.executable, "-m", "skipview.platform.cli", "train", "--objective", "tiny_objective:build",
               "--corpus", str(corpus), "--wordvecs", str(wordvecs), "--storage", f"s3://{BUCKET}/runs",
               "--name", "node-lost", "--workers", "2", "--experiment", "node-lost", "--wait-for-workers", "5",
               "--set", "max_steps=60", "--set", "checkpoint_every=10", "--set", "batch_size=8",
               "--set", "postprocessing_sentences=50", "--set", "objective_settings.step_s=0.2",
               "--set", f"objective_settings.calls_file={calls_file}"]
    env = {**os.environ, "RAY_ADDRESS": ray_cluster.address, "MLFLOW_TRACKING_URI": tracking_server}
    first = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    # Past step 25 is not enough: the step-20 checkpoint counts once Ray's controller has registered it in the
    # snapshot it keeps in the object store (on a loaded machine that lags the workers by several steps).
    deadline, registered, step = time.time() + 600, set(), 0
    while len(registered) < 2 or step < 25:
        assert first.poll() is None and time.time() < deadline, first.communicate()[0][-3000:]
        registered |= registered_checkpoints(object_store, "runs/node-lost")
        if calls_file.exists():
            step = int(calls_file.read_text() or step)          # empty: caught mid-rewrite
        time.sleep(0.2)
    worker_node = next(iter(ray_cluster.worker_nodes))
    ray_cluster.remove_node(worker_node, allow_graceful=True)           # SIGTERM to its raylet and workers
    # the step read before: rank 0 may have run on that node, its file left empty by a SIGTERM mid-rewrite
    lost_at = step
    output = first.communicate(timeout=600)[0]
    lines = [line for line in output.splitlines() if line.strip()]
    assert first.returncode == 1, output[-3000:]
    assert lines[-1].startswith("error: run node-lost: the cluster gave no room for 2 worker(s) in 5 s"), lines[-3:]

    ray_cluster.add_node(num_cpus=1, resources={"node_b": 1}, env_vars={"TMPDIR": str(node_scratch["node_b"])},
                         dashboard_agent_listen_port=free_port())
    ray_cluster.wait_for_nodes()
    again = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    resumed = re.findall(r"rank 0 resumed at step (\d+)", (tmp_path / "runs" / "node-lost.log").read_text())
    print(f"\n--- node taken away at step {lost_at}: resumed at step {resumed[-1]}, "
          f"{lost_at - int(resumed[-1])} steps trained again ---")
    assert resumed and int(resumed[-1]) >= 20
