"""An offline bundle for a GPU machine without network access: what it needs to run skipview's platform, and its
unpacking there (issue 40).

The target machine (reports/benchmarks/gpu_platform.md) has torch, numpy, pyarrow, pandas, aiohttp, grpcio,
requests, pyyaml, rich and typer, but no network, no Ray, MLflow or pydantic, and receives at most 64 MiB per
transfer (the checkout sent with it included). The packages (~35 MiB) and the novels with the news (~25 MiB of
token ids, plus the vectors) do not fit one transfer beside the checkout, so the bundle is two parts, one per
command, under the git-ignored ``.gpu_bundle/``; each part, with the checkout, fits 64 MiB:

* ``packages/``: ``site-cpXY.tar.xz``, the packages the image lacks (Ray, MLflow with its SQLite store, pydantic),
  installed here for the machine's Python with ``pip install --target`` (Ray trimmed, ``RAY_UNUSED``; native code
  stripped of symbols). Installed here rather than carried as wheels because the trimmed Ray is no wheel, and one xz
  stream over the installed tree is smaller than the wheels' per-file deflate. The first command unpacks it into
  the git-ignored ``.gpu_work/``, which the machine keeps for the second command.
* ``data/``: ``data.tar.xz`` (one prepared corpus, packed by ``pack_data``, and the SentEval folders the STS
  evaluation reads) and ``vectors.tar`` (its word vectors, as many rows as the room left allows).
* each part's ``manifest.json``: what it holds, what the packing changed, the sizes.

    python scripts/gpu_bundle.py build --corpus data/novels_news/prepared --wordvecs data/novels_news/wordvecs \\
        --senteval data/senteval/downstream [--python 3.12] [--out .gpu_bundle]
    python3 scripts/gpu_bundle.py unpack --bundle .gpu_bundle/packages --to WORK    # on the GPU machine (gpu_run.py)

What the packing changes (the manifest says it again with the numbers of the corpus at hand):

* sentences keep their first ``max_len`` (30) tokens: training never reads past them (``read_sentences`` and the
  post-processing sample cut there), so the batches are the same as from the full corpus;
* token ids are exact (ids above 65,535 are packed as a sparse high part);
* word vectors are packed for the ``rows`` most frequent words and every word of the evaluation sets, as int8 with one
  scale per row (relative error under 0.4 % of the row's largest entry); the other rows are zero, which is how the
  platform already treats a word without a vector. So a rare word is zero for f and g in training, as if unknown.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import lzma
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
DEVICE_LIMIT_BYTES = 64 * 2 ** 20           # the GPU machine's transfer: files sent per command, checkout included
# Ray's dashboard ([default]) is kept: Ray Train's placement-group cleaner asks its state API (driver.start_local)
# MLflow's SQLite store (SQLAlchemy, Alembic): its file store cannot hold the metrics ``sts14`` and ``sts14/f`` side by
# side (a file and a folder of one name)
REQUIREMENTS = ("ray[default,train,tune]", "mlflow-skinny", "sqlalchemy", "alembic", "pydantic", "typer")
# Already on the GPU machine's image (its list of installed Python packages, 2026-11-17),
# so not carried; the runner's preflight imports what training needs and fails in one line if a version is off.
IMAGE_HAS = frozenset("""
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax
fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize
hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2
joblib kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown
markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch
mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti
nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver
nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13
nvidia-nvtx onnx onnx-ir onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix
orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client propcache
protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest
pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex
requests rich sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece
sentence-transformers setuptools shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard
tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio
torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions
typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
""".split())
# carried although the image has them: skipview needs typer >= 0.27.2 (TyperException), and Ray's dashboard,
# OpenTelemetry and MLflow all load protobuf's generated code, which needs a runtime at least as new as theirs
CARRY_ANYWAY = frozenset({"typer", "protobuf"})
# never imported by training, evaluation or MLflow: py-spy (Ray's dashboard profiler), virtualenv and its helpers
# (Ray's pip runtime environments), cffi (cryptography's OpenSSL bindings of old; MLflow's SQL store imports only
# its Fernet, which is in cryptography's Rust module)
LEAVE_OUT = frozenset({"py-spy", "virtualenv", "distlib", "python-discovery", "cffi", "pycparser"})
# the Java worker, RLlib, Serve and the LLM library; the dashboard's web page but its index (the dashboard's HTTP
# API, which Train asks, fails to start without client/build/ and its static/ folder); the runtime-environment
# agent's own aiohttp copy (it falls back to the image's aiohttp)
RAY_UNUSED = ("ray/jars", "ray/rllib", "ray/serve", "ray/llm", "ray/tests", "ray/dashboard/client/build/static/*",
              "ray/dashboard/client/build/speedscope-*", "ray/_private/runtime_env/agent/thirdparty_files")
RAY_EXECUTABLES = ("ray/core/src/ray/raylet/raylet", "ray/core/src/ray/gcs/gcs_server")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64", "any")
# the SentEval folders of STS12-14, STS-B and SICK (the profile's and the d 1024 comparison's tasks)
SENTEVAL_FOLDERS = ("STS/STS12-en-test", "STS/STS13-en-test", "STS/STS14-en-test", "STS/STSBenchmark", "SICK")
EVAL_TASKS = ("sts12", "sts13", "sts14", "stsb_unsup", "sickr_unsup")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ------------------------------------------------------------------------------------------------ packages


def closure(python: str, work: Path) -> dict[str, str]:
    """Every distribution the requirements pull in for ``python`` on x86-64 Linux, name -> version, with the
    requirements pinned to the versions installed here (what the tests run against)."""
    pinned = [f"{r}=={importlib.metadata.version(r.split('[')[0])}" for r in REQUIREMENTS]
    report = work / "resolution.json"
    pip(python, ["install", "--dry-run", "--ignore-installed", "--report", str(report),
                 "--target", str(work / "unused")], pinned)
    return {canonical(item["metadata"]["name"]): item["metadata"]["version"]
            for item in json.loads(report.read_text())["install"]}


def pip(python: str, arguments: list[str], requirements: list[str]) -> None:
    platform = [f"--platform={p}" for p in PLATFORMS]
    command = [sys.executable, "-m", "pip", *arguments, "--quiet", "--only-binary=:all:", f"--python-version={python}",
               "--implementation=cp", *platform, *requirements]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"error: pip could not resolve the packages for Python {python}: "
                         f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else result.returncode}")


def carried(resolved: dict[str, str]) -> dict[str, str]:
    return {name: version for name, version in sorted(resolved.items())
            if name not in LEAVE_OUT and (name not in IMAGE_HAS or name in CARRY_ANYWAY)}


def install_site(python: str, packages: dict[str, str], site: Path) -> None:
    pip(python, ["install", "--no-deps", "--no-compile", "--target", str(site)],
        [f"{name}=={version}" for name, version in packages.items()])
    for pattern in RAY_UNUSED:
        for path in site.glob(pattern):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    if shutil.which("strip"):     # symbols only: native stack traces lose function names, nothing else changes
        binaries = [site / b for b in RAY_EXECUTABLES if (site / b).exists()] + sorted(site.rglob("*.so"))
        subprocess.run(["strip", "--strip-unneeded", *map(str, binaries)], check=True)
    shutil.rmtree(site / "bin", ignore_errors=True)   # console scripts whose first line names this machine's python
    for cache in list(site.rglob("__pycache__")):
        shutil.rmtree(cache)


# ------------------------------------------------------------------------------------------------ data


def evaluation_words(senteval: Path, tokenizer, vocab) -> np.ndarray:
    """Ids of the corpus words that occur in the evaluation sets' sentences (tokenised as evaluation does)."""
    from skipview.platform.evaluation.datasets import TaskDataError, load_task

    ids: set[int] = set()
    for task in EVAL_TASKS:
        try:
            data = load_task(task, senteval)
        except TaskDataError:
            continue
        for split in data.splits.values():
            for sentence in [*split.a, *split.b]:
                ids.update(vocab.encode(tokenizer(sentence)))
    return np.array(sorted(ids), dtype=np.int64)


