"""Render the legacy corpus: sessions and projects as the first public implementation wrote them.

The first public implementation of the product document is arslan70/haytham at commit 0be4019
(haytham/checkpoint/checkpoint_manager.py and haytham/project/project_manager.py). People who
adopt haytham bring folders written by it, so haytham must read them. This script is our own
description of what that code wrote (see README.md for each fact and where it comes from): a
small in-memory model of its writer (`LegacyTree`, one method per call of its public API), one
text function per file kind, and the cases, each a function that makes the calls one adopter's
run would have made. Every written file is recorded together with the values a correct reader
must return for it, computed from the call's arguments, never by reading the file back.

Run `python tests/legacy/render.py` to rewrite tests/legacy/corpus/ and tests/legacy/expected.json.
The clock and the uuids are fixed, so the output is the same on every run.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
EXPECTED = HERE / "expected.json"

# The built-in workflow: number -> (name, folder).
PHASES: dict[int, tuple[str, str]] = {
    1: ("Concept Expansion", "phase_1_concept"),
    2: ("Market Research", "phase_2_market_research"),
    3: ("Niche Selection", "phase_3_niche_selection"),
    4: ("Product Strategy", "phase_4_product_strategy"),
    5: ("Business Planning", "phase_5_business_planning"),
    6: ("Validation", "phase_6_validation"),
    7: ("Final Synthesis", "phase_7_synthesis"),
}
MODE_PHASES = {"mvp": (1, 2, 3, 6, 7), "full": (1, 2, 3, 4, 5, 6, 7)}

Json = dict[str, Any]


# ------------------------------------------------------------------ fixed clock and uuids


class Clock:
    """`datetime.utcnow().isoformat() + "Z"` with a fixed start and a fixed step per call.

    isoformat() leaves the fraction out when the microseconds are zero, so a tick that lands on a
    whole second is written `...T09:00:00Z`, every other one `...T09:00:03.250117Z`.
    """

    def __init__(self, start: datetime, step: timedelta = timedelta(seconds=3, microseconds=250117)):
        self.current = start
        self.step = step

    def now(self) -> str:
        stamp = self.current.isoformat() + "Z"
        self.current += self.step
        return stamp


def fixed_uuid(seed: str) -> str:
    """A version-4-shaped uuid that depends only on `seed` (the writer used uuid.uuid4())."""
    return str(uuid.UUID(bytes=hashlib.sha256(seed.encode()).digest()[:16], version=4))


# ------------------------------------------------------------------ the file kinds, as text


def one_decimal(seconds: float | None) -> str:
    """Durations in checkpoints and agent outputs: one decimal, `-` when zero or missing."""
    return f"{seconds:.1f}s" if seconds else "-"


def manifest_text(m: Json) -> str:
    rows = "".join(
        f"| {p['number']} | {p['name']} | {p['status']} | {p['started'] or '-'} | {p['completed'] or '-'}"
        f" | {'-' if p['duration'] is None else str(p['duration']) + 's'} |\n"
        for p in m["phases"]
    )
    cur = m["current"]
    return (
        "# Session Manifest\n\n## Metadata\n"
        f"- Session ID: {m['session_id']}\n- Project ID: {m['project_id']}\n- User ID: {m['user_id']}\n"
        f"- Workflow Type: {m['workflow_type']}\n- Execution Mode: {m['execution_mode']}\n"
        f"- Created: {m['created']}\n- Last Updated: {m['last_updated']}\n- Status: {m['status']}\n\n"
        "## Phase Status\n\n| Phase | Name | Status | Started | Completed | Duration |\n"
        f"|-------|------|--------|---------|-----------|----------|\n{rows}\n"
        f"## Current Phase\n- Phase: {cur['number']}\n- Name: {cur['name']}\n- Status: {cur['status']}\n"
        f"- Can Resume: {str(cur['can_resume']).lower()}\n\n"
        "## Metrics\n- Total Duration: 0s\n- Total Tokens: 0\n- Total Cost: $0.00\n"
    )


def checkpoint_text(
    n: int,
    status: str,
    started: str | None,
    completed: str | None,
    duration: float | None,
    retry_count: int,
    run_style: str,
    agents: list[Json],
    errors: list[str],
) -> str:
    name = PHASES[n][0]
    text = (
        f"# Phase Checkpoint: {name}\n\n## Metadata\n- Phase Number: {n}\n- Phase Name: {name}\n"
        f"- Status: {status}\n- Started: {started or '-'}\n- Completed: {completed or '-'}\n"
        f"- Duration: {one_decimal(duration)}\n- Retry Count: {retry_count}\n"
        f"- Execution Mode: {run_style}\n\n"
        "## Agents in Phase\n"
    )
    text += "".join(f"- {a.get('agent_name', 'unknown')}: {a.get('status', 'unknown')}\n" for a in agents)
    times = ", ".join(f"{a.get('agent_name', 'unknown')}: {a.get('duration') or 0:.1f}s" for a in agents)
    text += (
        f"\n## Inputs\n- Previous Phase: {PHASES.get(n - 1, ('None',))[0]}\n- Required Context: []\n"
        "- User Parameters: {}\n\n## Outputs\n"
        f"- Agent Outputs: [{', '.join(a.get('output_file', '') for a in agents)}]\n"
        "- User Feedback: user_feedback.md\n\n## Metrics\n"
        f"- Total Tokens: {sum(a.get('tokens') or 0 for a in agents)}\n"
        f"- Input Tokens: {sum(a.get('input_tokens') or 0 for a in agents)}\n"
        f"- Output Tokens: {sum(a.get('output_tokens') or 0 for a in agents)}\n"
        f"- Cost: ${sum(a.get('cost') or 0.0 for a in agents):.4f}\n"
        f"- Agent Execution Times: {times}\n\n## Next Phase\n"
        f"- Phase Number: {n + 1 if n < 7 else '-'}\n- Phase Name: {PHASES.get(n + 1, ('None',))[0]}\n"
        f"- Ready to Execute: {'true' if status == 'completed' else 'false'}\n"
        f"- Blocking Issues: {', '.join(errors) if errors else 'none'}\n"
    )
    if errors:
        text += "\n## Errors\n" + "".join(f"- {e}\n" for e in errors)
    return text


def agent_output_text(name: str, n: int, executed: str, a: Json) -> str:
    tools = a["tools_used"]
    text = (
        f"# Agent Output: {name}\n\n## Metadata\n- Agent: {name}\n- Phase: {n} - {PHASES[n][0]}\n"
        f"- Executed: {executed}\n- Duration: {one_decimal(a['duration'])}\n- Status: {a['status']}\n\n"
        f"## Execution Details\n- Model: {a['model'] or '-'}\n"
        f"- Input Tokens: {a['input_tokens'] or '-'}\n- Output Tokens: {a['output_tokens'] or '-'}\n"
        f"- Tools Used: [{', '.join(tools) if tools else 'none'}]\n\n## Output\n\n{a['content']}\n"
    )
    if has_error_details(a):
        text += (
            f"\n## Error Details\n- Error Type: {a['error_type'] or 'Unknown'}\n"
            f"- Error Message: {a['error_message'] or 'No message'}\n"
        )
        if a["stack_trace"]:
            text += f"- Stack Trace:\n```\n{a['stack_trace']}\n```\n"
    return text


def has_error_details(a: Json) -> bool:
    """The Error Details section is written only for status `failed` with a type or a message."""
    return a["status"] == "failed" and bool(a["error_type"] or a["error_message"])


def feedback_text(n: int, f: Json, timestamp: str) -> str:
    changes = (
        "".join(f"- Change {i}: {c}\n" for i, c in enumerate(f["changes"], 1)) or "- No changes requested\n"
    )
    return (
        f"# User Feedback: {PHASES[n][0]}\n\n## Review Status\n- Reviewed: {str(f['reviewed']).lower()}\n"
        f"- Approved: {str(f['approved']).lower()}\n- Timestamp: {timestamp}\n\n"
        f"## User Comments\n{f['comments'] or 'No comments provided'}\n\n"
        f"## Requested Changes\n{changes}\n"
        f"## Action Taken\n- Action: {f['action']}\n- Retry Count: {f['retry_count']}\n"
    )


def project_yaml_text(config: Json) -> str:
    """project.yaml is `yaml.dump(config, default_flow_style=False, sort_keys=False)`."""
    return yaml.dump(config, default_flow_style=False, sort_keys=False)


# ------------------------------------------------------------------ the writer, simulated


@dataclass
class LegacyTree:
    """The files the legacy writer leaves under its base folder `projects/`, with their expected values."""

    files: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    expected: dict[str, Json] = field(default_factory=dict)
    sessions: dict[str, Json] = field(default_factory=dict)
    manifests: dict[str, Json] = field(default_factory=dict)
    clock: Clock = field(default_factory=lambda: Clock(datetime(2024, 11, 24, 9, 0, 0, 120004)))
    case: str = ""

    # -- plumbing
    def write(self, path: str, text: str, expected: Json) -> None:
        self.files[path] = text
        self.expected[path] = {"case": self.case, **expected}
        self.mkdir(path.rsplit("/", 1)[0])

    def mkdir(self, path: str) -> None:
        parts = path.split("/")
        self.dirs.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))

    @staticmethod
    def session_dir(project_id: str, session_id: str) -> str:
        return f"projects/{project_id}/sessions/{session_id}"

    def phase_dir(self, project_id: str, session_id: str, n: int, must_exist: bool = True) -> str:
        path = f"{self.session_dir(project_id, session_id)}/{PHASES[n][1]}"
        if must_exist and path not in self.dirs:
            raise FileNotFoundError(f"Phase directory not found: {path}")  # the writer refused too
        return path

    def write_manifest(self, sdir: str, m: Json) -> None:
        self.manifests[sdir] = m
        self.write(f"{sdir}/session_manifest.md", manifest_text(m), {"kind": "manifest", **copy.deepcopy(m)})
        self.sessions.setdefault(sdir, {"case": self.case})

    def new_manifest(
        self, project_id: str, session_id: str, user_id: str, workflow: str, mode: str, now: str
    ) -> Json:
        phases = [
            {
                "number": n,
                "name": PHASES[n][0],
                "status": "pending",
                "started": None,
                "completed": None,
                "duration": None,
            }
            for n in MODE_PHASES[mode]
        ]
        return {
            "session_id": session_id,
            "project_id": project_id,
            "user_id": user_id,
            "workflow_type": workflow,
            "execution_mode": mode,
            "created": now,
            "last_updated": now,
            "status": "in_progress",
            "phases": phases,
            "current": {"number": 0, "name": "Not Started", "status": "pending", "can_resume": False},
            "metrics": {"total_duration": 0, "total_tokens": 0, "total_cost": 0.0},
        }

    # -- CheckpointManager
    def create_session(
        self,
        project_id: str,
        session_id: str,
        user_id: str,
        workflow_type: str = "idea_validation",
        execution_mode: str = "mvp",
    ) -> None:
        sdir = self.session_dir(project_id, session_id)
        for n in MODE_PHASES[execution_mode]:
            self.mkdir(f"{sdir}/{PHASES[n][1]}")  # empty folders: git does not keep them
        now = self.clock.now()
        self.write_manifest(
            sdir, self.new_manifest(project_id, session_id, user_id, workflow_type, execution_mode, now)
        )

    def save_checkpoint(
        self,
        project_id: str,
        session_id: str,
        n: int,
        status: str,
        agents: list[Json],
        started: str | None = None,
        completed: str | None = None,
        duration: float | None = None,
        retry_count: int = 0,
        execution_mode: str = "single",
        errors: list[str] | None = None,
        stale_manifest: Json | None = None,
    ) -> None:
        """`stale_manifest`: the manifest this writer read before another writer saved (a lost update)."""
        sdir = self.session_dir(project_id, session_id)
        pdir = self.phase_dir(project_id, session_id, n, must_exist=False)
        self.mkdir(pdir)
        errors = errors or []
        text = checkpoint_text(
            n, status, started, completed, duration, retry_count, execution_mode, agents, errors
        )
        self.write(
            f"{pdir}/checkpoint.md",
            text,
            {
                "kind": "checkpoint",
                "phase_number": n,
                "phase_name": PHASES[n][0],
                "status": status,
                "started": started or None,
                "completed": completed or None,
                "duration": float(f"{duration:.1f}") if duration else None,
                "retry_count": retry_count,
                "execution_mode": execution_mode,
                "agents": [
                    {"agent_name": a.get("agent_name", "unknown"), "status": a.get("status", "unknown")}
                    for a in agents
                ],
                "agent_outputs": [a["output_file"] for a in agents if a.get("output_file")],
                "previous_phase": PHASES[n - 1][0] if n > 1 else None,
                "total_tokens": sum(a.get("tokens") or 0 for a in agents),
                "input_tokens": sum(a.get("input_tokens") or 0 for a in agents),
                "output_tokens": sum(a.get("output_tokens") or 0 for a in agents),
                "cost": float(f"{sum(a.get('cost') or 0.0 for a in agents):.4f}"),
                "agent_execution_times": [
                    {
                        "agent_name": a.get("agent_name", "unknown"),
                        "seconds": float(f"{a.get('duration') or 0:.1f}"),
                    }
                    for a in agents
                ],
                "next_phase": n + 1 if n < 7 else None,
                "next_phase_name": PHASES[n + 1][0] if n < 7 else None,
                "ready_to_execute": status == "completed",
                "blocking_issues": ", ".join(errors) if errors else None,
                "errors": errors,
            },
        )
        if sdir not in self.manifests:
            return  # the writer skipped the manifest update when there was none
        m = copy.deepcopy(stale_manifest if stale_manifest is not None else self.manifests[sdir])
        for row in m["phases"]:  # a phase outside the mode has no row: nothing changes
            if row["number"] == n:
                row.update(
                    status=status,
                    started=started or None,
                    completed=completed or None,
                    duration=int(duration) if duration else None,
                )
        m["current"] = {
            "number": n,
            "name": PHASES[n][0],
            "status": status,
            "can_resume": status in ("in_progress", "failed"),
        }
        m["last_updated"] = self.clock.now()
        self.write_manifest(sdir, m)

    def save_agent_output(
        self,
        project_id: str,
        session_id: str,
        n: int,
        agent_name: str,
        content: str,
        status: str = "completed",
        duration: float | None = None,
        model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        tools_used: list[str] | None = None,
        error_type: str | None = None,
        error_message: str | None = None,
        stack_trace: str | None = None,
    ) -> None:
        pdir = self.phase_dir(project_id, session_id, n)
        a = {
            "content": content,
            "status": status,
            "duration": duration,
            "model": model,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "tools_used": tools_used or [],
            "error_type": error_type,
            "error_message": error_message,
            "stack_trace": stack_trace,
        }
        executed = self.clock.now()
        details = has_error_details(a)
        self.write(
            f"{pdir}/{agent_name}.md",
            agent_output_text(agent_name, n, executed, a),
            {
                "kind": "agent_output",
                "agent_name": agent_name,
                "phase_number": n,
                "phase_name": PHASES[n][0],
                "executed": executed,
                "duration": float(f"{duration:.1f}") if duration else None,
                "status": status,
                "model": model or None,
                "input_tokens": input_tokens or None,
                "output_tokens": output_tokens or None,
                "tools_used": list(tools_used or []),
                "content": content,
                "error_type": (error_type or "Unknown") if details else None,
                "error_message": (error_message or "No message") if details else None,
                "stack_trace": (stack_trace or None) if details else None,
            },
        )

    def save_user_feedback(
        self,
        project_id: str,
        session_id: str,
        n: int,
        reviewed: bool,
        approved: bool,
        comments: str = "",
        requested_changes: list[str] | None = None,
        action: str = "approved",
        retry_count: int = 0,
    ) -> None:
        pdir = self.phase_dir(project_id, session_id, n)
        f = {
            "reviewed": reviewed,
            "approved": approved,
            "comments": comments,
            "changes": requested_changes or [],
            "action": action,
            "retry_count": retry_count,
        }
        now = self.clock.now()
        self.write(
            f"{pdir}/user_feedback.md",
            feedback_text(n, f, now),
            {
                "kind": "feedback",
                "phase_name": PHASES[n][0],
                "reviewed": reviewed,
                "approved": approved,
                "timestamp": now,
                "comments": comments,
                "requested_changes": list(f["changes"]),
                "action": action,
                "retry_count": retry_count,
                "reviewer": None,  # the first implementation named no reviewer
                "justification": None,
                "raised_budget": None,
            },
        )

    # -- ProjectManager
    def create_project(
        self, user_id: str, startup_idea: str, project_name: str | None = None, execution_mode: str = "mvp"
    ) -> str:
        if project_name:
            safe = project_name.strip().replace(" ", "_").lower()
            safe = "".join(c if c.isalnum() or c == "_" else "_" for c in safe)
            project_id, counter = safe, 1
            while f"projects/{project_id}" in self.dirs:
                project_id, counter = f"{safe}_{counter}", counter + 1
        else:
            project_id = fixed_uuid(f"project:{user_id}:{startup_idea}")
        for sub in ("sessions", "outputs", "history"):
            self.mkdir(f"projects/{project_id}/{sub}")
        now = self.clock.now()
        config: Json = {
            "project_id": project_id,
            "user_id": user_id,
            "project_name": project_id,
            "startup_idea": startup_idea,
            "execution_mode": execution_mode,
            "created_at": now,
            "updated_at": now,
            "status": "active",
            "sessions": [],
            "current_version": 0,
            "metrics": {
                "total_sessions": 0,
                "completed_sessions": 0,
                "total_duration_seconds": 0,
                "total_tokens": 0,
                "total_cost": 0.0,
            },
            "user_preferences": dict.fromkeys(
                (
                    "target_niche",
                    "business_model",
                    "pricing_strategy",
                    "go_to_market_approach",
                    "risk_tolerance",
                    "target_region",
                )
            ),
        }
        self.save_config(project_id, config)
        entry = {
            "title": "Project Created",
            "date": now,
            "user": user_id,
            "idea": startup_idea,
            "mode": execution_mode,
        }
        text = (
            f"# Project Changelog\n\n## Project Created\n- **Date**: {now}\n- **User**: {user_id}\n"
            f"- **Idea**: {startup_idea}\n- **Mode**: {execution_mode}\n\n"
        )
        self.write(
            f"projects/{project_id}/history/changelog.md", text, {"kind": "changelog", "entries": [entry]}
        )
        return project_id

    def load_config(self, project_id: str) -> Json:
        """What the writer read back with yaml.safe_load before each change."""
        loaded: Json = yaml.safe_load(self.files[f"projects/{project_id}/project.yaml"])
        return loaded

    def save_config(self, project_id: str, config: Json) -> None:
        self.write(
            f"projects/{project_id}/project.yaml",
            project_yaml_text(config),
            {"kind": "project", "config": copy.deepcopy(config)},
        )

    def start_session(self, project_id: str, workflow_type: str = "idea_validation") -> str:
        config = self.load_config(project_id)
        session_id = fixed_uuid(f"session:{project_id}:{len(config['sessions'])}")
        now = self.clock.now()
        config["sessions"].append({"session_id": session_id, "started_at": now, "status": "in_progress"})
        config["metrics"]["total_sessions"] += 1
        config["updated_at"] = now
        config["latest_session"] = {
            "session_id": session_id,
            "started_at": now,
            "status": "in_progress",
            "current_phase": 0,
            "execution_mode": config["execution_mode"],
        }
        self.save_config(project_id, config)
        sdir = self.session_dir(project_id, session_id)
        self.mkdir(sdir)
        self.write_manifest(
            sdir,
            self.new_manifest(
                project_id, session_id, config["user_id"], workflow_type, config["execution_mode"], now
            ),
        )
        return session_id

    def complete_session(
        self, project_id: str, session_id: str, requirements: str, metrics: Json | None = None
    ) -> None:
        config = self.load_config(project_id)
        config["current_version"] += 1
        version = config["current_version"]
        out = f"projects/{project_id}/outputs"
        self.write(
            f"{out}/requirements_v{version}.md",
            requirements,
            {"kind": "requirements", "version": version, "content": requirements},
        )
        self.write(
            f"{out}/latest_requirements.md",
            requirements,
            {"kind": "requirements", "version": None, "content": requirements},
        )
        now = self.clock.now()
        for s in config["sessions"]:
            if s["session_id"] == session_id:
                s.update(status="completed", completed_at=now, version=version)
                break
        if metrics:
            config["metrics"]["total_duration_seconds"] += metrics.get("duration_seconds", 0)
            config["metrics"]["total_tokens"] += metrics.get("tokens", 0)
            config["metrics"]["total_cost"] += metrics.get("cost", 0.0)
        config["metrics"]["completed_sessions"] += 1
        config["updated_at"] = now
        if config.get("latest_session", {}).get("session_id") == session_id:
            config["latest_session"].update(status="completed", completed_at=now, version=version)
        self.save_config(project_id, config)
        log = f"projects/{project_id}/history/changelog.md"
        self.files[log] += (
            f"## Session Completed - Version {version}\n- **Date**: {now}\n- **Session ID**: {session_id}\n"
            f"- **Output**: requirements_v{version}.md\n\n"
        )
        self.expected[log]["entries"].append(
            {
                "title": f"Session Completed - Version {version}",
                "date": now,
                "session_id": session_id,
                "output": f"requirements_v{version}.md",
            }
        )

    def update_user_preferences(self, project_id: str, preferences: Json) -> None:
        config = self.load_config(project_id)
        config["user_preferences"].update(preferences)
        config["updated_at"] = self.clock.now()
        self.save_config(project_id, config)

    def archive_project(self, project_id: str) -> None:
        config = self.load_config(project_id)
        config["status"] = "archived"
        config["updated_at"] = self.clock.now()
        self.save_config(project_id, config)

    # -- not an API call: a file a person or a crash left behind
    def put(self, path: str, text: str, expected: Json) -> None:
        self.write(path, text, expected)


# ------------------------------------------------------------------ helpers for the cases


def agent(
    name: str,
    status: str = "completed",
    tokens: int = 0,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cost: float = 0.0,
    duration: float = 0.0,
) -> Json:
    """One entry of save_checkpoint's `agents`, as its callers built them."""
    return {
        "agent_name": name,
        "status": status,
        "output_file": f"{name}.md",
        "tokens": tokens,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost": cost,
        "duration": duration,
    }


