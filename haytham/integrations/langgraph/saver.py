"""``HaythamSaver``: a LangGraph checkpointer that keeps each thread as a haytham session.

A thread is a session of the saver's project (``files.session_id_for``), created on its first
checkpoint with the one-phase ``langgraph`` workflow (``review.LANGGRAPH_WORKFLOW``). Each
checkpoint is one markdown file, ``langgraph/{namespace}/{checkpoint_id}.md``, holding every
channel value (so any checkpoint reads alone, and a diff of two shows what changed); its
pending writes are beside it in ``{checkpoint_id}.writes.md``. ``docs/langgraph.md`` shows
the files.

Writes go through the store: atomic, durable, and under the session's OS lock (the lock
every haytham save takes), so several processes can share one directory. Reads take no lock
and never write: every file is replaced whole, so a reader sees a checkpoint or not at all.
A read opens only the files it returns, and parses a file only when it is not the one the
saver parsed before (``cache.ThreadFiles``, keyed by each file's inode, size and times, so
a hand edit or a ``git pull`` is seen at the next read). The async methods run the same
code in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import INTERRUPT

if TYPE_CHECKING:  # langgraph-checkpoint 4.3 and later; nothing needs it at run time
    from langgraph.checkpoint.base import DeltaChannelHistory

    from haytham.store.manager import CheckpointManager

from haytham.errors import SessionExistsError, SessionNotFoundError, UnsafeNameError
from haytham.format.guard import guard_tree
from haytham.format.layout import (
    LANGGRAPH_DIR,
    LANGGRAPH_WRITES_SUFFIX,
    MANIFEST_FILE,
    REMOVING_SUFFIX,
    SESSIONS_DIR,
)
from haytham.integrations.langgraph import files
from haytham.integrations.langgraph.cache import OpenFolder, ThreadFiles
from haytham.store import fs
from haytham.store.names import check_name, check_user_id, is_safe_name

_Paths = list[Path]
_Writes = list[files.StoredWrite]
_Copies = list[tuple[str, str, str]]


def _subfolders(directory: Path) -> _Paths:
    """The folders in ``directory`` by name, hidden ones (a deletion under way) left out."""
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [directory / n for n in names if not n.startswith(".")]


def _namespace_dirs(thread_dir: Path) -> _Paths:
    """A thread's namespace folders (``langgraph/root``, ``langgraph/ns-...``)."""
    return _subfolders(thread_dir / LANGGRAPH_DIR)


def _sync_folder(directory: Path) -> None:
    """Make a write's swap in ``directory`` durable (``fs.atomic_write``'s last step), once
    the session's lock is let go: the writer that waited for the lock writes its file
    meanwhile, and the file system commits both swaps at once where it can. The call still
    returns only when its file is durable. A folder gone since (the thread deleted) has
    nothing left to make durable."""
    with contextlib.suppress(FileNotFoundError):
        fs.fsync_dir(directory)


