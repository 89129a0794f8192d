#!/usr/bin/env python3
"""CPU of the scenario phase by program, from the kernel's process accounting (acct's `accton`).

`.ci/run` turns accounting on when the scenario phase starts and off after `make kind-down`, so
every process of both clusters has ended (and been written) by then: kube-apiserver, etcd and the
kubelets with their whole life, each exec probe's `sh` and `runc`, each Galaxy or Celery process
that a scenario started. `.ci/cpu.py` says where the CPU went by cgroup (pods, nodes, the machine
outside them); this says which programs used it, which a cgroup cannot (a pod's Python is Galaxy's
or Celery's; the nodes' own work is containerd, the shims, runc or the kubelet).

    python3 .ci/acct.py snapshot FILE      the CPU so far of every process alive now (/proc)
    python3 .ci/acct.py ACCT_FILE --since EPOCH [--alive SNAPSHOT] [--markdown FILE]

Reads `dump-acct ACCT_FILE` (acct package). Counts each process that ended at or after EPOCH.
Processes that never end in the phase (dockerd, the host's containerd, the local registry, the
kernel's threads) are not in the accounting: with --alive (a snapshot taken when the phase began),
the ones still alive when the report runs are counted from /proc, their CPU since the snapshot.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# program (the kernel's comm: at most 15 characters) -> what it is part of
GROUPS: dict[str, tuple[str, ...]] = {
    "container runtime (containerd, shims, runc, image unpacking, CNI)": (
        "containerd", "containerd-shim", "runc", "runc:[0:PARENT]", "runc:[1:CHILD]", "runc:[2:INIT]",
        "unpigz", "pause", "ptp", "portmap", "host-local", "loopback", "exe"),
    "control planes (API server, etcd, controllers, scheduler, CoreDNS)": (
        "kube-apiserver", "etcd", "kube-controller", "kube-scheduler", "coredns"),
    "kubelet, systemd, journald, kube-proxy": (
        "kubelet", "systemd", "systemd-journal", "kube-proxy", "xtables-nft-mul", "iptables"),
    "Galaxy (galaxy-main, gunicorn, galaxy-manage-db)": ("galaxy-main", "gunicorn", "galaxy-manage-d"),
    "Python (Galaxy's job scripts and jhgalaxy, pytest, the generated suites, client pods)": (
        "python", "python3"),
    "the reference workload": ("workload",),
    "procrastinate (django-admin: workers, healthchecks probes)": ("django-admin",),
    "Celery": ("celery",),
    "PostgreSQL, pgbouncer": ("postgres", "psql", "pg_isready", "initdb", "pgbouncer"),
    "helm, kubectl, docker, kind, crictl, jq": ("helm", "kubectl", "docker", "kind", "crictl", "ctr", "jq"),
    "sh (exec probes, hooks, wait loops)": ("sh", "bash", "dash"),
}
PROGRAM_GROUP = {prog: group for group, progs in GROUPS.items() for prog in progs}
# RabbitMQ's Erlang VM names its threads' processes after its schedulers (1_dirty_io_sche, …)
ERLANG = ("beam.smp", "erl_child_setup", "inet_gethost", "epmd")


@dataclass(frozen=True)
class Record:
    comm: str
    cpu: float  # user + system, seconds
    end: float  # epoch seconds


def group_of(comm: str) -> str:
    if comm in PROGRAM_GROUP:
        return PROGRAM_GROUP[comm]
    head = comm.split("_", 1)[0]
    if comm in ERLANG or (head.isdigit() and "_" in comm) or comm.startswith("sys_"):
        return "RabbitMQ (Erlang)"
    return "the rest"


def parse(text: str) -> list[Record]:
    """dump-acct's lines: comm|version|utime|stime|etime|uid|gid|mem|io|pid|ppid|flags|exit|tty|start
    (times in 1/100 s, start as ctime text)."""
    out = []
    for line in text.splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) < 15:
            continue
        try:
            start = dt.datetime.strptime(f[14], "%a %b %d %H:%M:%S %Y").timestamp()
            out.append(Record(f[0], (float(f[2]) + float(f[3])) / 100, start + float(f[4]) / 100))
        except ValueError:
            continue
    return out


def tables(records: list[Record], since: float, top: int = 15) -> str:
    kept = [r for r in records if r.end >= since]
    total = sum(r.cpu for r in kept) or 1.0
    by_prog: Counter[str] = Counter()
    n_prog: Counter[str] = Counter()
    for r in kept:
        by_prog[r.comm] += r.cpu
        n_prog[r.comm] += 1
    by_group: Counter[str] = Counter()
    n_group: Counter[str] = Counter()
    for prog, cpu in by_prog.items():  # each program's group, from its totals
        by_group[group_of(prog)] += cpu
        n_group[group_of(prog)] += n_prog[prog]
    lines = [f"CPU of the scenario phase by program (process accounting: {len(kept)} processes that ended "
             f"after the phase began, {total:.0f} CPU-s; long-lived ones, e.g. the API servers, with their "
             "whole life; the kernel's own threads and dockerd are not in it):", "",
             "| what | processes | CPU-s | share |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {g} | {n_group[g]} | {v:.0f} | {100 * v / total:.0f} % |" for g, v in by_group.most_common()]
    lines += ["", f"The {top} programs that used the most:", "",
              "| program | processes | CPU-s | per process (s) |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| `{p}` | {n_prog[p]} | {v:.0f} | {v / n_prog[p]:.2f} |" for p, v in by_prog.most_common(top)]
    return "\n".join(lines) + "\n"


# a process alive through the phase -> what it is part of (by comm; kernel threads by parent 2)
ALIVE_GROUPS: dict[str, tuple[str, ...]] = {
    "dockerd and the host's containerd (docker exec, docker ps, the nodes' containers)": (
        "dockerd", "containerd", "containerd-shim", "docker-proxy"),
    "the local image registry (the nodes' pulls)": ("registry",),
}
ALIVE_PROGRAM = {prog: group for group, progs in ALIVE_GROUPS.items() for prog in progs}
KERNEL = "the kernel's threads (network, block devices, memory)"


def read_proc(root: Path = Path("/proc")) -> dict[str, tuple[str, float]]:
    """"pid:start" -> (group, CPU-s so far) of every process now (utime + stime of /proc/PID/stat)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, tuple[str, float]] = {}
    for stat in root.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        f = text[text.rindex(")") + 2:].split()  # f[0] is field 3 (state)
        ppid, cpu, start = int(f[1]), (int(f[11]) + int(f[12])) / tick, f[19]
        pid = stat.parent.name
        group = KERNEL if ppid == 2 or pid == "2" else ALIVE_PROGRAM.get(comm, "the rest (pytest's and CI's own, sshd, …)")
        out[f"{pid}:{start}"] = (group, cpu)
    return out