def run_phase(
    t: LegacyTree,
    pid: str,
    sid: str,
    n: int,
    outputs: dict[str, str],
    *,
    run_style: str = "single",
    feedback: Json | None = None,
    model: str = "anthropic.claude-3-sonnet-20240229-v1:0",
    duration: float = 42.5,
) -> None:
    """One ordinary phase: checkpoint in progress, the agents' outputs, checkpoint completed, the review."""
    started = t.clock.now()
    names = list(outputs)
    t.save_checkpoint(
        pid,
        sid,
        n,
        "in_progress",
        [agent(a, "in_progress") for a in names],
        started=started,
        execution_mode=run_style,
    )
    for i, (name, content) in enumerate(outputs.items()):
        t.save_agent_output(
            pid,
            sid,
            n,
            name,
            content,
            duration=duration + i,
            model=model,
            input_tokens=1200 + 10 * n + i,
            output_tokens=300 + n,
            tools_used=["web_search"],
        )
    agents = [
        agent(
            a,
            tokens=1500 + 10 * n + 2 * i,
            input_tokens=1200 + 10 * n + i,
            output_tokens=300 + n,
            cost=0.0125 * (i + 1),
            duration=duration + i,
        )
        for i, a in enumerate(names)
    ]
    t.save_checkpoint(
        pid,
        sid,
        n,
        "completed",
        agents,
        started=started,
        completed=t.clock.now(),
        duration=duration * len(names) + 0.25,
        execution_mode=run_style,
    )
    t.save_user_feedback(
        pid,
        sid,
        n,
        **(feedback or {"reviewed": True, "approved": True, "comments": "Looks good.", "action": "approved"}),
    )


