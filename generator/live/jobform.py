"""The Job form of a job-description command: the command runs as a Kubernetes Job made from
a role's pod template (its image, env, volumes, service account and security context), not
through the exec API. For clusters where `pods/exec` is not granted, and for handler images
that lack the app's CLI (`image`)."""

from __future__ import annotations

import copy
from typing import Any, Mapping, Sequence

NAME = "app.kubernetes.io/name"
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"
# the launched pod's component: not the role's, so the role's Service, PDB and NetworkPolicy do
# not select it; name and instance stay, so a policy that admits the release's pods admits it
LIVE_COMPONENT = "live-command"
# what the pod's start may take beyond the command's own timeoutSeconds (image pull, scheduling)
START_SECONDS = 60
# a finished Job is deleted by the suite once read; the TTL only covers a suite that was killed
TTL_SECONDS = 600


def job_manifest(name: str, template: Mapping[str, Any], container: str, argv: Sequence[str], image: str,
                 timeout: int) -> dict[str, Any]:
    """A batch/v1 Job that runs argv once in `container` of the role's pod template.

    - the container keeps its image (or `image`), env, envFrom, mounts, resources and security
      context; its command becomes argv (args cleared); probes, lifecycle hooks and ports go;
    - the other containers go; of the init containers only native sidecars (restartPolicy
      Always, e.g. a database proxy the command may need) stay, wait-for-migrations goes (the
      role's pods are running, so the schema is there);
    - pod affinity, anti-affinity and topology spread go (they count the role's pods); node
      affinity, nodeSelector and tolerations stay;
    - restartPolicy Never, backoffLimit 0 (the suite retries a failed run itself), a deadline of
      timeout + START_SECONDS."""
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    found = [c for c in spec.get("containers") or [] if c.get("name") == container]
    if not found:
        names = ", ".join(c.get("name", "?") for c in spec.get("containers") or [])
        raise AssertionError(f"the role's pod template has no container `{container}` (it has {names})")
    main = found[0]
    for key in ("livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "ports", "args"):
        main.pop(key, None)
    main["command"] = list(argv)
    if image:
        main["image"] = image
    spec["containers"] = [main]
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    if sidecars:
        spec["initContainers"] = sidecars
    else:
        spec.pop("initContainers", None)
    affinity = {k: v for k, v in (spec.get("affinity") or {}).items() if k == "nodeAffinity"}
    if affinity:
        spec["affinity"] = affinity
    else:
        spec.pop("affinity", None)
    for key in ("topologySpreadConstraints", "hostname", "subdomain", "nodeName"):
        spec.pop(key, None)
    spec["restartPolicy"] = "Never"
    spec["terminationGracePeriodSeconds"] = min(int(spec.get("terminationGracePeriodSeconds") or 30), 30)
    role_labels = (template.get("metadata") or {}).get("labels") or {}
    labels = {k: v for k, v in role_labels.items() if k in (NAME, INSTANCE)}
    labels[COMPONENT] = LIVE_COMPONENT
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": dict(labels)},
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": int(timeout) + START_SECONDS,
                     "ttlSecondsAfterFinished": TTL_SECONDS,
                     "template": {"metadata": {"labels": dict(labels)}, "spec": spec}}}