def alive_table(before: dict[str, float], now: dict[str, tuple[str, float]]) -> str:
    """The CPU since `before` ("pid:start" -> CPU-s, a snapshot) of the processes alive in both, by
    group."""
    by_group: Counter[str] = Counter()
    n_group: Counter[str] = Counter()
    for key, (group, cpu) in now.items():
        if key in before:
            by_group[group] += cpu - float(before[key])
            n_group[group] += 1
    lines = ["", "Processes alive through the whole phase (not in the accounting; /proc at its start and "
             "after `make kind-down`):", "", "| what | processes | CPU-s |", "| --- | ---: | ---: |"]
    lines += [f"| {g} | {n_group[g]} | {v:.0f} |" for g, v in by_group.most_common()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["snapshot"] and len(argv) == 2:
        path = Path(argv[1])
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({key: cpu for key, (_, cpu) in read_proc().items()}), encoding="utf-8")
        tmp.replace(path)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("acct_file")
    ap.add_argument("--since", type=float, required=True, help="epoch seconds: the scenario phase's start")
    ap.add_argument("--alive", help="a snapshot (acct.py snapshot) taken when the phase began")
    ap.add_argument("--markdown", help="append the tables to this file")
    args = ap.parse_args(argv)
    if not Path(args.acct_file).is_file():
        print(f"acct.py: no accounting file {args.acct_file}", file=sys.stderr)
        return 2
    try:
        text = subprocess.run(["dump-acct", args.acct_file], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"acct.py: cannot read {args.acct_file} with dump-acct: {exc}", file=sys.stderr)
        return 2
    out = tables(parse(text), args.since)
    if args.alive:
        try:
            before = json.loads(Path(args.alive).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # the accounting's tables still count
            out += f"\n(no snapshot of the processes alive at the phase's start: {exc})\n"
        else:
            out += alive_table(before, read_proc())
    print(out, end="")
    if args.markdown:  # appended: a temporary file with both, then a rename
        md = Path(args.markdown)
        tmp = md.with_name(md.name + ".tmp")
        tmp.write_text((md.read_text(encoding="utf-8") if md.exists() else "") + "\n" + out, encoding="utf-8")
        tmp.replace(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