def doc(title: str, *lines: str) -> str:
    return f"# {title}\n\n" + "\n".join(lines) + "\n"


LONG_OUTPUT = "# Market sizing, region by region\n\n" + "".join(
    f"{i}. Region {i:04d}: TAM ${i * 37 % 1000}M, growth {i % 17}.{i % 10}%, incumbents {i % 7}\n"
    for i in range(1, 2001)
)

TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/app/haytham/agents/runner.py", line 88, in run\n'
    "    result = agent(prompt)\n"
    '  File "/app/.venv/lib/python3.11/site-packages/botocore/client.py", line 1023, in _make_api_call\n'
    "    raise error_class(parsed_response, operation_name)\n"
    "botocore.errorfactory.ThrottlingException: An error occurred (ThrottlingException) when calling the "
    "ConverseStream operation: Too many requests, please wait before trying again."
)


# ------------------------------------------------------------------ the cases


def case_mvp_complete(t: LegacyTree) -> None:
    """mvp session, every phase of the mode completed and approved; rich markdown outputs."""
    pid, sid = "proj-legacy", "sess-mvp-complete"
    t.create_session(pid, sid, "user-789")
    run_phase(
        t,
        pid,
        sid,
        1,
        {
            "concept_expansion": doc(
                "Concept", "A marketplace for **solo founders**.", "", "| a | b |", "|---|---|", "| 1 | 2 |"
            )
        },
    )
    run_phase(
        t,
        pid,
        sid,
        2,
        {
            "market_intelligence": doc(
                "Market size", "TAM is $4B.", "", "```python", "print('## Output')", "```"
            ),
            "competitor_analysis": "Competitors:\n\n1. Foo\n2. Bar\n",
        },
        run_style="parallel",
    )
    run_phase(t, pid, sid, 3, {"niche_selector": doc("Niche", "Solo founders in the EU.")})
    run_phase(t, pid, sid, 6, {"validator": doc("Validation", "- [x] demand", "- [ ] pricing")})
    run_phase(t, pid, sid, 7, {"synthesis": doc("Synthesis", "Go.")})