def pack_data(corpus_dir: Path, senteval: Path | None, staging: Path, *, max_len: int) -> dict:
    """Write the corpus (each sentence cut at ``max_len``) and the SentEval folders in their packed form under
    ``staging``; return what changed."""
    from skipview.models.corpus import PreparedCorpus

    corpus = PreparedCorpus(corpus_dir)
    offsets = np.asarray(corpus.offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    kept = np.minimum(lengths, max_len)
    starts = offsets[:-1]
    new_starts = np.concatenate([[0], np.cumsum(kept)[:-1]])
    positions = np.repeat(starts - new_starts, kept) + np.arange(int(kept.sum()), dtype=np.int64)
    tokens = np.asarray(corpus.tokens[positions], dtype=np.uint32)
    high = np.flatnonzero(tokens > 0xFFFF).astype(np.uint32)
    (staging / "corpus").mkdir(parents=True)
    np.save(staging / "corpus" / "tokens_low16.npy", (tokens & 0xFFFF).astype(np.uint16))
    np.save(staging / "corpus" / "high_positions.npy", high)
    np.save(staging / "corpus" / "high_values.npy", (tokens[high] >> 16).astype(np.uint16))
    np.save(staging / "corpus" / "lengths.npy", kept.astype(np.uint8 if max_len < 256 else np.uint16))
    meta = {**corpus.meta, "gpu_bundle": {"max_len": max_len, "tokens_after": int(kept.sum())}}
    (staging / "corpus" / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    np.save(staging / "corpus" / "doc_index.npy", np.asarray(corpus.doc_index, dtype=np.int64))
    shutil.copyfile(corpus_dir / "vocab.tsv", staging / "corpus" / "vocab.tsv")
    copied = []
    for folder in SENTEVAL_FOLDERS if senteval else ():
        if (senteval / folder).is_dir():
            shutil.copytree(senteval / folder, staging / "senteval" / folder)
            copied.append(folder)
    return {"sentences": corpus.num_sentences, "documents": corpus.num_documents, "max_len": max_len,
            "tokens": int(lengths.sum()), "tokens_kept": int(kept.sum()),
            "sentences_truncated": int((lengths > max_len).sum()),
            "ids_above_65535": int(len(high)), "senteval_folders": copied}


def pack_vectors(vectors: np.ndarray, shipped: np.ndarray, wordvecs_dir: Path, staging: Path) -> None:
    """Rows ``shipped`` of the word vectors as int8 with one scale per row, under ``staging``."""
    values = np.asarray(vectors[shipped], dtype=np.float32)
    scale = np.abs(values).max(axis=1) / 127
    quantised = np.round(values / np.where(scale > 0, scale, 1)[:, None]).astype(np.int8)
    staging.mkdir(parents=True)
    np.save(staging / "rows.npy", shipped.astype(np.uint32))
    np.save(staging / "int8.npy", quantised)
    np.save(staging / "scale.npy", scale.astype(np.float32))
    np.save(staging / "shape.npy", np.array(vectors.shape, dtype=np.int64))
    # the vectors' vocab.tsv is the corpus's (aligned_word_vectors checked it), so decode_data copies that one
    shutil.copyfile(wordvecs_dir / "meta.json", staging / "meta.json")


def vectors_archive(corpus_dir: Path, wordvecs_dir: Path, senteval: Path | None, archive: Path, *, rows: int | None,
                    room: int, scratch: Path) -> dict:
    """``archive`` with the vectors of every evaluation word and of the ``rows`` most frequent words; ``rows``
    None: as many as fit in ``room`` bytes (ids are by frequency, so the first K ids are the K most frequent).
    A plain tar: xz shrinks int8 vectors by ~6 % (measured on 10,000 rows of the novels' vectors), which is not
    worth its minutes here, and uncompressed their size is known before writing them."""
    from skipview.models.corpus import PreparedCorpus
    from skipview.platform.training.objectives import aligned_word_vectors

    corpus = PreparedCorpus(corpus_dir)
    vectors = aligned_word_vectors(wordvecs_dir, corpus.vocab)
    eval_ids = evaluation_words(senteval, corpus.tokenizer, corpus.vocab) if senteval else np.array([], np.int64)
    if rows is None:
        per_row = vectors.shape[1] + 4 + 4                  # int8 values, the float32 scale, the uint32 row id
        headers = 64 * 1024                                 # the tar's and the .npy files' headers, meta.json
        candidates = np.arange(len(vectors) + 1)             # shipped(K) = K + the evaluation words at ids >= K
        shipped_rows = candidates + len(eval_ids) - np.searchsorted(eval_ids, candidates)
        rows = int(np.searchsorted(shipped_rows * per_row + headers, room, side="right")) - 1
        if rows < 0:
            raise SystemExit(f"error: {archive}: not even the evaluation words' vectors fit in the "
                             f"{room / 2**20:.1f} MiB left: lower --max-len or carry less")
    shipped = np.union1d(np.arange(min(rows, len(vectors))), eval_ids)
    pack_vectors(vectors, shipped, wordvecs_dir, scratch)
    write_archive(scratch, archive, preset=None)
    counts = np.bincount(np.asarray(corpus.tokens, dtype=np.int64), minlength=len(vectors))
    zeroed = np.setdiff1d(np.flatnonzero(np.abs(vectors).max(axis=1) > 0), shipped)
    return {"vocab": int(len(vectors)), "vector_rows_shipped": int(len(shipped)), "most_frequent_rows": int(rows),
            "evaluation_words": int(len(eval_ids)), "rows_zeroed": int(len(zeroed)),
            "corpus_tokens_with_zeroed_vector": round(float(counts[zeroed].sum() / max(counts.sum(), 1)), 5),
            "vector_quantisation": "int8, one float32 scale per row (max |v| / 127)"}


def unpack(part: Path, work: Path) -> dict:
    """On the GPU machine: one part of the bundle into WORK, the packages into WORK/site (the first command) or the
    corpus, vectors and SentEval data into WORK/data (the second); returns the seconds each step took."""
    manifest = json.loads((part / "manifest.json").read_text())
    timings = {}

    def extract(archive: str, target: Path) -> None:
        start = time.time()
        with tarfile.open(part / archive) as tar:         # xz or plain, as tarfile finds
            tar.extractall(target, filter="data")
        timings[archive] = round(time.time() - start, 1)

    if manifest.get("part") == "packages":
        want, have = manifest["python"], f"{sys.version_info[0]}.{sys.version_info[1]}"
        if want != have:
            raise SystemExit(f"error: {part}/manifest.json: the bundle's packages are for Python {want}, this "
                             f"python3 is {have}: rebuild with scripts/gpu_bundle.py build --python {have}")
        extract(manifest["site_archive"], work / "site")
    elif manifest.get("part") == "data":
        extract("data.tar.xz", work / "packed")
        extract("vectors.tar", work / "packed" / "wordvecs")
        start = time.time()
        decode_data(work / "packed", work / "data")
        shutil.rmtree(work / "packed")
        timings["decode"] = round(time.time() - start, 1)
    else:
        raise SystemExit(f"error: {part}/manifest.json: 'part' is {manifest.get('part')!r}, not packages or data "
                         "(a bundle from before the split: rebuild it)")
    return timings


def decode_data(packed: Path, data: Path) -> None:
    """``pack_data``'s output back into a prepared corpus, a word-vector folder and SentEval's layout under ``data``."""
    corpus = data / "prepared"
    corpus.mkdir(parents=True)
    tokens = np.load(packed / "corpus" / "tokens_low16.npy").astype(np.uint32)
    high = np.load(packed / "corpus" / "high_positions.npy")
    tokens[high] |= np.load(packed / "corpus" / "high_values.npy").astype(np.uint32) << 16
    tokens.tofile(corpus / "tokens.bin")
    lengths = np.load(packed / "corpus" / "lengths.npy").astype(np.int64)
    np.save(corpus / "offsets.npy", np.concatenate([[0], np.cumsum(lengths)]))
    for name in ("doc_index.npy", "vocab.tsv", "meta.json"):
        shutil.copyfile(packed / "corpus" / name, corpus / name)
    vectors_dir = data / "wordvecs"
    vectors_dir.mkdir()
    vectors = np.zeros(tuple(np.load(packed / "wordvecs" / "shape.npy")), dtype=np.float32)
    rows = np.load(packed / "wordvecs" / "rows.npy")
    vectors[rows] = np.load(packed / "wordvecs" / "int8.npy") * np.load(packed / "wordvecs" / "scale.npy")[:, None]
    np.save(vectors_dir / "vectors.npy", vectors)
    shutil.copyfile(corpus / "vocab.tsv", vectors_dir / "vocab.tsv")
    shutil.copyfile(packed / "wordvecs" / "meta.json", vectors_dir / "meta.json")
    downstream = data / "senteval" / "downstream"
    if (packed / "senteval").is_dir():
        shutil.copytree(packed / "senteval", downstream)
    else:
        downstream.mkdir(parents=True)


# ------------------------------------------------------------------------------------------------ build


def travelling_tree_bytes(repository: Path) -> int:
    """What is sent of the checkout to the GPU machine: tracked and untracked-but-not-ignored files."""
    listing = subprocess.run(["git", "-C", str(repository), "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout.split(b"\0")
    return sum((repository / name.decode()).stat().st_size for name in listing
               if name and (repository / name.decode()).is_file())


def write_archive(source: Path, archive: Path, preset: int | None) -> None:
    """A tar of ``source``'s contents, xz-compressed at ``preset`` (None: plain). The xz program where there is
    one: its threads compress blocks of 16 MiB side by side (Python's lzma has one thread; 180 MB of packages take
    minutes); the GPU machine reads either with Python's lzma, so it needs no xz program."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(source.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(source)), recursive=False)
    if preset is None:
        archive.write_bytes(buffer.getvalue())
    elif shutil.which("xz"):
        with open(archive, "wb") as out:
            subprocess.run(["xz", f"-{preset}", "--threads=0", "--block-size=16MiB", "--stdout"],
                           input=buffer.getvalue(), stdout=out, check=True)
    else:
        archive.write_bytes(lzma.compress(buffer.getvalue(), preset=preset))


def build(args: argparse.Namespace) -> dict[str, dict]:
    """Both parts under OUT (packages/, data/), each with its manifest; fails in one line if a part and the
    checkout exceed the 64 MiB of one transfer."""
    out = args.out.resolve()
    tree = travelling_tree_bytes(REPOSITORY)
    with tempfile.TemporaryDirectory(prefix="gpu_bundle-") as scratch:
        scratch = Path(scratch)
        staged = scratch / "bundle"
        (staged / "packages").mkdir(parents=True)
        (staged / "data").mkdir()
        start = time.time()
        packages = carried(closure(args.python, scratch))
        install_site(args.python, packages, scratch / "site")
        site_archive = f"site-cp{args.python.replace('.', '')}.tar.xz"
        write_archive(scratch / "site", staged / "packages" / site_archive, args.preset)
        manifests = {"packages": {
            "part": "packages", "python": args.python, "site_archive": site_archive, "packages": packages,
            "left_out": sorted(LEAVE_OUT), "ray_removed": list(RAY_UNUSED), "stripped": ["*.so", *RAY_EXECUTABLES],
            "build_s": round(time.time() - start, 1)}}
        start = time.time()
        data = pack_data(args.corpus, args.senteval, scratch / "data", max_len=args.max_len)
        write_archive(scratch / "data", staged / "data" / "data.tar.xz", args.preset)
        room = DEVICE_LIMIT_BYTES - tree - (staged / "data" / "data.tar.xz").stat().st_size - \
            int(args.margin_mib * 2 ** 20)
        data.update(vectors_archive(args.corpus, args.wordvecs, args.senteval, staged / "data" / "vectors.tar",
                                    rows=args.rows, room=room, scratch=scratch / "vectors"))
        manifests["data"] = {"part": "data", "data": data, "build_s": round(time.time() - start, 1),
                             "sources": {"corpus": str(args.corpus), "wordvecs": str(args.wordvecs),
                                         "senteval": str(args.senteval) if args.senteval else None}}
        for part, manifest in manifests.items():
            sizes = {p.name: p.stat().st_size for p in sorted((staged / part).iterdir())}
            manifest.update(xz_preset=args.preset, bytes=sizes, part_bytes=sum(sizes.values()), checkout_bytes=tree,
                            call_bytes=sum(sizes.values()) + tree, device_limit_bytes=DEVICE_LIMIT_BYTES)
            (staged / part / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if out.exists():
            shutil.rmtree(out)
        shutil.move(staged, out)     # the bundle appears whole or not at all
    for part, manifest in manifests.items():
        if manifest["call_bytes"] > DEVICE_LIMIT_BYTES:
            raise SystemExit(f"error: {out / part}: the part ({manifest['part_bytes'] / 2**20:.1f} MiB) and the "
                             f"checkout ({tree / 2**20:.1f} MiB) make {manifest['call_bytes'] / 2**20:.1f} MiB, over "
                             f"the 64 MiB of one transfer: lower --rows or --max-len, or raise --margin-mib")
    return manifests


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("build", help="build the bundle here")
    make.add_argument("--corpus", type=Path, required=True, help="prepared corpus directory")
    make.add_argument("--wordvecs", type=Path, required=True, help="word-vector directory aligned with the corpus")
    make.add_argument("--senteval", type=Path, help="SentEval data/downstream (its STS and SICK folders are packed)")
    make.add_argument("--python", default="3.12", help="the GPU machine's Python, major.minor (its image's: 3.12.3)")
    make.add_argument("--out", type=Path, default=REPOSITORY / ".gpu_bundle")
    make.add_argument("--max-len", type=int, default=30, help="tokens kept per sentence (training's max_len)")
    make.add_argument("--rows", type=int, default=None, help="word vectors shipped: the most frequent words (plus "
                                                              "every evaluation word); default: as many as fit")
    make.add_argument("--margin-mib", type=float, default=1.5, help="left free under 64 MiB for the checkout to grow")
    make.add_argument("--preset", type=int, default=9, help="xz preset (0 fast .. 9 small)")
    take = commands.add_parser("unpack", help="on the GPU machine: one part (packages or data) into a work folder")
    take.add_argument("--bundle", type=Path, required=True, help="the part's folder, .gpu_bundle/packages or /data")
    take.add_argument("--to", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "build":
        for given in (args.corpus, args.wordvecs, args.senteval):
            if given is not None and not given.is_dir():
                raise SystemExit(f"error: {given}: no such directory")
        manifests = build(args)
        calls = {part: {k: manifest[k] for k in ("bytes", "call_bytes", "checkout_bytes", "build_s")}
                 for part, manifest in manifests.items()}
        print(json.dumps({"calls": calls, "packed": manifests["data"]["data"]}, indent=2))
    else:
        print(json.dumps(unpack(args.bundle, args.to)))


if __name__ == "__main__":
    main()
