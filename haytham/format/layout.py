"""Where everything lives on disk: the one home of every file and folder name haytham uses.

A tree looks like this (``docs/formats.md`` describes each file)::

    {base_dir}/
        haytham.yaml                      (optional settings)
        .gitignore                        (ignores the names in GITIGNORED)
        .haytham-cache/index.sqlite3      (a rebuildable index)
        {project_id}/
            project.yaml  latest_requirements.md  outputs/  history/changelog.md
            sessions/{session_id}/
                session_manifest.md  workflow.yaml  history/{time}_{id}.md  .haytham.lock
                .haytham-run.lease  claim.json    (a running runner; a worker host's claim)
                phase_{n}_{slug}/
                    checkpoint.md  {agent}.md  user_feedback.md
                    attempts/{n}/...
                langgraph/{namespace}/{checkpoint_id}.md      (a LangGraph thread's checkpoints)

Every other module takes these names from here instead of spelling them out.
"""

from __future__ import annotations

from haytham.format.patterns import lazy

FORMAT_VERSION = 1
"""The format version this haytham writes (docs/formats.md, "Versions"). Files without a
version line are version 0, the first implementation's; ``haytham migrate`` rewrites them."""
FORMAT_LABEL = "Format"
"""The label of the version line, ``- Format: 1``, last in each markdown kind's metadata."""

CONFIG_FILE = "haytham.yaml"
"""Settings of a tree (``storage.base_dir``, retention), found in the working directory."""
DEFAULT_BASE_DIR = "projects"
"""The base directory when neither an option, ``HAYTHAM_BASE_DIR`` nor the settings name one."""
BASE_DIR_VARIABLE = "HAYTHAM_BASE_DIR"
"""The environment variable that names the base directory."""
REVIEWER_VARIABLE = "HAYTHAM_REVIEWER"
"""The environment variable that names who reviews, when ``--reviewer`` does not say."""

SESSIONS_DIR = "sessions"
"""A project's folder of sessions."""
MANIFEST_FILE = "session_manifest.md"
CHECKPOINT_FILE = "checkpoint.md"
FEEDBACK_FILE = "user_feedback.md"
WORKFLOW_FILE = "workflow.yaml"
"""A session's own copy of a custom workflow."""
HISTORY_DIR = "history"
"""A session's history entries; in a project, the changelog's folder."""
ATTEMPTS_DIR = "attempts"
"""Earlier attempts of a phase, ``attempts/{n}/``."""
PHASE_DIR_PREFIX = "phase_"
PHASE_DIR = lazy(r"phase_(\d+)_")
"""How a phase folder's name starts: ``phase_{n}_{slug}``."""
HISTORY_ENTRY_NAME = lazy(r"\d{8}T\d{6}(?:\.\d+)?Z_[0-9a-f]{12}\.md")
"""A history entry's file name: ``{time}_{id}.md``."""

PROJECT_FILE = "project.yaml"
OUTPUTS_DIR = "outputs"
"""A project's versioned requirements."""
CHANGELOG_FILE = "changelog.md"
"""A project's changelog, inside its ``history/`` folder."""
LATEST_FILE = "latest_requirements.md"
REQUIREMENTS_TIMED = lazy(r"requirements_([0-9]{8}T[0-9]{6}(?:\.[0-9]{1,6})?Z)_(.+)\.md")
"""In ``OUTPUTS_DIR``: a version named by its completion time (``20241124T100004Z``) and
session id, ``requirements_{time}_{session_id}.md`` (a second completion adds ``~2``...)."""
REQUIREMENTS_NUMBERED = lazy(r"requirements_v([1-9][0-9]*)\.md")
"""In ``OUTPUTS_DIR``: a version numbered in its name, as haytham wrote them before versions
were named by time."""
USERS_DIR = "_users"
"""Per-user preferences, beside the projects."""
PREFERENCES_FILE = "preferences.yaml"
"""A user's preferences: ``_users/{folder}/preferences.yaml``."""

LOCK_FILE = ".haytham.lock"
"""The OS lock of a session or project folder (holds no data)."""
LEASE_FILE = ".haytham-run.lease"
"""A session's run lease: the OS lock a runner holds for a whole run, and who holds it
(never committed; reads never take or write it)."""
CLAIM_FILE = "claim.json"
"""A session's claim by a worker host (committed and pushed; the push decides the winner)."""
TMP_SUFFIX = ".haytham-tmp"
"""A file being written; renamed over its target when complete."""
STAGING_SUFFIX = ".haytham-staging"
"""A session folder being assembled by fork or import."""
REPLACED_SUFFIX = ".haytham-replaced"
"""A session folder being replaced by an overwriting import."""
TRASH_SUFFIX = ".haytham-trash"
"""A folder being deleted (a project, a replaced session): renamed away first, then removed."""
REMOVING_SUFFIX = ".removing"
"""A session or attempt that retention is removing: renamed ``.{name}.removing`` first."""
JOURNAL_FILE = ".haytham-journal"
"""The record of a multi-file operation in progress (``haytham.store.journal``)."""
INDEX_DIR = ".haytham-cache"
INDEX_FILE = "index.sqlite3"
NOTIFY_FAILURES_FILE = "notify-failures.log"
"""In ``INDEX_DIR``: the ``notify:`` deliveries that failed, one JSON object a line
(``haytham.notify``), shown by ``haytham doctor``."""
GITATTRIBUTES_FILE = ".gitattributes"
KEPT_DIR = ".haytham-kept"
"""At the top of a clone: the files an interrupted run left uncommitted, set aside by
``haytham sync`` out of a merge's way (``haytham.git.recovery``), each set with a note."""
KEPT_NOTE_FILE = "KEPT.md"
"""The note in each set of ``KEPT_DIR``: what was kept, and why."""

CREWAI_DIR = "crewai"
"""A CrewAI flow run's pointers inside its session (``haytham.integrations.crewai``):
``crewai/flow.json`` names the phase with the newest state and the one awaiting feedback."""
CREWAI_FLOW_FILE = "flow.json"
"""In ``CREWAI_DIR``: a CrewAI flow run's pointers."""
LANGGRAPH_DIR = "langgraph"
"""A LangGraph thread's checkpoints inside its session (``haytham.integrations.langgraph``):
``langgraph/{namespace}/{checkpoint_id}.md``, pending writes in ``{checkpoint_id}.writes.md``."""
LANGGRAPH_ROOT_NAMESPACE = "root"
"""The folder of a LangGraph thread's root namespace (``checkpoint_ns`` ``""``)."""
LANGGRAPH_NAMESPACE_PREFIX = "ns-"
"""How the folder of any other namespace (a subgraph's) starts."""
LANGGRAPH_WRITES_SUFFIX = ".writes.md"
"""The pending writes of a checkpoint, beside it: ``{checkpoint_id}.writes.md``."""

OWN_SESSION_FILES = frozenset({CHECKPOINT_FILE, FEEDBACK_FILE, MANIFEST_FILE})
"""Markdown files in a session that are not agent outputs."""