def case_full_run_styles(t: LegacyTree) -> None:
    """full session, phases 1 to 7 completed, every run style (single, parallel, sequential_interactive,
    sequential) and a model id with no tools."""
    pid, sid = "proj-legacy", "sess-full-run-styles"
    t.create_session(pid, sid, "user-789", execution_mode="full")
    styles = ["single", "parallel", "sequential_interactive", "sequential", "single", "parallel", "single"]
    for n, style in zip(range(1, 8), styles, strict=True):
        names = [f"agent_{n}_a", f"agent_{n}_b"] if style != "single" else [f"agent_{n}"]
        run_phase(
            t,
            pid,
            sid,
            n,
            {a: doc(PHASES[n][0], f"Output of {a}.") for a in names},
            run_style=style,
            model="gpt-4o",
        )


def case_failed_with_trace(t: LegacyTree) -> None:
    """A failed agent with type, message and stack trace; the phase fails with errors (Blocking Issues,
    ## Errors) and the manifest says Can Resume: true."""
    pid, sid = "proj-legacy", "sess-failed-trace"
    t.create_session(pid, sid, "user-789")
    run_phase(t, pid, sid, 1, {"concept_expansion": doc("Concept", "Fine.")})
    started = t.clock.now()
    t.save_checkpoint(
        pid, sid, 2, "in_progress", [agent("market_intelligence", "in_progress")], started=started
    )
    t.save_agent_output(
        pid,
        sid,
        2,
        "market_intelligence",
        "Partial research before the failure:\n\n- EU: 40%",
        status="failed",
        duration=12.3,
        model="gpt-4o",
        input_tokens=900,
        error_type="ThrottlingException",
        error_message="Too many requests, please wait",
        stack_trace=TRACE,
    )
    t.save_checkpoint(
        pid,
        sid,
        2,
        "failed",
        [agent("market_intelligence", "failed", tokens=900, input_tokens=900, duration=12.3)],
        started=started,
        completed=t.clock.now(),
        duration=12.9,
        errors=["market_intelligence: ThrottlingException", "retry budget left: 2"],
    )


