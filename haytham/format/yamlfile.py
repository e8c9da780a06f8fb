"""YAML that people write (workflows, haytham.yaml): safely loaded, errors located by line.

Bounded: a file longer than ``MAX_YAML_CHARS`` is refused before it is parsed, and so is one
whose aliases (``*name``) would expand it to more than ``MAX_YAML_NODES`` values (a "billion
laughs": a few hundred bytes that nest aliases of aliases into billions of values). Aliases
themselves are fine (a workflow may reuse a list); docs/formats.md, "Limits", lists both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haytham.errors import DocumentError
from haytham.format.guard import read_file
from haytham.format.layout import FORMAT_VERSION
from haytham.format.reader import decode

if TYPE_CHECKING:  # PyYAML is imported when a YAML file is read, not at start
    import yaml

MAX_YAML_CHARS = 1_000_000
"""The longest YAML file haytham reads (settings, workflows and preferences are small)."""
MAX_YAML_NODES = 100_000
"""The most values a YAML file may hold once its aliases are expanded."""
VERSION_KEY = "format"
"""The first key of each YAML file haytham writes, ``format: 1``; without it, version 0."""


def read_yaml(path: Path) -> str:
    """The text of the YAML file at ``path``, refused (DocumentError) by its size before it
    is read when it is longer than ``MAX_YAML_CHARS`` bytes could hold; read through the
    guarded path (``haytham.format.guard``), so OSErrors other than a missing file are
    StorageErrors naming it."""

    def too_long(size: int) -> DocumentError:
        return DocumentError(
            f"is {size:,} bytes long: haytham reads YAML files of at most {MAX_YAML_CHARS:,} characters",
            path=path,
        )

    # No UTF-8 text of the limit is longer than 4 bytes a character.
    return decode(read_file(path, 4 * MAX_YAML_CHARS, too_long=too_long), path)


def parse_yaml(text: str, path: Path) -> tuple[yaml.Node | None, Any]:
    """The node tree (for line numbers) and the data, loaded only with the safe loader.

    DocumentError when the text is not YAML, or is larger than the limits (see the module)."""
    if len(text) > MAX_YAML_CHARS:
        raise DocumentError(
            f"is {len(text):,} characters long: haytham reads YAML files of at most {MAX_YAML_CHARS:,}",
            path=path,
        )
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:  # one parse by libyaml; a text it refuses is parsed again below
        loader = fast(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _check_expansion(node, path)
            return node, (loader.construct_document(node) if node is not None else None)
        except yaml.YAMLError:
            pass
        finally:
            loader.dispose()
    loader = yaml.SafeLoader(text)  # the pure-Python loader, whose messages say what is wrong
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_expansion(node, path)
        return node, loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or error
        raise DocumentError(f"is not valid YAML: {problem}", path=path, line=line) from None
    finally:
        loader.dispose()


def _check_expansion(root: yaml.Node, path: Path) -> None:
    """Refuse a node tree whose aliases expand it beyond ``MAX_YAML_NODES`` values.

    An alias is the same node object as its anchor, so the expanded size of each node is
    computed once (by identity) and the check takes time linear in the file, whatever the
    expansion would be."""

    sizes: dict[int, int] = {}
    opened: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if not children_done and children:
            if id(node) in opened:
                raise DocumentError(
                    "holds a value that contains itself through an alias (*name): refused",
                    path=path,
                    line=int(node.start_mark.line) + 1,
                )
            opened.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        size = 1 + sum(sizes.get(id(child), 1) for child in children)
        if size > MAX_YAML_NODES:
            raise DocumentError(
                f"expands to more than {MAX_YAML_NODES:,} values through its aliases (*name): "
                "refused as a YAML bomb; write the values out or use fewer aliases",
                path=path,
                line=int(node.start_mark.line) + 1,
            )
        sizes[id(node)] = size


def _children(node: yaml.Node) -> list[yaml.Node]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


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
