"""YAML that people write (workflows, haytham.yaml): safely loaded, errors located by line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haytham.errors import DocumentError
from haytham.format.layout import FORMAT_VERSION

if TYPE_CHECKING:  # PyYAML is imported when a YAML file is read, not at start
    import yaml

VERSION_KEY = "format"
"""The first key of each YAML file haytham writes, ``format: 1``; without it, version 0."""


def parse_yaml(text: str, path: Path) -> tuple[yaml.Node | None, Any]:
    """The node tree (for line numbers) and the data, loaded only with the safe loader.

    One parse, by libyaml's safe loader where PyYAML has it (the data is constructed from
    the node tree); a text it refuses is parsed again by the pure-Python loader, whose
    messages say what is wrong.
    """
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        loader = fast(text)
        try:
            node = loader.get_single_node()
            return node, (loader.construct_document(node) if node is not None else None)
        except yaml.YAMLError:
            pass
        finally:
            loader.dispose()
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader), yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or error
        raise DocumentError(f"is not valid YAML: {problem}", path=path, line=line) from None


def line_of(node: yaml.Node, keys: Sequence[Any]) -> int:
    """The 1-based line of the key (or list item) at ``keys``, or of its nearest parent."""
    import yaml

    line = int(node.start_mark.line) + 1
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if str(k.value) == str(key)), None)
            if pair is None:
                break
            line, node = int(pair[0].start_mark.line) + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = int(node.start_mark.line) + 1
        else:
            break
    return line


def take_version(node: yaml.Node, data: dict[str, Any], path: Path) -> int:
    """Remove ``format`` from a loaded mapping and return it (0 when absent); a value that is
    not a version, or one newer than this haytham's, is an error at its line."""
    if VERSION_KEY not in data:
        return 0
    version = data.pop(VERSION_KEY)
    line = line_of(node, [VERSION_KEY])
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise DocumentError(f"{version!r} is not a format version (a whole number)", path=path, line=line)
    if version > FORMAT_VERSION:
        raise DocumentError(
            f"is {version}: written by a newer haytham (this one reads formats up to {FORMAT_VERSION}); "
            "upgrade haytham to read it",
            path=path,
            line=line,
            field=VERSION_KEY,
        )
    return version