def case_unclosed_fence(t: LegacyTree) -> None:
    """Failed agents whose output ends inside an unclosed code fence, so the appended Error Details sit
    inside the fence; one output contains `## Error Details` and `## Metadata` lines of its own."""
    pid, sid = "proj-legacy", "sess-unclosed-fence"
    t.create_session(pid, sid, "user-789")
    t.save_checkpoint(
        pid, sid, 1, "in_progress", [agent("concept_expansion", "in_progress")], started=t.clock.now()
    )
    t.save_agent_output(
        pid,
        sid,
        1,
        "concept_expansion",
        "Here is the schema:\n\n```yaml\nname: x\nsteps:\n  - one\n",
        status="failed",
        duration=3.5,
        model="gpt-4o",
        error_type="ReadTimeout",
        error_message="stream ended mid-response",
        stack_trace=TRACE,
    )
    t.save_agent_output(
        pid,
        sid,
        1,
        "critic",
        "## Metadata\n\nThe report below was quoted by the agent.\n\n## Error Details\n"
        "- Error Type: Fake\n\n~~~\nunclosed tilde fence",
        status="failed",
        duration=1.0,
        error_message="critic crashed",
    )
    t.save_checkpoint(
        pid,
        sid,
        1,
        "failed",
        [agent("concept_expansion", "failed"), agent("critic", "failed")],
        errors=["concept_expansion: ReadTimeout", "critic: Unknown"],
    )


