"""Scenario 19: the chart's opt-in NetworkPolicies, enforced by a real policy engine
(kube-router's firewall, built here from its Go module: netpol-engine.yaml), installed for this
test only and removed after. With the policies on, the migration Job of an upgrade completes and
the handlers reach the database through them, a pod without the release's labels cannot reach
web's port (nor web the API server), and `helm test` passes; with them off, the same pod can.
The job role launches (`launcher.enabled`, issue 37): its policy alone admits the API server's
endpoint address (`networkPolicy.apiServer.to`), so the job pod reaches it and web does not.

Our static ptp CNI masquerades pod traffic between nodes (ipMasq), so a pod on another node
arrives from its node's IP: the probe pods share web's node, and the nodes' IPs are admitted as
peers so the helm test pod works wherever it lands. (On a CNI that keeps pod IPs, allowRelease
alone admits it.)"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import pytest

from jhkind import addon, pool
from jhkind.cluster import Kube, job_state, pod_ready
from jhkind.nodes import workers
from jhkind.scenario import WORKLOAD_IMAGE, Scenario
from jhkind.waits import wait_until

pytestmark = [pytest.mark.kind, pytest.mark.nodes, pytest.mark.timeout(900)]

HERE = Path(__file__).resolve().parent
ENGINE = HERE / "netpol-engine.yaml"
IMAGE_SCRIPT = HERE.parent / "scripts" / "netpol-image.sh"
# helmTest.requestCommand for this scenario: the engine admits a new pod's IP in its peers' rules a
# moment after the pod starts (kube-router re-syncs the node's chains), so the test pod's first
# request may be refused; it retries refused/timed-out connections for up to 60 s and says how often.
RETRYING_REQUEST = ("import os, time, urllib.request as r\nu = os.environ['URL']\nfor n in range(1, 121):\n"
                    "    try:\n        s = r.urlopen(u, timeout=5).status\n        break\n"
                    "    except OSError as e:\n        if n == 120 or getattr(e, 'code', None): raise\n"
                    "        time.sleep(0.5)\nprint(u, s, 'attempts', n)")
CONNECT = ("import socket, sys\ntry:\n    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()\n"
           "except OSError as e:\n    print(type(e).__name__, e); sys.exit(1)\nprint('connected')")


# kube-router v2.1.0's own --cleanup-config removes nothing of its firewall (its cleanup runs on
# an empty controller) and then crashes in the service proxy's cleanup, so we remove its rules
# ourselves: the jumps from INPUT/FORWARD/OUTPUT, its chains, its ipsets.
CLEANUP = r"""set -u
for ipt in iptables ip6tables; do
  for c in INPUT FORWARD OUTPUT; do
    $ipt -S $c 2>/dev/null | grep 'kube-router netpol' | sed 's/^-A/-D/' | while read -r rule; do eval "$ipt $rule"; done
  done
  chains=$($ipt -S 2>/dev/null | awk '/^-N (KUBE-ROUTER-|KUBE-POD-FW-|KUBE-NWPLCY-)/{print $2}')
  for c in $chains; do $ipt -F "$c"; done
  for c in $chains; do $ipt -X "$c"; done
