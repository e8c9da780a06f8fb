"""What README.md and docs/*.md say is true: every code block runs, every reference exists.

Each document's code blocks run in order in a temporary folder of their own, which is also
their working directory:

- ``python`` blocks run in one namespace per document (a later block builds on an earlier
  one); a line ``print(...)  # TEXT`` says what the block prints, and TEXT must be a line of
  what it printed;
- ``sh`` blocks run a command at a time with bash, the ``haytham`` of this Python's
  environment first on PATH; each must exit 0, or the code its comment gives
  (``# exits 3 ...``). ``console`` blocks run their ``$ `` lines the same way and the lines
  shown after a command must be lines of what it printed. ``pip install 'haytham[X]'`` is
  not run (no network in the suite): extra X must exist and be installed here;
- a block of any language whose first line is ``# NAME.EXT`` (``# flow.yaml``) is a file the
  reader writes: it is written into the folder, not run.

A block that cannot run here says so in the document, on the line before it:
``<!-- docs-test: skip (why) -->``, or ``<!-- docs-test: run by tests/test_x.py (why) -->``
for an example another test runs with what it needs (a receiver, a collector).
``SKIPPED`` lists them; a new one must be added there too.

The README's walk-through runs as a reader runs it: in a clone (a git repository with an
``origin``) holding this repository's ``projects/``, after its first command
(``python3 dev.py demo``, run here as the demo it runs) and its second (this suite).

The references the documents make are checked too: paths of the repository
(``haytham/...``, ``docs/...``, ``tests/...``, a backticked ``name.py``), Python names in
backticks that name haytham's (``haytham.x.y``, ``module.name`` of a haytham module,
``Class.attribute``, ``function(...)``, ``ClassName``) and every ``haytham COMMAND
--option`` against click's command tree.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import importlib
import importlib.metadata
import inspect
import io
import json
import os
import pkgutil
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import click
import pytest

import haytham
from haytham.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
"""Every document whose claims are checked (the CHANGELOG is history: what was true then)."""

RUNNABLE = ("python", "sh", "console")
FILE_LINE = re.compile(r"#\s*([\w.-]+\.(?:py|yaml|yml|json|toml|md|txt))\s*")
"""The first line of a block that is a file to write: ``# flow.yaml``."""
MARKER = re.compile(r"<!--\s*docs-test:\s*(skip|run by (\S+))\s*\((.+)\)\s*-->")

SKIPPED = {
    ("README.md", "python3 dev.py demo"): "skip",
    ("README.md", "haytham serve"): "skip",
    ("README.md", "haytham git setup"): "skip",
    ("docs/architecture.md", "python3 dev.py test tests/test_architecture.py"): "skip",
    ("docs/crewai.md", "import tempfile"): "run by tests/test_crewai.py",
    ("docs/langgraph.md", "from haytham.integrations.langgraph import HaythamSaver, resume_command"): "skip",
    (
        "docs/langgraph.md",
        'Command(resume={"approved": True, "comments": "Ship it.", "requested_changes": []})',
    ): "skip",
    ("docs/many-machines.md", "git init && haytham git setup"): "skip",
    (
        "docs/many-machines.md",
        "haytham runner --remote origin --agents my_agents:AGENTS [--project acme] [--max 10]",
    ): "skip",
    ("docs/many-machines.md", "haytham review --push"): "skip",
    ("docs/many-machines.md", "haytham sync"): "skip",
    ("docs/notify.md", "from pathlib import Path"): "run by tests/test_notify.py",
    ("docs/otel.md", "pip install 'haytham[otel]'"): "skip",
    ("docs/otel.md", "from haytham import CheckpointManager"): "run by tests/test_otel.py",
}
"""The code blocks that do not run here, by document and first line: each says why in its
document. Few, and each one deliberate."""