def case_error_shapes(t: LegacyTree) -> None:
    """Every shape of error data: a multi-line message, a message ending in a newline, type only
    (message `No message`), message only (type `Unknown`), a trace only (no section at all), failed
    without error data (no section), and error data on a completed agent (no section)."""
    pid, sid = "proj-legacy", "sess-error-shapes"
    t.create_session(pid, sid, "user-789", execution_mode="full")
    t.save_checkpoint(pid, sid, 4, "in_progress", [], started=t.clock.now())
    out = "Draft strategy.\n"
    t.save_agent_output(
        pid,
        sid,
        4,
        "multi_line_message",
        out,
        status="failed",
        error_type="ValidationError",
        error_message="3 validation errors for Strategy\nprice\n  field required\n- Stack Trace: not really",
        stack_trace="Traceback (most recent call last):\n  ...\nValidationError",
    )
    t.save_agent_output(
        pid,
        sid,
        4,
        "message_trailing_newline",
        out,
        status="failed",
        error_type="KeyError",
        error_message="'pricing'\n",
    )
    t.save_agent_output(pid, sid, 4, "type_only", out, status="failed", error_type="TimeoutError")
    t.save_agent_output(pid, sid, 4, "message_only", out, status="failed", error_message="model refused")
    t.save_agent_output(pid, sid, 4, "trace_only", out, status="failed", stack_trace=TRACE)
    t.save_agent_output(pid, sid, 4, "failed_no_data", "", status="failed")
    t.save_agent_output(
        pid,
        sid,
        4,
        "completed_with_error_data",
        out,
        error_type="Warning",
        error_message="ignored because the status is completed",
    )
    names = [
        "multi_line_message",
        "message_trailing_newline",
        "type_only",
        "message_only",
        "trace_only",
        "failed_no_data",
        "completed_with_error_data",
    ]
    t.save_checkpoint(
        pid,
        sid,
        4,
        "failed",
        [agent(a, "completed" if a.startswith("completed") else "failed") for a in names],
        errors=["6 agents failed"],
    )


def case_crlf(t: LegacyTree) -> None:
    """Content with CRLF line ends (kept byte for byte), also in comments; a lone CR; a BOM-less
    mix of CRLF and LF lines."""
    pid, sid = "proj-legacy", "sess-crlf"
    t.create_session(pid, sid, "user-789")
    run_phase(
        t,
        pid,
        sid,
        1,
        {
            "concept_expansion": "# Concept\r\n\r\nLine one\r\nLine two\r\n",
            "windows_tool": "mixed\r\nline ends\nand a lone\rcarriage return\r\n```\r\ncode\r\n```",
        },
        run_style="parallel",
        feedback={
            "reviewed": True,
            "approved": True,
            "comments": "Pasted from Word:\r\nfirst line\r\nsecond line",
            "action": "approved",
        },
    )


def case_empty_and_long(t: LegacyTree) -> None:
    """An empty output, a whitespace-only output, leading and trailing blank lines (the legacy reader
    stripped them), and a very long output (2,000 lines)."""
    pid, sid = "proj-legacy", "sess-empty-long"
    t.create_session(pid, sid, "user-789")
    run_phase(
        t,
        pid,
        sid,
        1,
        {
            "empty": "",
            "whitespace_only": "  \n\n\t\n",
            "padded": "\n\n   indented first line\n\nlast line followed by blank lines\n\n\n",
            "long_report": LONG_OUTPUT,
        },
        run_style="parallel",
    )


def case_zero_values(t: LegacyTree) -> None:
    """Zero and missing numbers: tokens 0 and duration 0 written `-`, no model `-`, no tools `[none]`,
    a sub-tenth duration `0.0s`, a half-second phase that the manifest shows as `0s`, a checkpoint
    with no agents, and agents passed without output_file / agent_name (`[, ]`, `unknown`)."""
    pid, sid = "proj-legacy", "sess-zero-values"
    t.create_session(pid, sid, "user-789")
    t.save_checkpoint(pid, sid, 1, "in_progress", [])
    t.save_agent_output(
        pid, sid, 1, "zeros", "Nothing measured.\n", duration=0.0, input_tokens=0, output_tokens=0
    )
    t.save_agent_output(
        pid,
        sid,
        1,
        "tiny",
        "Quick.\n",
        duration=0.04,
        model="",
        input_tokens=1,
        output_tokens=0,
        tools_used=[],
    )
    t.save_checkpoint(
        pid,
        sid,
        1,
        "completed",
        [{"agent_name": "zeros", "status": "completed"}, {"status": "completed", "output_length": 7}],
        started="2024-11-24T11:00:00Z",
        completed="2024-11-24T11:00:00.500000Z",
        duration=0.5,
    )
    t.save_user_feedback(pid, sid, 1, reviewed=False, approved=False, action="approved")


