"""``skipview data fetch``: copy or download a raw data directory (a corpus, or the SentEval data).

Where the data comes from (``SOURCE``, optionally relative to ``--root``):

* a local directory -- copied as it is;
* a local ``.tar.gz`` / ``.tgz`` / ``.tar`` archive, or an ``http(s)://`` URL of one -- downloaded and unpacked.
  If the archive holds exactly one top-level folder, that folder's content becomes the output (so both
  ``tar czf x.tar.gz -C corpora gutenberg_novels`` and ``tar czf x.tar.gz -C corpora/gutenberg_novels .`` work).

With ``--root``, a relative SOURCE is joined to it: ``ROOT/SOURCE`` for a local root, and ``ROOT/SOURCE.tar.gz`` for
an http(s) root. So a whole data tree can be served as one archive per folder: e.g. for
``--root https://example.org/skipview-data`` the corpus ``corpora/gutenberg_novels`` is fetched from
``https://example.org/skipview-data/corpora/gutenberg_novels.tar.gz``. An absolute path or a full URL ignores
the root.

If the fetched directory has a ``SHA256SUMS`` file (``<sha256>  <relative path>`` lines, as ``sha256sum``
writes), every file it lists is checked; a missing file or a mismatch is an error naming the file.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

from tqdm import tqdm

from skipview.platform.data.staging import staged_directory
from skipview.platform.errors import FetchError

log = logging.getLogger("skipview.data")

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
CHECKSUM_FILE = "SHA256SUMS"
_CHECKSUM_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")  # sha256sum text and binary modes




def resolve_source(source: str, root: str | None = None) -> str:
    if _is_url(source) or root is None or Path(source).is_absolute():
        return source
    if _is_url(root):
        return f"{root.rstrip('/')}/{source.strip('/')}.tar.gz"
    return str(Path(root) / source)


def fetch(source: str, out: str | Path, root: str | None = None, verify: bool = True, overwrite: bool = False,
          progress: bool = True) -> dict:
    """Copy or download ``source`` into the directory ``out``; returns a summary (files, bytes, verified)."""
    location = resolve_source(source, root)
    with staged_directory(out, overwrite=overwrite) as folder:
        if _is_url(location):
            archive = folder / ".download"
            _download(location, archive, progress)
            _unpack(archive, folder, location)
            archive.unlink()
        elif Path(location).is_dir():
            shutil.copytree(location, folder, dirs_exist_ok=True)
        elif Path(location).is_file() and location.endswith(ARCHIVE_SUFFIXES):
            _unpack(Path(location), folder, location)
        elif Path(location).exists():
            raise FetchError(f"{location}: not a directory or a {'/'.join(ARCHIVE_SUFFIXES)} archive")
        else:
            raise FetchError(f"{location}: no such file or directory (set the source, or --root)")
        files = [p for p in folder.rglob("*") if p.is_file()]
        if not files:
            raise FetchError(f"{location}: nothing to fetch, the source is empty")
        verified = _verify(folder, location) if verify else 0
        summary = {"source": location, "files": len(files), "bytes": sum(p.stat().st_size for p in files),
                   "verified": verified}
    log.info("fetched %s -> %s: %d files, %.1f MB%s", location, out, summary["files"], summary["bytes"] / 1e6,
             f", {verified} checked against {CHECKSUM_FILE}" if verified else "")
    return summary


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def _download(url: str, target: Path, progress: bool) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as f:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, desc="download", unit="B", unit_scale=True, disable=not progress) as bar:
                while block := response.read(1 << 20):
                    f.write(block)
                    bar.update(len(block))
    except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
        raise FetchError(f"{url}: download failed ({error})") from None


def _unpack(archive: Path, folder: Path, name: str) -> None:
    unpacked = folder / ".unpacked"
    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.extractall(unpacked, filter="data")  # "data": no absolute paths, no links out, no devices
    except (tarfile.TarError, EOFError, OSError) as error:
        raise FetchError(f"{name}: not a readable tar archive ({error})") from None
    entries = list(unpacked.iterdir())
    content = entries[0] if len(entries) == 1 and entries[0].is_dir() else unpacked
    for entry in content.iterdir():
        entry.rename(folder / entry.name)
    shutil.rmtree(unpacked)


def _verify(folder: Path, name: str) -> int:
    sums = folder / CHECKSUM_FILE
    if not sums.is_file():
        return 0
    checked = 0
    for line_no, line in enumerate(sums.read_text().splitlines(), 1):
        if not line.strip():
            continue
        match = _CHECKSUM_LINE.match(line)
        if match is None:
            raise FetchError(f"{name}/{CHECKSUM_FILE}:{line_no}: expected '<sha256>  <path>', got {line!r}")
        expected, relative = match.groups()
        path = folder / relative
        if not path.is_file():
            raise FetchError(f"{name}/{CHECKSUM_FILE}:{line_no}: listed file {relative!r} is missing")
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
        if digest.hexdigest() != expected.lower():
            raise FetchError(f"{name}: checksum mismatch for {relative} (expected {expected}, got "
                             f"{digest.hexdigest()})")
        checked += 1
    return checked