class HaythamSaver(BaseCheckpointSaver[int]):
    """A ``BaseCheckpointSaver`` whose threads are haytham sessions of ``project``.

    ``HaythamSaver("projects", "langgraph")`` keeps thread ``t1`` in
    ``projects/langgraph/sessions/t1/``. ``review=True`` (the default) turns each
    ``interrupt()`` of the root graph into a phase awaiting review (``review.open_review``);
    ``resume_command`` reads the reviewer's answer back. ``serde`` is LangGraph's serializer
    for values that are neither text nor plain JSON (JsonPlusSerializer by default).
    """

    def __init__(
        self,
        base_dir: str | os.PathLike[str] = "projects",
        project: str = "langgraph",
        *,
        user_id: str = "langgraph",
        review: bool = True,
        lock_timeout: float = fs.DEFAULT_LOCK_TIMEOUT,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self.base_dir = Path(base_dir)
        self.project = check_name("project", project)
        self._sessions = self.base_dir / self.project / SESSIONS_DIR
        """The project's sessions folder (``Store.session_dir``'s layout, the names checked)."""
        self._sessions_path = os.fspath(self._sessions)
        self._lock_timeout = lock_timeout
        self._manager: CheckpointManager | None = None
        guard_tree(self.base_dir)  # every read below it stays inside it, as the manager's do
        self.user_id = check_user_id(user_id)
        self.review = review
        self._checked: set[str] = set()
        """Sessions this saver has seen to be LangGraph threads' (checked once each)."""
        self._files = ThreadFiles()
        """What the saver read of its threads' files, while they are unchanged."""
        self._writers: dict[str, threading.Lock] = {}
        """A thread lock per session this saver wrote to (``_one_writer``)."""
        self._writers_guard = threading.Lock()

    @property
    def manager(self) -> CheckpointManager:
        """The store's ``CheckpointManager`` of ``base_dir``, through which every write goes:
        made at the saver's first write (or the first call that asks for it), so a process
        that only reads checkpoints never imports the store's write path."""
        with self._writers_guard:
            if self._manager is None:
                from haytham.integrations.langgraph.review import LANGGRAPH_WORKFLOW
                from haytham.store.manager import CheckpointManager

                self._manager = CheckpointManager(
                    self.base_dir, lock_timeout=self._lock_timeout, workflows=[LANGGRAPH_WORKFLOW]
                )
            return self._manager

    def _ids(self, folder: Path) -> list[str]:
        """The checkpoint ids of a namespace folder, oldest first."""
        return self._files.listing(folder)[0]

    def _check_workflow(self, session_id: str, directory: Path) -> None:
        """Refuse to write into a session of another workflow that has the thread's id."""
        from haytham.integrations.langgraph.review import LANGGRAPH_WORKFLOW

        workflow = self.manager.load_manifest(self.project, session_id).workflow_type
        if workflow != LANGGRAPH_WORKFLOW.name:
            raise SessionExistsError(
                f"session {self.project}/{session_id} already exists at {directory} with workflow "
                f"{workflow!r}, not {LANGGRAPH_WORKFLOW.name!r}: it is not a LangGraph thread's, and was "
                "left untouched (use another project or thread id)",
                path=directory,
            )
        self._checked.add(session_id)

    # ------------------------------------------------------------------ places

    def session_id(self, thread_id: str) -> str:
        """The id of the session that keeps ``thread_id`` (``files.session_id_for``)."""
        return files.session_id_for(str(thread_id))

    def session_dir(self, thread_id: str) -> Path:
        """The folder of the thread's session (which may not exist yet)."""
        return self._sessions / self.session_id(thread_id)

    def _namespace_dir(self, thread_id: str, checkpoint_ns: str) -> Path:
        return Path(self._namespace_path(thread_id, checkpoint_ns))

    def _namespace_path(self, thread_id: str, checkpoint_ns: str) -> str:
        """The folder of a thread's namespace, as text: what a read of it needs (a
        ``get_tuple`` makes no ``Path``, whose parse of the parts costs more than its read's
        look-up of the newest id)."""
        return os.path.join(
            self._sessions_path,
            self.session_id(thread_id),
            LANGGRAPH_DIR,
            files.namespace_folder(checkpoint_ns),
        )

    @contextlib.contextmanager
    def _one_writer(self, session_id: str) -> Iterator[None]:
        """Let one of this saver's threads at a time into a session's writes.

        LangGraph's default ``async`` durability calls ``put`` and ``put_writes`` from several
        threads at once. The session's OS lock (``manager.lock``, taken inside this) keeps
        them apart too, but a thread that finds it held polls it with growing sleeps; waiting
        here first, a thread wakes the moment the one before it is done, and the OS lock is
        left to keep other processes out."""
        with self._writers_guard:
            writer = self._writers.setdefault(session_id, threading.Lock())
        with writer:
            yield

    @contextlib.contextmanager
    def _locked(self, session_id: str) -> Iterator[None]:
        """Hold a session's OS lock, one thread of this saver at a time (``_one_writer``)."""
        with self._one_writer(session_id), self.manager.lock(self.project, session_id):
            yield

    @contextlib.contextmanager
    def _locked_session(self, thread_id: str) -> Iterator[Path]:
        """Hold the lock of the thread's session, creating the session first if needed."""
        session_id = self.session_id(thread_id)
        from haytham.integrations.langgraph.review import LANGGRAPH_WORKFLOW, MODE

        directory = self._sessions / session_id
        entered = False
        with self._one_writer(session_id):
            for _ in range(100):
                if not (directory / MANIFEST_FILE).exists():
                    self.manager.create_session(
                        self.project, session_id, self.user_id, LANGGRAPH_WORKFLOW, MODE, exist_ok=True
                    )
                    self._checked.add(session_id)
                elif session_id not in self._checked:
                    self._check_workflow(session_id, directory)
                try:
                    with self.manager.lock(self.project, session_id):
                        if (directory / MANIFEST_FILE).exists():  # not deleted since
                            entered = True
                            yield directory
                            return
                except FileNotFoundError:
                    if entered:
                        raise
                    continue  # the folder went away (delete_thread) while we waited for its lock
        raise SessionNotFoundError(  # pragma: no cover - a delete_thread in a tight loop
            f"the session of thread {thread_id!r} kept being deleted while saving to it", path=directory
        )

    # ------------------------------------------------------------------ writing

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Write the checkpoint's file; return the config that names it."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        stored = files.StoredCheckpoint(
            thread_id,
            checkpoint_ns,
            dict(checkpoint),
            dict(get_serializable_checkpoint_metadata(config, metadata)),
            configurable.get("checkpoint_id"),
        )
        name = files.checkpoint_file(checkpoint["id"])
        text = files.render_checkpoint(stored, self.serde)
        with self._locked_session(thread_id):
            directory = self._namespace_dir(thread_id, checkpoint_ns)
            fs.make_dirs(directory)
            fs.atomic_write(directory / name, text, sync_folder=False)
        _sync_folder(directory)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Add a task's writes to the checkpoint's pending writes (a repeat changes nothing)."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = configurable["checkpoint_id"]
        name = files.writes_file(checkpoint_id)
        with self._locked_session(thread_id):
            directory = self._namespace_dir(thread_id, checkpoint_ns)
            path = directory / name
            kept = {w.key: w for w in self._read_writes(path)}
            for index, (channel, value) in enumerate(writes):
                key = (task_id, WRITES_IDX_MAP.get(channel, index))
                if key[1] >= 0 and key in kept:
                    continue
                kept[key] = files.StoredWrite(task_id, key[1], channel, value, task_path)
            text = files.render_writes(
                thread_id, checkpoint_ns, checkpoint_id, list(kept.values()), self.serde
            )
            fs.make_dirs(directory)
            fs.atomic_write(path, text, sync_folder=False)
        _sync_folder(directory)
        interrupts = [value for channel, value in writes if channel == INTERRUPT]
        if self.review and interrupts and checkpoint_ns == "":
            from haytham.integrations.langgraph.review import open_review

            open_review(
                self.manager.session(self.project, self.session_id(thread_id)), checkpoint_id, interrupts
            )

    def delete_thread(self, thread_id: str) -> None:
        """Remove the thread's session, its checkpoints and its review files."""
        session_id = self.session_id(thread_id)
        directory = self._sessions / session_id
        if not directory.is_dir():
            return
        hidden = directory.parent / f".{directory.name}{REMOVING_SUFFIX}"
        with self._locked(session_id):
            if not directory.is_dir():
                return
            if hidden.exists():
                shutil.rmtree(hidden)
            (directory / MANIFEST_FILE).unlink(missing_ok=True)  # no longer listed as a session
            os.rename(directory, hidden)
            fs.fsync_dir(directory.parent)
        self._files.forget(directory)
        shutil.rmtree(hidden, ignore_errors=True)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove every checkpoint (and its writes) whose metadata names one of ``run_ids``."""
        wanted = set(run_ids)
        if not wanted:
            return
        for thread_dir in self._thread_dirs():
            doomed = [
                (folder, checkpoint_id)
                for folder in _namespace_dirs(thread_dir)
                for checkpoint_id in self._ids(folder)
                if (stored := self._read_checkpoint(folder, checkpoint_id)) is not None
                and stored.metadata.get("run_id") in wanted
            ]
            if doomed:
                with self._locked(thread_dir.name):
                    for folder, checkpoint_id in doomed:
                        self._remove_checkpoint(folder, checkpoint_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and pending write of a thread into another thread."""
        source = self.session_dir(source_thread_id) / LANGGRAPH_DIR
        copies: _Copies = []  # (namespace folder, file name, text)
        for folder in _namespace_dirs(self.session_dir(source_thread_id)):
            for checkpoint_id in self._ids(folder):
                stored = self._read_checkpoint(folder, checkpoint_id)
                if stored is None:
                    continue
                moved = files.StoredCheckpoint(
                    str(target_thread_id),
                    stored.checkpoint_ns,
                    stored.checkpoint,
                    stored.metadata,
                    stored.parent_id,
                )
                copies.append(
                    (
                        folder.name,
                        files.checkpoint_file(checkpoint_id),
                        files.render_checkpoint(moved, self.serde),
                    )
                )
                writes = self._read_writes(folder / files.writes_file(checkpoint_id))
                if writes:
                    text = files.render_writes(
                        str(target_thread_id), stored.checkpoint_ns, checkpoint_id, writes, self.serde
                    )
                    copies.append((folder.name, files.writes_file(checkpoint_id), text))
        if not copies or not source.is_dir():
            return
        with self._locked_session(str(target_thread_id)) as target:
            for folder_name, name, text in copies:
                fs.make_dirs(target / LANGGRAPH_DIR / folder_name)
                fs.atomic_write(target / LANGGRAPH_DIR / folder_name / name, text)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep only each namespace's newest checkpoint (and remove what a
        killed writer left; a file under a name no checkpoint has is a person's, and stays);
        ``delete``: delete the threads. Other strategies: ValueError."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r} (expected keep_latest or delete)")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            directory = self.session_dir(thread_id)
            if not directory.is_dir():
                continue
            with self._locked(directory.name):
                for folder in _namespace_dirs(directory):
                    ids = [i for i in self._ids(folder) if is_safe_name(i)]  # no other file is one
                    for checkpoint_id in ids[:-1]:
                        self._remove_checkpoint(folder, checkpoint_id)
                    fs.remove_leftovers(folder)

    @staticmethod
    def _remove_checkpoint(folder: Path, checkpoint_id: str) -> None:
        (folder / files.writes_file(checkpoint_id)).unlink(missing_ok=True)
        (folder / files.checkpoint_file(checkpoint_id)).unlink(missing_ok=True)

    # ------------------------------------------------------------------ reading

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint the config names, or the thread's newest in its namespace."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        try:
            folder = self._namespace_path(thread_id, checkpoint_ns)
        except UnsafeNameError:
            return None
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is not None:
            try:
                pending = files.writes_file(checkpoint_id) in self._files.names(folder)
            except UnsafeNameError:
                return None
            return self._tuple(folder, checkpoint_id, pending)
        newest, pending = self._files.newest(folder)
        return None if newest is None else self._tuple(folder, newest, pending)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, of one thread (or all of the project's), one namespace
        (or all), matching every key of ``filter`` in their metadata, older than ``before``."""
        configurable = config["configurable"] if config else {}
        thread_id = configurable.get("thread_id")
        checkpoint_ns = configurable.get("checkpoint_ns")
        only_id = configurable.get("checkpoint_id")
        before_id = get_checkpoint_id(before) if before else None
        if limit is not None and limit <= 0:
            return
        if thread_id is not None:
            try:
                thread_dirs = [self.session_dir(str(thread_id))]
            except UnsafeNameError:
                return
        else:
            thread_dirs = self._thread_dirs()
        for thread_dir in thread_dirs:
            if checkpoint_ns is not None:
                folders = [thread_dir / LANGGRAPH_DIR / files.namespace_folder(checkpoint_ns)]
            else:
                folders = _namespace_dirs(thread_dir)
            for folder in folders:
                ids, names = self._files.listing(folder)
                with OpenFolder(os.fspath(folder)) as opened:  # closed when the caller stops, too
                    for checkpoint_id in reversed(ids):
                        if only_id and checkpoint_id != only_id:
                            continue
                        if before_id and checkpoint_id >= before_id:
                            continue
                        pending = checkpoint_id + LANGGRAPH_WRITES_SUFFIX in names
                        found = self._tuple(folder, checkpoint_id, pending, opened, scan=True)
                        if found is None:
                            continue
                        if filter and not all(found.metadata.get(k) == v for k, v in filter.items()):
                            continue
                        yield found
                        if limit is not None:
                            limit -= 1
                            if limit <= 0:
                                return

    def _thread_dirs(self) -> _Paths:
        """The project's session folders that hold LangGraph checkpoints."""
        return [d for d in _subfolders(self._sessions) if (d / LANGGRAPH_DIR).is_dir()]

    def _read_checkpoint(
        self, folder: str | Path, checkpoint_id: str, opened: OpenFolder | None = None, *, scan: bool = False
    ) -> files.StoredCheckpoint | None:
        """The checkpoint file of ``checkpoint_id`` (None without one); ``opened``: its folder
        open (``ThreadFiles.folder``); ``scan``: read by a call that reads the whole thread
        (``ThreadFiles.sections``)."""
        try:
            path = os.path.join(folder, files.checkpoint_file(checkpoint_id))  # no Path made per file
        except UnsafeNameError:
            return None
        sections = self._files.sections(path, opened, scan=scan)
        return None if sections is None else files.checkpoint_from(sections, self.serde, path)

    def _read_writes(
        self, path: str | Path, opened: OpenFolder | None = None, *, scan: bool = False
    ) -> _Writes:
        sections = self._files.sections(path, opened, scan=scan)
        return [] if sections is None else files.writes_from(sections, self.serde, path)

    def _tuple(
        self,
        folder: str | Path,
        checkpoint_id: str,
        pending: bool,
        opened: OpenFolder | None = None,
        *,
        scan: bool = False,
    ) -> CheckpointTuple | None:
        """The checkpoint and its pending writes; ``pending``: whether the writes file is
        among the folder's files (one that is not is not looked for); ``opened``: the folder
        open, when it is (``ThreadFiles.folder``); ``scan``: ``ThreadFiles.sections``'s."""
        stored = self._read_checkpoint(folder, checkpoint_id, opened, scan=scan)
        if stored is None:
            return None
        name = checkpoint_id + LANGGRAPH_WRITES_SUFFIX  # files.writes_file, the id checked by the read
        writes = self._read_writes(os.path.join(folder, name), opened, scan=scan) if pending else []

        def config_of(checkpoint_id: str) -> RunnableConfig:
            return {
                "configurable": {
                    "thread_id": stored.thread_id,
                    "checkpoint_ns": stored.checkpoint_ns,
                    "checkpoint_id": checkpoint_id,
                }
            }

        return CheckpointTuple(
            config=config_of(checkpoint_id),
            checkpoint=stored.checkpoint,  # type: ignore[arg-type]
            metadata=stored.metadata,  # type: ignore[arg-type]
            parent_config=config_of(stored.parent_id) if stored.parent_id else None,
            pending_writes=[(w.task_id, w.channel, w.value) for w in writes],
        )

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> dict[str, DeltaChannelHistory]:
        """What each of ``channels`` needs to be rebuilt at the checkpoint ``config`` names
        (or the thread's newest): the writes of its ancestors, oldest first and in
        ``writes_sort_key`` order within one, back to and including the nearest ancestor
        that holds a value of the channel (its ``seed``; none when no ancestor does).

        The same answer as ``BaseCheckpointSaver``'s default and ``SqliteSaver``'s, by a walk
        up the target's parent chain that reads each checkpoint file (and writes file) of
        the chain once, and no other; the target's own writes are pending, so left out. A
        chain that comes back to a checkpoint it walked stops there, as SQLite's does.
        """
        if not channels:
            return {}
        wanted = list(dict.fromkeys(channels))
        history: dict[str, DeltaChannelHistory] = {c: {"writes": []} for c in wanted}
        configurable = config["configurable"]
        try:
            folder = self._namespace_dir(
                str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")
            )
        except UnsafeNameError:
            return history
        ids, names = self._files.listing(folder)
        target_id = get_checkpoint_id(config) or (ids[-1] if ids else None)
        target = None if target_id is None else self._read_checkpoint(folder, target_id)
        if target is None:
            return history
        blocks: dict[str, list[_Writes]] = {c: [] for c in wanted}  # newest checkpoint first
        remaining = set(wanted)
        walked = {target.checkpoint["id"]}
        parent_id = target.parent_id
        while parent_id is not None and remaining and parent_id not in walked:
            walked.add(parent_id)
            stored = self._read_checkpoint(folder, parent_id)
            if stored is None:
                break
            name = files.writes_file(parent_id)
            writes = sorted(
                self._read_writes(folder / name) if name in names else [], key=lambda w: w.replay_key
            )
            values = stored.checkpoint.get("channel_values") or {}
            for channel in [c for c in wanted if c in remaining]:
                blocks[channel].append([w for w in writes if w.channel == channel])
                if channel in values:
                    history[channel]["seed"] = values[channel]
                    remaining.discard(channel)
            parent_id = stored.parent_id
        for channel in wanted:
            history[channel]["writes"] = [
                (w.task_id, w.channel, w.value) for block in reversed(blocks[channel]) for w in block
            ]
        return history

    # ------------------------------------------------------------------ async

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> dict[str, DeltaChannelHistory]:
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: [*self.list(config, filter=filter, before=before, limit=limit)]
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