def case_feedback_actions(t: LegacyTree) -> None:
    """Every feedback action the legacy code and its users wrote, one per phase of a full session:
    approved, retry, rejected, retry_with_changes, skip_phase, skip_stage, max_retries_exceeded;
    changes with newlines; comments that say `- Approved: true` while approved is false."""
    pid, sid = "proj-legacy", "sess-feedback-actions"
    t.create_session(pid, sid, "user-789", execution_mode="full")
    reviews = [
        {"reviewed": True, "approved": True, "comments": "", "action": "approved"},
        {
            "reviewed": True,
            "approved": False,
            "comments": "Please dig deeper into EU.\nAlso check pricing.",
            "requested_changes": ["Add EU market data", "Compare pricing tiers"],
            "action": "retry",
            "retry_count": 1,
        },
        {
            "reviewed": True,
            "approved": False,
            "comments": "Not this niche.\n- Approved: true\n## Action Taken",
            "action": "rejected",
        },
        {
            "reviewed": True,
            "approved": False,
            "comments": "",
            "requested_changes": ["Target: EU\nand UK", "- Change 9: nested", "Use `## Headings`"],
            "action": "retry_with_changes",
            "retry_count": 2,
        },
        {
            "reviewed": True,
            "approved": False,
            "comments": "Skipping business planning for now.",
            "action": "skip_phase",
        },
        {"reviewed": True, "approved": False, "comments": "", "action": "skip_stage"},
        {
            "reviewed": True,
            "approved": False,
            "comments": "Max retries (3) exceeded",
            "action": "max_retries_exceeded",
            "retry_count": 3,
        },
    ]
    for n, review in zip(range(1, 8), reviews, strict=True):
        run_phase(t, pid, sid, n, {f"agent_{n}": doc(PHASES[n][0], "Body.")}, feedback=review)


def case_retry_then_approve(t: LegacyTree) -> None:
    """A phase saved in_progress, failed, requires_retry, then completed with retry_count 2; its agent
    output and feedback overwritten (retry, then approved). The manifest's Current Phase follows the
    last save, so it moves back from 3 to 2."""
    pid, sid = "proj-legacy", "sess-retry"
    t.create_session(pid, sid, "user-789")
    run_phase(t, pid, sid, 1, {"concept_expansion": doc("Concept", "v1")})
    started = t.clock.now()
    t.save_checkpoint(
        pid, sid, 2, "in_progress", [agent("market_intelligence", "in_progress")], started=started
    )
    t.save_agent_output(pid, sid, 2, "market_intelligence", "First try.\n", duration=20.0)
    t.save_checkpoint(
        pid,
        sid,
        2,
        "failed",
        [agent("market_intelligence", "completed")],
        started=started,
        errors=["review failed"],
    )
    t.save_user_feedback(pid, sid, 2, True, False, "Too thin.", ["More sources"], "retry", 1)
    t.save_checkpoint(
        pid, sid, 3, "in_progress", [agent("niche_selector", "in_progress")], started=t.clock.now()
    )
    t.save_checkpoint(pid, sid, 2, "requires_retry", [agent("market_intelligence", "pending")], retry_count=1)
    t.save_agent_output(pid, sid, 2, "market_intelligence", "Second try, with sources.\n", duration=31.7)
    t.save_checkpoint(
        pid,
        sid,
        2,
        "completed",
        [agent("market_intelligence", duration=31.7)],
        started=started,
        completed=t.clock.now(),
        duration=95.0,
        retry_count=2,
    )
    t.save_user_feedback(pid, sid, 2, True, True, "Better.", action="approved", retry_count=2)


def case_phase_outside_mode(t: LegacyTree) -> None:
    """mvp session with phases 4 and 5 saved: their folders hold checkpoint, output and feedback (phase
    5's with action `skipped`), but the manifest has no rows for them (only Current Phase moves)."""
    pid, sid = "proj-legacy", "sess-outside-mode"
    t.create_session(pid, sid, "user-789")
    run_phase(t, pid, sid, 1, {"concept_expansion": doc("Concept", "c")})
    run_phase(t, pid, sid, 4, {"product_strategy": doc("Strategy", "s")})
    t.save_checkpoint(pid, sid, 5, "skipped", [])
    t.save_user_feedback(pid, sid, 5, True, False, "Not needed for the MVP.", action="skipped")


def case_whole_second_clock(t: LegacyTree) -> None:
    """A clock that lands on whole seconds: isoformat() then leaves out the fraction (`...T08:00:00Z`)."""
    t.clock = Clock(datetime(2025, 1, 2, 8, 0, 0), timedelta(seconds=1))
    pid, sid = "proj-legacy", "sess-whole-seconds"
    t.create_session(pid, sid, "user-zoë")
    run_phase(t, pid, sid, 1, {"concept_expansion": doc("Concept", "Zoë's idea.")})


def case_reset_and_lost_update(t: LegacyTree) -> None:
    """Two writer defects: a second create_session on the same session reset its manifest (the phase
    folders stay), and two writers of the manifest lost an update (phase 2 shows pending although its
    checkpoint says completed)."""
    pid = "proj-defects"
    t.create_session(pid, "sess-reset", "user-789")
    run_phase(t, pid, "sess-reset", 1, {"concept_expansion": doc("Concept", "before the reset")})
    t.create_session(pid, "sess-reset", "user-789")
    sid = "sess-lost-update"
    t.create_session(pid, sid, "user-789")
    run_phase(t, pid, sid, 1, {"concept_expansion": doc("Concept", "c")})
    stale = copy.deepcopy(t.manifests[t.session_dir(pid, sid)])
    t.save_checkpoint(pid, sid, 2, "completed", [], completed=t.clock.now(), duration=5.0)
    t.save_checkpoint(pid, sid, 3, "in_progress", [], started=t.clock.now(), stale_manifest=stale)


