"""The one way a benchmark hands over its result: the JSON document printed, and written whole to ``--out`` when
given (aside first, then renamed, so an interrupted write never leaves half a document where a result was)."""

from __future__ import annotations

import json
from pathlib import Path


def emit(document: dict, out: Path | None) -> None:
    text = json.dumps(document, indent=2)
    print(text)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = out.with_suffix(".tmp")
        staging.write_text(text + "\n")
        staging.replace(out)