done
ipset list -n | grep -E '^(KUBE-|kube-router)' | while read -r s; do ipset destroy "$s"; done
echo "left: $(iptables -S | grep -c -E 'KUBE-ROUTER|KUBE-POD-FW|KUBE-NWPLCY|kube-router') rules, $(ipset list -n | wc -l) ipsets"
"""


def _cleanup_nodes(kube: Kube, image: str) -> list[str]:
    """Run CLEANUP on every node (one privileged host-network pod each); returns their last lines."""
    names = []
    for node in kube.core.list_node().items:
        name = f"jh-netpol-cleanup-{node.metadata.name}"[:63]
        names.append(name)
        kube._ignore_404(kube.core.delete_namespaced_pod, name, "kube-system", grace_period_seconds=0)
        wait_until(lambda: kube.pod("kube-system", name) is None, 60, f"old {name} gone", interval=1)
        kube.core.create_namespaced_pod("kube-system", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"nodeName": node.metadata.name, "hostNetwork": True, "restartPolicy": "Never",
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "cleanup", "image": image, "imagePullPolicy": "Never",
                                     "command": ["/bin/sh", "-c", CLEANUP], "securityContext": {"privileged": True},
                                     "volumeMounts": [{"name": "x", "mountPath": "/run/xtables.lock"}]}],
                     "volumes": [{"name": "x", "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}}]}})

    def phase(n: str) -> str | None:
        return ((kube.pod("kube-system", n) or {}).get("status") or {}).get("phase")
    try:
        wait_until(lambda: all(phase(n) in ("Succeeded", "Failed") for n in names), 120,
                   "the engine's rules removed on every node", interval=1)
        return [f"{n}: {phase(n)}: {kube.logs('kube-system', n).strip().splitlines()[-1:]}" for n in names]
    finally:
        for n in names:
            kube._ignore_404(kube.core.delete_namespaced_pod, n, "kube-system", grace_period_seconds=0)


@pytest.fixture(scope="module")
def engine(kube: Kube, kind_cluster_name: str) -> Iterator[str]:
    """The policy engine on every worker (of the pool, with one) for this module's tests; removed (and its
    rules cleaned) after."""
    def ready() -> None:
        nodes = len(workers(kube))
        wait_until(lambda: (kube.apps.read_namespaced_daemon_set("jh-netpol-engine", "kube-system").status
                            .number_ready or 0) == nodes, 180, "the NetworkPolicy engine Ready on every node", interval=1)
    image = addon.image(IMAGE_SCRIPT, kind_cluster_name)
    try:
        # foreground: the engine's pods are gone before its rules are removed (else it re-adds them)
        # with a node pool (.ci/run's node pass), on the pool's workers only: nothing of the main pass is policed
        with addon.applied(kube, image, ENGINE, ready, delete_args=("--cascade=foreground",),
                           place=pool.add):
            yield image
    finally:
        wait_until(lambda: not kube.pods("kube-system", "app=jh-netpol-engine"), 90, "the engine's pods gone",
                   interval=1)
        results = _cleanup_nodes(kube, image)
        assert all("Succeeded" in r and "left: 0 rules, 0 ipsets" in r for r in results), results


def _probe_pod(sc: Scenario, name: str, node: str, labels: dict[str, str]) -> str:
    """A restricted pod on `node` that only sleeps; the tests exec CONNECT in it."""
    sc.kube.apply_objects(sc.namespace, [{
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False,
                 "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                                     "seccompProfile": {"type": "RuntimeDefault"}},
                 "containers": [{"name": "probe", "image": f"{WORKLOAD_IMAGE}:1", "imagePullPolicy": "IfNotPresent",
                                 "command": ["python3", "-c", "import time; time.sleep(3600)"],
                                 "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                                     "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
                                 "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}}}]}}])
    wait_until(lambda: (p := sc.kube.pod(sc.namespace, name)) and pod_ready(p), 120, f"pod {name} Ready", interval=1)
    return name


def _connects(sc: Scenario, pod: str, host: str, port: int, container: str | None = None) -> bool:
    res = sc.kube.exec(sc.namespace, pod, ["python3", "-c", CONNECT, host, str(port)], container=container, timeout=30)
    return res.rc == 0


def _settle(check, want: bool, timeout: float = 30) -> float:
    """Seconds until check() == want (the engine applies policy changes asynchronously)."""
    t0 = time.monotonic()
    wait_until(lambda: check() == want, timeout, f"connection {'allowed' if want else 'denied'}", interval=0.5)
    return round(time.monotonic() - t0, 1)


def test_19_networkpolicy_enforced_live(scenario: Scenario, engine: str) -> None:
    sc, p = scenario, scenario.progress
    node = workers(sc.kube)[0]
    node_ips = [a.address for n in sc.kube.core.list_node().items for a in n.status.addresses if a.type == "InternalIP"]
    pin = {"nodeSelector": {"kubernetes.io/hostname": node}}
    # the API server's endpoint (what a NetworkPolicy sees; the kubernetes Service IP is DNATed to it)
    api = sc.kube.core.read_namespaced_endpoints("kubernetes", "default").subsets[0]
    api_ip, api_port = api.addresses[0].ip, api.ports[0].port
    on = {"networkPolicy": {
              "enabled": True,
              "apiServer": {"to": [{"ipBlock": {"cidr": f"{api_ip}/32"}}]},
              "database": {"to": [{"namespaceSelector": {"matchLabels": {
                  "kubernetes.io/metadata.name": sc.pg.namespace}}}]},
              # the CNI masquerades between nodes (see the module docstring)
              "ingress": {"from": [{"ipBlock": {"cidr": f"{ip}/32"}} for ip in node_ips]}},
          "handlers": {"web": pin, "job": {**pin, "launcher": {"enabled": True}}},
          "helmTest": {"requestCommand": ["python3", "-c", RETRYING_REQUEST]}}
    with p.phase("install with networkPolicy on (first install: the hook runs before the policies exist)"):
        sc.install(on).check("helm install")
        sc.wait_handlers_ready(120)
    with p.phase("upgrade to workload:2 under the policies: the migration Job and wait-for-migrations need the DB"):
        res = sc.upgrade(on, {"image": {"tag": "2"}})
        res.check("helm upgrade")
        sc.wait_handlers_ready(180)
    jobs = sc.migration_jobs()
    p.fact("migration_jobs", {j["metadata"]["name"]: job_state(j) for j in jobs})
    p.fact("upgrade_seconds", round(res.seconds, 1))
    assert jobs and all(job_state(j) == "complete" for j in jobs), [job_state(j) for j in jobs]
    assert sc.db.schema_revision() == 4, sc.db.schema_revision()

    web = sc.handler_pods("web")[0]
    web_ip, web_pod = web["status"]["podIP"], web["metadata"]["name"]
    job_pod = sc.handler_pods("job")[0]["metadata"]["name"]
    stranger = _probe_pod(sc, "stranger", node, {"app.kubernetes.io/name": "stranger"})
    with p.phase("policies on: who reaches what"):
        denied_after = _settle(lambda: _connects(sc, stranger, web_ip, 8080), False)
        release_to_web = _connects(sc, job_pod, web_ip, 8080, container="job")
        web_to_db = _connects(sc, web_pod, sc.pg.host, 5432, container="web")
        web_to_api = _connects(sc, web_pod, "kubernetes.default.svc.cluster.local", 443, container="web")
        web_to_api_endpoint = _connects(sc, web_pod, api_ip, api_port, container="web")
        # the launching role: its own policy admits the endpoint (the engine may need a moment)
        launcher_to_api = _settle(lambda: _connects(sc, job_pod, api_ip, api_port, container="job"), True)
        launcher_to_api_service = _connects(sc, job_pod, "kubernetes.default.svc.cluster.local", 443, container="job")
    p.fact("stranger_to_web_on", False)
    p.fact("stranger_denied_after_s", denied_after)
    p.fact("job_to_web_on", release_to_web)
    p.fact("web_to_db_on", web_to_db)
    p.fact("web_to_apiserver_on", web_to_api)
    p.fact("web_to_apiserver_endpoint_on", web_to_api_endpoint)
    p.fact("launcher_to_apiserver_endpoint_after_s", launcher_to_api)
    p.fact("launcher_to_apiserver_service_on", launcher_to_api_service)
    assert release_to_web, "the release's own job pod could not reach web through allowRelease"
    assert web_to_db, "web could not reach the database through networkPolicy.database.to"
    assert not web_to_api, "web reached the API server: egress is not restricted"
    assert not web_to_api_endpoint, "web reached the API server's endpoint: apiServer egress leaked to a role that does not launch"
    with p.phase("helm test under the policies"):
        t = sc.helm.run(["test", sc.release, "-n", sc.namespace, "--logs", "--timeout", "120s"], timeout=240)
    p.fact("helm_test_rc", t.rc)
    assert t.rc == 0, (t.stdout + t.stderr)[-3000:]
    attempts = [line.rsplit(" ", 1)[-1] for line in t.stdout.splitlines() if " attempts " in line]
    p.fact("helm_test_request_attempts", attempts)

    with p.phase("upgrade with networkPolicy off: the policies are deleted"):
        off = {"networkPolicy": {"enabled": False}, "handlers": {"web": pin, "job": pin}}
        sc.upgrade(off, {"image": {"tag": "2"}}).check("helm upgrade (off)")
        allowed_after = _settle(lambda: _connects(sc, stranger, web_ip_now(sc), 8080), True)
    p.fact("stranger_allowed_after_s", allowed_after)
    assert _connects(sc, web_pod_now(sc), "kubernetes.default.svc.cluster.local", 443, container="web")


def web_ip_now(sc: Scenario) -> str:
    return sc.handler_pods("web")[0]["status"]["podIP"]


def web_pod_now(sc: Scenario) -> str:
    return sc.handler_pods("web")[0]["metadata"]["name"]
