"""The app's jobs, through the job description: submit a job of N seconds and read its state
(queued/running/done/failed) and how many times it ran, each command run in a Ready pod of a
role (exec) or as a Kubernetes Job from a role's pod template (jobform)."""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any, Mapping

from .jobform import START_SECONDS, job_manifest
from .kube import Kube, ready

TERMINAL = ("done", "failed")


@dataclass(frozen=True)
class JobState:
    """One reading of a job: our state word, the app's, and its runs (None: not told)."""

    state: str
    raw: str
    runs: int | None


def parse_json(out: str) -> Any:
    """The command's JSON output: all of stdout, else its last line that is JSON (apps log
    to stdout too)."""
    try:
        return json.loads(out)
    except ValueError:
        for line in reversed(out.strip().splitlines()):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise AssertionError(f"the command printed no JSON: {out[-300:]!r}")


def _dig(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, list) and part.lstrip("-").isdigit():
            data = data[int(part)]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            raise KeyError(f"no `{path}` in the command's output")
    return data


class AppJobs:
    """Runs the described commands of one release's roles."""

    def __init__(self, kube: Kube, namespace: str, release: str, roles: Mapping[str, Mapping[str, Any]]) -> None:
        self.kube, self.namespace, self.release, self.roles = kube, namespace, release, roles
        self.as_jobs = 0  # commands run as Kubernetes Jobs (the Job form), every try

    def _run(self, cmd: Mapping[str, Any], subst: Mapping[str, str], retry_for: float = 120) -> str:
        argv = list(cmd["argv"])
        for key, value in subst.items():  # plain replacement: other braces (JSON arguments) stay
            argv = [a.replace("{" + key + "}", value) for a in argv]
        if cmd.get("mode") == "job":
            return self._run_job(cmd, argv, retry_for)
        deadline = time.monotonic() + retry_for
        last = "no Ready pod"
        while True:
            pods = [p for p in self.kube.role_pods(self.namespace, self.release, cmd["role"]) if ready(p)]
            for pod in pods:
                try:
                    rc, out, err = self.kube.exec(self.namespace, pod.metadata.name, cmd["container"], argv,
                                                  cmd["timeout"])
                except Exception as exc:  # noqa: BLE001 - a pod that went away: try another
                    last = f"{pod.metadata.name}: {type(exc).__name__}: {exc}"
                    continue
                if rc == 0:
                    return out
                last = f"{pod.metadata.name}: exit {rc}: {(err or out)[-500:]}"
            if time.monotonic() > deadline:
                raise AssertionError(f"`{' '.join(argv)}` in a Ready pod of role {cmd['role']} failed: {last}")
            time.sleep(2)

    def _run_job(self, cmd: Mapping[str, Any], argv: list[str], retry_for: float) -> str:
        """argv as a Kubernetes Job from role cmd["role"]'s pod template (jobform); a failed run
        is tried again, with a new Job, for up to retry_for s."""
        deadline = time.monotonic() + retry_for
        while True:
            template = self.kube.role_template(self.namespace, self.release, cmd["role"])
            name = f"live-{cmd['role'][:40]}-{secrets.token_hex(3)}".lower()
            manifest = job_manifest(name, template, cmd["container"], argv, cmd.get("image") or "", cmd["timeout"])
            self.as_jobs += 1
            rc, out = self.kube.run_job(self.namespace, manifest, cmd["container"], cmd["timeout"] + START_SECONDS + 30)
            if rc == 0:
                return out
            if time.monotonic() > deadline:
                raise AssertionError(f"`{' '.join(argv)}` as a Job from role {cmd['role']}'s pod template failed: "
                                     f"exit {rc}: {out[-500:]}")
            time.sleep(2)

    def submit(self, role: str, seconds: int) -> str:
        """Submit one job of `seconds` s for `role`; its id."""
        cmd = self.roles[role]["submit"]
        out = self._run(cmd, {"seconds": str(seconds)})
        if cmd["id_pattern"]:
            m = re.search(cmd["id_pattern"], out)
            if not m:
                raise AssertionError(f"submit printed no id matching {cmd['id_pattern']!r}: {out[-300:]!r}")
            return m.group(1)
        return str(_dig(parse_json(out), cmd["id_path"]))

    def read(self, role: str, job_id: str) -> JobState:
        """The job's state now."""
        cmd = self.roles[role]["state"]
        data = parse_json(self._run(cmd, {"id": job_id}))
        raw = str(_dig(data, cmd["state_path"]))
        ours = next((s for s, words in cmd["states"].items() if raw in words), raw.lower())
        runs = int(_dig(data, cmd["runs_path"])) if cmd["runs_path"] else None
        return JobState(ours, raw, runs)

    def wait_states(self, jobs: Mapping[str, str], wanted: tuple[str, ...], timeout: float) -> dict[str, JobState]:
        """Read every job (id -> role) until all are in `wanted`; their last states."""
        deadline = time.monotonic() + timeout
        while True:
            states = {j: self.read(role, j) for j, role in jobs.items()}
            if all(s.state in wanted for s in states.values()) or time.monotonic() > deadline:
                return states
            time.sleep(2)