@dataclasses.dataclass(frozen=True)
class Block:
    """A fenced code block of a document."""

    doc: str
    line: int
    """The line of its opening fence (1-based)."""
    lang: str
    text: str
    """Its content, without the fences and the indentation of the fence."""
    marker: tuple[str, str] | None = None
    """``(how, why)`` of a ``docs-test`` comment right before it: ``skip`` or ``run by FILE``."""

    @property
    def first(self) -> str:
        return self.text.split("\n", 1)[0]

    @property
    def command(self) -> str:
        """Its first line without a prompt or a comment: how ``SKIPPED`` names it."""
        return re.split(r"\s+#", self.first.removeprefix("$ "), maxsplit=1)[0].strip()

    @property
    def file_name(self) -> str | None:
        match = FILE_LINE.fullmatch(self.first)
        return match.group(1) if match else None

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"


def read(doc: str) -> str:
    return (ROOT / doc).read_text(encoding="utf-8")


@cache
def blocks_of(doc: str) -> tuple[Block, ...]:
    """The fenced blocks of ``doc`` in order (fences in list items included; a longer fence
    holds shorter ones as content)."""
    lines = read(doc).split("\n")
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = re.match(r"^( *)(`{3,}|~{3,})([^`]*)$", lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, info = len(opening.group(1)), opening.group(2), opening.group(3).strip()
        close = re.compile(rf"^ *{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = index + 1
        while end < len(lines) and not close.match(lines[end]):
            end += 1
        body = [line[indent:] if line[:indent].strip() == "" else line for line in lines[index + 1 : end]]
        before = index - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        mark = MARKER.search(lines[before]) if before >= 0 else None
        marker = None
        if mark:
            marker = (mark.group(1), mark.group(3))
        found.append(Block(doc, index + 1, info.split()[0] if info else "", "\n".join(body), marker))
        index = end + 1
    return tuple(found)


def prose(doc: str) -> str:
    """``doc`` without its fenced blocks (their lines left empty, so lines keep their numbers)."""
    lines = read(doc).split("\n")
    for block in blocks_of(doc):
        count = block.text.count("\n") + 3  # the fences and the lines between
        for number in range(block.line - 1, min(block.line - 1 + count, len(lines))):
            lines[number] = ""
    return "\n".join(lines)


def inline_code(doc: str) -> Iterator[tuple[int, str]]:
    """Every inline code span of ``doc``'s prose, with its line."""
    for number, line in enumerate(prose(doc).split("\n"), 1):
        for match in re.finditer(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", line):
            yield number, match.group(2).strip()


# ------------------------------------------------------------------------ running blocks


def test_the_markers_name_exactly_the_blocks_that_do_not_run() -> None:
    """A block that does not run is marked in its document, with a reason, and listed in
    ``SKIPPED``; a ``run by`` names a test that reads the document."""
    marked = {}
    for doc in DOCUMENTS:
        for block in blocks_of(doc):
            if block.marker is None:
                continue
            how, why = block.marker
            assert len(why) > 10, f"{block}: say why the block does not run here"
            marked[(doc, block.command)] = how
            if how.startswith("run by "):
                runner = ROOT / how.removeprefix("run by ")
                assert runner.is_file(), f"{block}: {runner} does not exist"
                assert Path(doc).name in runner.read_text(encoding="utf-8"), (
                    f"{block}: {runner} never reads {doc}"
                )
    assert marked == SKIPPED


def _environment(work: Path) -> dict[str, str]:
    """What a reader's shell has: haytham on PATH, git that knows who they are, an editor
    that closes without a change, and nothing that points haytham elsewhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAYTHAM_", "GIT_"))}
    home = work.parent / "home"
    home.mkdir(exist_ok=True)
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Ada",
        GIT_AUTHOR_EMAIL="ada@example.com",
        GIT_COMMITTER_NAME="Ada",
        GIT_COMMITTER_EMAIL="ada@example.com",
        EDITOR="true",
        VISUAL="true",
        NO_COLOR="1",
        CREWAI_DISABLE_TELEMETRY="true",
        CREWAI_DISABLE_TRACKING="true",
        CREWAI_TRACING_ENABLED="false",
        CREWAI_DISABLE_VERSION_CHECK="true",
        OTEL_SDK_DISABLED="true",
    )
    return env


def _run(command: str, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def _readme_clone(work: Path, env: dict[str, str]) -> None:
    """Where the README's reader stands after its first two commands: a clone of this
    repository (its ``projects/``, ``.venv``, ``examples/``; an ``origin`` to push to) in
    which ``python3 dev.py demo`` has run."""
    shutil.copytree(ROOT / "projects", work / "projects")
    (work / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    (work / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    origin = work.parent / "origin.git"
    for command in (
        f"git init -q --bare -b main {origin}",
        "git init -q -b main . && printf '.venv\\nexamples\\n' > .gitignore",
        f"git add -A && git commit -q -m clone && git remote add origin {origin} && git push -q origin main",
        f"{shlex.quote(sys.executable)} examples/idea_validation.py",  # python3 dev.py demo
    ):
        done = _run(command, work, env)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"


def _commands(block: Block) -> Iterator[tuple[str, list[str]]]:
    """The commands of a shell block with the output lines shown after each (console)."""
    lines = block.text.split("\n")
    if block.lang != "console":
        command = ""
        for line in lines:
            command += line
            if command.endswith("\\"):
                command = command[:-1]
                continue
            if command.strip() and not command.lstrip().startswith("#"):
                yield command, []
            command = ""
        return
    current: tuple[str, list[str]] | None = None
    for line in lines:
        if line.startswith("$ "):
            if current:
                yield current
            current = (line[2:], [])
        elif current and line.strip():
            current[1].append(line.strip())
    if current:
        yield current


def _check_install(block: Block, command: str) -> bool:
    """``pip install 'haytham[X]'``: not run; X is an extra of haytham, installed here."""
    match = re.fullmatch(r"pip install '?haytham\[(\w+)\]'?(\s+#.*)?", command.strip())
    if not match:
        return False
    extra = match.group(1)
    assert extra in (importlib.metadata.metadata("haytham").get_all("Provides-Extra") or []), (
        f"{block}: haytham has no extra {extra!r}"
    )
    for requirement in importlib.metadata.requires("haytham") or []:
        name, _, marker = requirement.partition(";")
        if re.search(rf"extra\s*==\s*['\"]{extra}['\"]", marker):
            project = re.split(r"[<>=!~\[ (]", name.strip(), maxsplit=1)[0]
            if project != "haytham":
                assert importlib.metadata.version(project), f"{block}: {project} of [{extra}] is missing"
    return True


def _run_shell(block: Block, work: Path, env: dict[str, str]) -> None:
    for command, shown in _commands(block):
        if _check_install(block, command):
            continue
        expected = re.search(r"#\s*exits (\d+)\b", command)
        done = _run(command, work, env)
        said = done.stdout + done.stderr
        code = int(expected.group(1)) if expected else 0
        assert done.returncode == code, f"{block}: `{command}` exited {done.returncode}:\n{said}"
        missing = [line for line in shown if line not in {s.strip() for s in said.split("\n")}]
        assert not missing, f"{block}: `{command}` did not print {missing}:\n{said}"


def _run_python(block: Block, namespace: dict[str, Any]) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.text, f"{block.doc} (block at line {block.line})", "exec"), namespace)
    lines = printed.getvalue().split("\n")
    for said in re.findall(r"^print\(.*\)\s+#\s*(.+)$", block.text, re.M):
        assert said.strip() in lines, f"{block}: printed {lines}, not {said.strip()!r}"


def _runs(block: Block) -> bool:
    """Whether the test runs ``block``: code, not marked, and no file to write."""
    return block.lang in RUNNABLE and block.marker is None and block.file_name is None


@pytest.mark.parametrize("doc", [doc for doc in DOCUMENTS if any(_runs(b) for b in blocks_of(doc))])
def test_the_code_blocks_run(
    doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_git: None
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = _environment(work)
    for key in [k for k in os.environ if k.startswith("HAYTHAM_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(work))  # the reader's modules (my_agents.py) import from here
    demo = work / "projects" / "demo" / "sessions" / "idea-001"
    if doc == "README.md":
        _readme_clone(work, env)
        before = _files(demo)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for block in blocks_of(doc):
        if block.marker is None and block.file_name:
            (work / block.file_name).write_text(block.text + "\n", encoding="utf-8")
        elif _runs(block) and block.lang == "python":
            _run_python(block, namespace)
        elif _runs(block):
            _run_shell(block, work, env)
    if doc == "README.md":  # the walk-through works on sessions of its own, never the demo's
        assert _files(demo) == before
        for project, session, state in [
            ("demo", "review-1", "completed"),
            ("demo", "crash-1", "completed"),
            ("acme", "dd-1", "awaiting_review"),
        ]:
            assert haytham.CheckpointManager(work / "projects").state(project, session).state == state


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_readme_starts_with_the_two_fresh_machine_commands() -> None:
    """A fresh machine needs only these two; CI runs the second as the README says."""
    first = blocks_of("README.md")[0]
    assert (first.lang, first.text.strip().split("\n")) == (
        "sh",
        ["python3 dev.py demo", "python3 dev.py test"],
    )
    assert "python3 dev.py test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


# ------------------------------------------------------------------------- references


PATH = re.compile(r"(?<![\w./{-])((?:haytham|docs|tests|examples|benchmarks|\.ci)/[\w./-]*[\w/])")
"""A path of the repository named in prose: ``haytham/store/fs.py``, ``docs/formats.md``."""


def test_the_paths_the_docs_name_exist() -> None:
    missing = []
    files = {p.name for p in ROOT.rglob("*.py") if ".venv" not in p.parts}
    for doc in DOCUMENTS:
        for number, line in enumerate(prose(doc).split("\n"), 1):
            for path in PATH.findall(line):
                if not (ROOT / path.rstrip(".")).exists():
                    missing.append(f"{doc}:{number}: {path}")
        for number, span in inline_code(doc):
            if re.fullmatch(r"[\w/]+/[\w]+\.py", span) and not PATH.fullmatch(span):
                if not (ROOT / span).exists() and not (ROOT / "haytham" / span).exists():
                    missing.append(f"{doc}:{number}: {span}")
            elif re.fullmatch(r"\w+\.py", span) and span not in files:
                missing.append(f"{doc}:{number}: {span}")
    assert missing == []


@cache
def _modules() -> dict[str, Any]:
    """Every module of haytham (the extras' too: the test environment has them)."""
    found = {"haytham": haytham}
    for info in pkgutil.walk_packages(haytham.__path__, "haytham."):
        if info.name != "haytham.__main__":
            found[info.name] = importlib.import_module(info.name)
    return found


@cache
def _defined() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The names haytham's source (and its tests') defines: functions and methods; every
    class, field, attribute (``self.x = ...``) and constant; and the strings it holds
    (``MayHaveRun``, the OpenTelemetry attribute ``haytham.session.id``), whole and each
    ``literal`` of its docstrings, found with ``ast``."""
    functions: set[str] = set()
    names: set[str] = set()
    strings: set[str] = set()
    for path in [*(ROOT / "haytham").rglob("*.py"), *(ROOT / "tests").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
                strings.update(re.findall(r"``([^`]+)``", node.value))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions.add(node.name)
            elif isinstance(node, ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name | ast.Attribute):
                names.add(node.target.id if isinstance(node.target, ast.Name) else node.target.attr)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        names.add(target.id)
                    elif isinstance(target, ast.Attribute):
                        names.add(target.attr)
    return frozenset(functions), frozenset(names | functions), frozenset(strings)


def _has(holder: Any, name: str) -> bool:
    """``holder.name`` exists: an attribute, or a field or instance attribute of a class."""
    if hasattr(holder, name):
        return True
    if inspect.isclass(holder):
        if dataclasses.is_dataclass(holder) and name in {f.name for f in dataclasses.fields(holder)}:
            return True
        for klass in holder.__mro__:
            if name in getattr(klass, "__annotations__", {}) or name in getattr(klass, "_fields", ()):
                return True
            with contextlib.suppress(OSError, TypeError):
                if re.search(rf"\bself\.{name}\b\s*[:=]", inspect.getsource(klass)):
                    return True
    return False


def _resolve(holder: Any, rest: list[str]) -> bool:
    for part in rest:
        if not _has(holder, part):
            return False
        holder = getattr(holder, part, None)
        if holder is None:
            return not rest[rest.index(part) + 1 :]  # a field: nothing follows it
    return True


def _named_by(first: str) -> list[Any]:
    """What ``first.…`` may refer to: haytham modules named ``first`` (``journal``,
    ``store.shown``), and haytham classes named ``first`` (``CheckpointManager``)."""
    holders: list[Any] = [m for name, m in _modules().items() if name.split(".")[-1] == first]
    for module in _modules().values():
        value = vars(module).get(first)
        if inspect.isclass(value) and value.__module__.startswith("haytham") and value not in holders:
            holders.append(value)
    return holders


EXTERNAL = {
    "AGENTS": "a reader's mapping of agent names (my_agents:AGENTS)",
    "BaseCheckpointSaver": "LangGraph's checkpointer base class",
    "DeltaChannel": "LangGraph",
    "FlowPersistence": "CrewAI's persistence base class",
    "HumanFeedbackPending": "CrewAI",
    "InMemorySaver": "LangGraph",
    "JsonPlusSerializer": "LangGraph",
    "MyFlowPersistence": "the reader's own store in docs/crewai.md",
    "PendingFeedbackContext": "CrewAI",
    "SQLiteFlowPersistence": "CrewAI",
    "SpanExporter": "OpenTelemetry",
    "SqliteSaver": "LangGraph",
    "StateGraph": "LangGraph",
    "TypedDict": "typing",
}
"""CamelCase names the docs use that are not haytham's, and whose they are."""


EXTERNAL_CALLS = {
    "interrupt": "LangGraph's interrupt()",
    "model_dump": "pydantic's",
    "http": "http(s): a URL's scheme",
}
"""Calls the docs show that are not haytham's, and whose they are."""
ALIASES = {"manager": "CheckpointManager"}
"""The examples' variables, by the class of haytham they hold (``manager.on``)."""


@cache
def _keys() -> frozenset[str]:
    """Every key of haytham's JSON Schemas: the files' and haytham.yaml's keys
    (``review.reviewer``, ``retry.max_attempts``) are data, not Python names."""
    keys: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            keys.update(node.get("properties", {}))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in (ROOT / "haytham" / "format" / "schemas").glob("*.json"):
        walk(json.loads(path.read_text(encoding="utf-8")))
    return frozenset(keys)


def _python_name_problem(span: str) -> str | None:
    """Why ``span`` (an inline code span) names nothing of haytham's, or None."""
    functions, names, strings = _defined()
    if span in strings or re.fullmatch(r"[\w.-]+\.(py|md|yaml|yml|json|toml|txt|html|lock|sqlite3)", span):
        return None  # a string haytham writes or reads, or a file's name (test_the_paths_...)
    dotted = re.fullmatch(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(\(.*\))?", span)
    if dotted:
        parts = dotted.group(1).split(".")
        if parts[0] == "haytham":
            for cut in range(len(parts), 0, -1):
                module = ".".join(parts[:cut])
                if module in _modules():
                    return None if _resolve(_modules()[module], parts[cut:]) else "not found"
            return "not found"
        if all(part in _keys() for part in parts):
            return None
        holders = _named_by(ALIASES.get(parts[0], parts[0]))
        if parts[0] in ALIASES:
            holders += _named_by(parts[0])
        if len(parts) > 2:  # store.shown.Shown: a module by its last two parts
            holders += [m for name, m in _modules().items() if name.endswith("." + ".".join(parts[:2]))]
            if any(_resolve(h, parts[2:]) for h in holders):
                return None
        if holders and not any(_resolve(h, parts[1:]) for h in holders):
            return "not found"
        return None
    call = re.fullmatch(r"([a-z_]\w*)\(.*\)", span)
    if call:
        name = call.group(1)
        known = name in functions or hasattr(builtins, name) or name in EXTERNAL_CALLS
        return None if known else "no such function"
    if re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+", span):
        known = span in names or span in EXTERNAL or hasattr(builtins, span)
        return None if known else "no such class"
    return None


def test_the_python_names_the_docs_give_exist() -> None:
    wrong = []
    for doc in DOCUMENTS:
        for number, span in inline_code(doc):
            problem = _python_name_problem(span)
            if problem:
                wrong.append(f"{doc}:{number}: `{span}`: {problem}")
    assert wrong == []


def _cli_spans(doc: str) -> Iterator[tuple[str, str]]:
    """Every ``haytham ...`` command line the document shows: in inline code, and in its shell
    blocks (skipped ones too), each with where it is."""
    for number, span in inline_code(doc):
        if span.startswith("haytham "):
            yield f"{doc}:{number}", span
    for block in blocks_of(doc):
        if block.lang in ("sh", "console", ""):
            for offset, line in enumerate(block.text.split("\n"), 1):
                line = line.removeprefix("$ ")
                for part in re.split(r"&&|\|\||;", line):
                    if part.strip().startswith("haytham "):
                        yield f"{doc}:{block.line + offset}", part.strip()


def _name(command: click.Command) -> str:
    return "haytham" if command is cli else f"haytham {command.name}"


def _cli_problem(command: str) -> str | None:
    """Why ``command`` is not a command line of haytham's click tree, or None."""
    words = re.split(r"\s+", re.split(r"\s#|\||>|`", command, maxsplit=1)[0].strip())[1:]
    here: click.Command = cli
    index = 0
    while isinstance(here, click.Group) and index < len(words) and not words[index].startswith("-"):
        word = words[index]
        if word in ("…", "...") or not word.islower():
            return None  # a placeholder for a command
        sub = here.get_command(click.Context(here), word)
        if sub is None:
            return f"no command {word!r} in `{_name(here)}`"
        here, index = sub, index + 1
    known = {opt for param in here.params for opt in (*param.opts, *param.secondary_opts)}
    known |= {"--help"} | ({"--version"} if here is cli else set())
    for word in words[index:]:
        for option in word.strip("[]()").split("/"):
            option = option.split("=", 1)[0].rstrip(",.:;")
            if re.fullmatch(r"--?[a-z][\w-]*", option) and option not in known:
                return f"`{_name(here)}` has no option {option}"
    return None


def test_the_commands_and_options_the_docs_give_exist() -> None:
    wrong = []
    for doc in DOCUMENTS:
        for where, command in _cli_spans(doc):
            problem = _cli_problem(command)
            if problem:
                wrong.append(f"{where}: `{command}`: {problem}")
    assert wrong == []


# ------------------------------------------------------------------- measured claims


@pytest.mark.parametrize("redo", [True, False], ids=["redo-record", "staged-files"])
def test_the_durability_calls_architecture_md_gives_are_those_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redo: bool
) -> None:
    """docs/architecture.md, "Fsyncs": the durability calls (``os.fsync``, ``os.fdatasync``,
    ``syncfs``) of a checkpoint save, a review and ``start_attempt``, counted around the
    fault harness's operations (``tests/fault_ops.py``)."""
    import fault_ops
    from workcount import counting

    from haytham.store import journal

    said = re.search(
        r"`save_checkpoint`, a review and `start_attempt` (\d+)\s+each \(staged: (\d+), (\d+) and (\d+)",
        " ".join(read("docs/architecture.md").split()),
    )
    assert said is not None, "docs/architecture.md no longer gives the counts this test checks"
    expected = [int(said.group(1))] * 3 if redo else [int(n) for n in said.group(2, 3, 4)]
    monkeypatch.setattr(journal, "REDO_LOG", redo)
    made = []
    for operation in ("save_checkpoint", "review", "start_attempt"):
        root = tmp_path / operation
        root.mkdir()
        getattr(fault_ops, f"setup_{operation}")(root)
        with counting(root) as counters:
            getattr(fault_ops, f"run_{operation}")(root)
        made.append(counters.fsyncs)
    assert made == expected
