"""YAML that remembers where each key was written, so a validation error can say ``file:line: key: reason``.

PyYAML's composer already records a start mark on every node; reading them costs one walk over the node tree,
so this is kept instead of pulling in a round-trip YAML library for line numbers alone.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

import yaml


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e-4`` as a float: YAML 1.1 wants ``1.0e-4`` and PyYAML would otherwise hand
    learning rates over as strings."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                  |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                  |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                  |[-+]?\.(?:inf|Inf|INF)
                  |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


class YamlSourceError(ValueError):
    """A YAML file that cannot be read or parsed; the message names the file (and the line when known)."""


def load_with_lines(path: str | Path) -> tuple[Any, dict[tuple[str, ...], int]]:
    """The parsed document and a map from each key path (tuple of keys/indices as strings) to its 1-based line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise YamlSourceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        root = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise YamlSourceError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from exc
    lines: dict[tuple[str, ...], int] = {}
    if root is not None:
        _collect(root, (), lines)
    return data, lines


def _collect(node: yaml.Node, at: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> None:
    lines.setdefault(at, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            here = at + (str(key_node.value),)
            lines[here] = key_node.start_mark.line + 1
            _collect(value_node, here, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _collect(item, at + (str(index),), lines)


def line_of(lines: dict[tuple[str, ...], int], at: tuple[Any, ...]) -> int | None:
    """The line of the deepest recorded prefix of ``at`` (pydantic error locations may go below a written key)."""
    at = tuple(str(part) for part in at)
    for end in range(len(at), -1, -1):
        if at[:end] in lines:
            return lines[at[:end]]
    return None


def written(loc: tuple, tags: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """A pydantic error location without the parts the user did not write: validator labels, ``[key]``, and the
    ``tags`` of a discriminated union (pydantic puts the chosen member's tag in the location)."""
    return tuple(str(p) for p in loc
                 if not str(p).startswith(("tagged-union", "function-")) and p != "[key]" and p not in tags)


def describe(path: str | Path, lines: dict, problems: list[tuple[tuple[str, ...], str]]) -> str:
    """One ``file:line: key: reason`` line per problem, duplicates dropped."""
    return "\n".join(dict.fromkeys(
        f"{path}:{line_of(lines, at) or '?'}: {'.'.join(at) or '(top level)'}: {why}" for at, why in problems))


Model = TypeVar("Model", bound=BaseModel)


def load_model(path: str | Path, model: type[Model], error: type[ValueError]) -> Model:
    """Read ``path`` and validate it as ``model``; ``error`` lists every problem with its file, line and key."""
    data, lines = load_with_lines(path)
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise error(describe(path, lines, [(in_document(data, written(e["loc"])), e["msg"])
                                           for e in exc.errors()])) from None


def in_document(data: Any, at: tuple[str, ...]) -> tuple[str, ...]:
    """``at`` without the parts that name no key or index of the document: the member names pydantic puts in the
    location of a union (``analyses.sup.supervised.baselines`` for the written ``analyses.sup.baselines``); the last
    part stays, as it may be a required key the document lacks."""
    kept, node = [], data
    for index, part in enumerate(at):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, (dict, list)) and index < len(at) - 1:    # the last part may be a missing key
            continue
        kept.append(part)
    return tuple(kept)