def case_projects(t: LegacyTree) -> None:
    """Projects made by its ProjectManager: odd names and ids, a name clash, a uuid id, sessions it
    started (Phase 0, no phase folders), requirement versions, preferences and an archived project."""
    t.clock = Clock(datetime(2024, 12, 1, 14, 30, 0, 5), timedelta(minutes=7, microseconds=313))
    cafe = t.create_project("grace@example.com", "Find quiet cafés to work from.", "Café Finder!")
    s1 = t.start_session(cafe)
    t.complete_session(
        cafe,
        s1,
        doc("Requirements v1", "- Map of cafés", "- Noise ratings"),
        {"duration_seconds": 1830, "tokens": 48210, "cost": 0.4821},
    )
    t.start_session(cafe)

    clash = t.create_project("user-zoë", "The same name again, by someone else.", "café finder?")
    t.start_session(clash)

    anon = t.create_project("user-zoë", "No name given, so the id is a uuid.", None, "full")
    s = t.start_session(anon)
    run_phase(t, anon, s, 1, {"concept_expansion": doc("Concept", "Continued by CheckpointManager.")})

    pets = t.create_project(
        "ops@pets.example",
        "Pet food subscriptions: weekly boxes, 'vet-approved' recipes, and a #1 guarantee.\n"
        "Second line of the idea, long enough that yaml folds it: " + "fresh food " * 12,
        "  Pet Food Subscriptions  ",
    )
    for i, metrics in enumerate(
        [{"duration_seconds": 600.5, "tokens": 1000, "cost": 0.1}, None, {"tokens": 500, "cost": 0.2}]
    ):
        s = t.start_session(pets)
        if i != 1:
            t.complete_session(pets, s, f"# Requirements\r\n\r\nVersion from session {i}.\r\n", metrics)
    t.update_user_preferences(pets, {"target_niche": "cat owners", "risk_tolerance": "low", "budget": 5000})
    t.archive_project(pets)

    home = t.create_project("u1", "Smart home energy coach", "Smart Home (v2)", "full")
    t.start_session(home)


HAND_EDITED_FEEDBACK = """\
# User Feedback: Concept Expansion

## Review Status
- Reviewed: true
- Approved: true
- Timestamp: 2024-11-25T08:15:00Z

## User Comments
I changed my mind after a night's sleep, so I edited this file by hand.

It is fine as it is.

## Requested Changes
- Change 1: Mention the EU later
- Change 2: Keep the name

## Action Taken
- Action: approved
- Retry Count: 1
"""


def case_hand_written(t: LegacyTree) -> None:
    """Files no API call wrote: a feedback file a person edited (flipped to approved, new changes) and
    the leftovers of crashes during plain write_text (an agent output and a manifest cut short)."""
    pid, sid = "proj-defects", "sess-hand-edited"
    t.create_session(pid, sid, "user-789")
    run_phase(
        t,
        pid,
        sid,
        1,
        {"concept_expansion": doc("Concept", "c")},
        feedback={"reviewed": True, "approved": False, "comments": "Hmm.", "action": "retry"},
    )
    feedback = f"{t.phase_dir(pid, sid, 1)}/user_feedback.md"
    t.put(
        feedback,
        HAND_EDITED_FEEDBACK,
        {
            "kind": "feedback",
            "phase_name": "Concept Expansion",
            "reviewed": True,
            "approved": True,
            "timestamp": "2024-11-25T08:15:00Z",
            "comments": "I changed my mind after a night's sleep, so I edited this file by hand.\n\n"
            "It is fine as it is.",
            "requested_changes": ["Mention the EU later", "Keep the name"],
            "action": "approved",
            "retry_count": 1,
            "reviewer": None,
            "justification": None,
            "raised_budget": None,
        },
    )

    sid = "sess-crash"
    t.create_session(pid, sid, "user-789")
    run_phase(t, pid, sid, 1, {"concept_expansion": doc("Concept", "complete file")})
    output = f"{t.phase_dir(pid, sid, 1)}/concept_expansion.md"
    t.put(output, t.files[output][:200], {"kind": "agent_output", "damaged": "cut short inside the header"})
    manifest = f"{t.session_dir(pid, sid)}/session_manifest.md"
    t.put(manifest, t.files[manifest][:500], {"kind": "manifest", "damaged": "cut short inside the table"})


CASES: list[Callable[[LegacyTree], None]] = [
    case_mvp_complete,
    case_full_run_styles,
    case_failed_with_trace,
    case_unclosed_fence,
    case_error_shapes,
    case_crlf,
    case_empty_and_long,
    case_zero_values,
    case_feedback_actions,
    case_retry_then_approve,
    case_phase_outside_mode,
    case_whole_second_clock,
    case_reset_and_lost_update,
    case_projects,
    case_hand_written,
]


def build() -> LegacyTree:
    """Run every case on one tree; each case starts its own fixed clock."""
    t = LegacyTree()
    for i, case in enumerate(CASES):
        t.case = case.__name__.removeprefix("case_")
        t.clock = Clock(datetime(2024, 11, 24, 9, 0, 0, 120004) + i * timedelta(days=1, seconds=7))
        case(t)
    for sdir, info in t.sessions.items():
        in_session = {p: e for p, e in t.expected.items() if p.startswith(sdir + "/") and "damaged" not in e}
        info["approved_phases"] = sorted(
            n
            for n, (_, folder) in PHASES.items()
            if in_session.get(f"{sdir}/{folder}/user_feedback.md", {}).get("approved")
        )
        info["checkpoints"] = {
            str(e["phase_number"]): e["status"]
            for p, e in sorted(in_session.items())
            if e["kind"] == "checkpoint"
        }
    return t


def expected_json(t: LegacyTree) -> str:
    data = {
        "generator": "tests/legacy/render.py (regenerate with: python tests/legacy/render.py)",
        "files": dict(sorted(t.expected.items())),
        "sessions": dict(sorted(t.sessions.items())),
    }
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def render(out_dir: Path) -> str:
    """Write the corpus under `out_dir` (its `projects/` tree) and return the text of expected.json."""
    t = build()
    for d in sorted(t.dirs):
        (out_dir / d).mkdir(parents=True, exist_ok=True)
    for path, text in t.files.items():
        (out_dir / path).write_bytes(text.encode("utf-8"))  # bytes: no newline translation
    return expected_json(t)


def main() -> int:
    shutil.rmtree(CORPUS, ignore_errors=True)
    CORPUS.mkdir()
    EXPECTED.write_text(render(CORPUS), encoding="utf-8", newline="\n")
    print(f"wrote {CORPUS} and {EXPECTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
