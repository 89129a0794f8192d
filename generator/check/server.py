"""`jobhandlers check --server`: the rendered chart through the user's own API server, as a
server-side dry run (decoding, validation and admission: Pod Security, quotas, LimitRanges,
policies; nothing persisted). The server's refusals become findings `JHK<HTTP status>`.

Uses the kubernetes Python client (a runtime dependency, imported only here): it reads
kubeconfig contexts, client certificates, tokens and exec credential plugins as kubectl does,
and needs no kubectl on the machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

import re

from ..findings import ERROR, RENDER, WARNING, Finding

FIX = {
    400: "fix the value the server names (a malformed object)",
    403: "make the values meet the namespace's admission (Pod Security level, quota, policy), or ask the "
         "cluster's admins",
    404: "create the namespace first, or pass --namespace",
    409: "the server reports a conflict: rename the release or remove the existing object",
    422: "fix the field the server names",
}


class ServerUnusable(Exception):
    """The kubeconfig cannot be used or the cluster cannot be reached (exit 2, one line)."""


@dataclass
class Target:
    """Where the dry run goes: a kubeconfig file, a context in it, a namespace."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None


def _client(target: Target) -> tuple[Any, str]:
    """An ApiClient for the context, and the namespace (flag, else the context's, else default)."""
    try:
        import urllib3
        from kubernetes import config
    except ImportError as exc:  # pragma: no cover - a broken install
        raise ServerUnusable(f"the kubernetes Python client is not installed ({exc}): pip install jobhandlers")
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # insecure-skip-tls-verify: the user's choice
    try:
        contexts, active = config.list_kube_config_contexts(config_file=target.kubeconfig)
        if target.context:
            active = next((c for c in contexts if c.get("name") == target.context), None)
            if active is None:
                names = ", ".join(sorted(str(c.get("name")) for c in contexts)) or "none"
                raise ServerUnusable(f"no context {target.context!r} in the kubeconfig (it has: {names})")
        from kubernetes import client

        cfg = client.Configuration()
        config.load_kube_config(config_file=target.kubeconfig, context=target.context, client_configuration=cfg)
        cfg.retries = 0  # an unreachable cluster answers at once (exit 2), not after urllib3's retries
        api = client.ApiClient(cfg)
    except ServerUnusable:
        raise
    except Exception as exc:  # noqa: BLE001 - ConfigException, YAML and file errors: the kubeconfig is unusable
        where = target.kubeconfig or "the default kubeconfig ($KUBECONFIG or ~/.kube/config)"
        raise ServerUnusable(f"cannot use {where}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    namespace = target.namespace or (active or {}).get("context", {}).get("namespace") or "default"
    return api, namespace


def _reachable(api: Any) -> None:
    """Ask the server its version; unreachable or unauthorized: ServerUnusable."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        client.VersionApi(api).get_code(_request_timeout=10)
    except ApiException as exc:
        raise ServerUnusable(f"the API server at {api.configuration.host} answered {exc.status} {exc.reason}")
    except Exception as exc:  # noqa: BLE001 - urllib3 / ssl / socket errors: the cluster is unreachable
        raise ServerUnusable(f"cannot reach the API server at {api.configuration.host}: "
                             f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")


def _enforced_level(api: Any, namespace: str) -> str | None:
    """The namespace's pod-security.kubernetes.io/enforce label; None when unset or not readable."""
    from kubernetes import client

    try:
        labels = client.CoreV1Api(api).read_namespace(namespace, _request_timeout=10).metadata.labels or {}
    except Exception:  # noqa: BLE001 - no get on namespaces, or no such namespace (the creates say so)
        return None
    return labels.get("pod-security.kubernetes.io/enforce")


def _warning(values_file: str, what: str, header: str, enforce: str | None) -> Finding:
    """A Warning header (`299 - "text"`) as a finding: JHK299, or JHK403 when it is Pod Security's
    verdict on a workload in a namespace that enforces that level (its pods will be refused)."""
    m = re.fullmatch(r'\s*\d+\s+\S+\s+"(.*)"\s*', header)
    text = m.group(1).replace('\\"', '"') if m else header
    level = re.search(r'would violate PodSecurity "(\w+):', text)
    if level and enforce and level.group(1) == enforce:
        return Finding(values_file, 1, 1, "JHK403", ERROR, RENDER, "",
                       f"{what}: admitted, but the namespace enforces Pod Security {enforce!r}, so its pods will "
                       f"be refused: {text}", FIX[403])
    return Finding(values_file, 1, 1, "JHK299", WARNING, RENDER, "", f"{what}: the API server warns: {text}",
                   "the objects it names may be refused later (e.g. a workload's pods by Pod Security)")


def _refusal(status: int, body: str) -> tuple[str, list[tuple[str, str]]]:
    """The server's Status: its reason and message, and (field, message) of each cause."""
    try:
        st = json.loads(body)
    except (ValueError, TypeError):
        return "", [("", body.strip()[:500] or f"HTTP {status}")]
    causes = [(str(c.get("field", "")), str(c.get("message", ""))) for c in (st.get("details") or {}).get("causes") or []]
    return str(st.get("reason", "")), causes or [("", str(st.get("message", "")))]


def dry_run(objects: list[dict[str, Any]], target: Target, values_file: str) -> list[Finding]:
    """Every rendered object as a server-side dry-run create (strict field validation) in the
    target namespace; a finding per refusal (or per cause of one) and per server warning."""
    import urllib3
    from kubernetes import dynamic
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    api, namespace = _client(target)
    _reachable(api)
    try:
        dyn = dynamic.DynamicClient(api)
    except Exception as exc:  # noqa: BLE001 - discovery failed
        raise ServerUnusable(f"API discovery failed at {api.configuration.host}: {str(exc).splitlines()[0][:200]}")
    enforce = _enforced_level(api, namespace)
    accounts = {o["metadata"]["name"] for o in objects if o.get("kind") == "ServiceAccount"}
    findings: list[Finding] = []
    for obj in objects:
        kind, name = obj.get("kind", "?"), (obj.get("metadata") or {}).get("name", "?")
        what = f"{kind}/{name}"
        try:
            res = dyn.resources.get(api_version=obj.get("apiVersion"), kind=kind)
        except ResourceNotFoundError:
            findings.append(Finding(values_file, 1, 1, "JHK404", ERROR, RENDER, "",
                                    f"{what}: the server does not serve {obj.get('apiVersion')} {kind}",
                                    "install the CRD or API it needs, or disable that feature in the values"))
            continue
        ns = namespace if res.namespaced else None
        if ns:
            obj = {**obj, "metadata": {**obj["metadata"], "namespace": ns}}
        try:
            request = api.param_serialize(
                "POST", res.path(namespace=ns), query_params=[("dryRun", "All"), ("fieldValidation", "Strict")],
                header_params={"Content-Type": "application/json", "Accept": "application/json"}, body=obj,
                auth_settings=["BearerToken"])
            resp = api.call_api(*request, _request_timeout=30)
            body = resp.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ServerUnusable(f"the API server at {api.configuration.host} stopped answering: "
                                 f"{type(exc).__name__}")
        headers = resp.response.headers.getlist("Warning")
        if not 200 <= resp.status <= 299:
            text = body.decode(errors="replace") if isinstance(body, bytes) else str(body or "")
            reason, causes = _refusal(resp.status, text)
            for field, message in causes:
                if (resp.status == 403 and kind == "Pod" and "serviceaccount" in message.lower()
                        and any(f'"{a}"' in message for a in accounts)):
                    continue  # the account is in the render: a dry run cannot create it first
                if resp.status == 409:
                    continue  # exists already (an upgrade): not a refusal of the values
                findings.append(Finding(values_file, 1, 1, f"JHK{resp.status}", ERROR, RENDER, "",
                                        f"{what} refused by the API server ({reason or resp.reason})"
                                        f"{f' at {field}' if field else ''}: {message}",
                                        FIX.get(resp.status, "fix what the server names")))
        for warning in headers:
            findings.append(_warning(values_file, what, warning, enforce))
    return findings


def _field_parts(field: str) -> list[str | int]:
    """'spec.template.spec.containers[0].env[0].name' -> ['spec', ..., 'containers', 0, 'env', 0, 'name']."""
    return [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", field)]


def check_server(vf: Any, path: str, kube_version: str, target: Target) -> list[Finding]:
    """Render the values file with helm, then dry-run every object on the target server; each
    finding points at the values key the server's field most likely comes from."""
    from pathlib import Path

    from .rendered import guess_position, render_objects

    objects, failed = render_objects(vf, Path(path), kube_version)
    if failed:
        return failed
    out = []
    for f in dry_run(objects, target, vf.path):
        m = re.search(r" at (\S+): ", f.message)
        if m:
            line, col, vpath = guess_position(vf, f.message, _field_parts(m.group(1)))
            f = f._replace(line=line, col=col, path=vpath)
        out.append(f)
    return out
