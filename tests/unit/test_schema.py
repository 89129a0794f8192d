"""generator.schema: chart/values.schema.json errors mapped to file:line:col and key path."""

from __future__ import annotations

import json
from pathlib import Path

from generator.schema import SCHEMA_FILE, dotted, validate
from generator.values.full import parse_values
from generator.values.merge import chart_defaults


def _errors(text: str) -> list[tuple[int, int, str]]:
    return [(f.line, f.col, f.path) for f in validate(parse_values(text, "v.yaml"))]


def test_chart_defaults_are_valid() -> None:
    assert validate(chart_defaults()) == []


def test_type_error_points_at_the_key() -> None:
    text = "handlers:\n  web:\n    replicas: many\n"
    assert _errors(text) == [(3, 5, "handlers.web.replicas")]
    finding = validate(parse_values(text, "v.yaml"))[0]
    assert finding.rule == "JHS001" and finding.category == "schema"
    assert "'many' is not of type 'integer'" in finding.message


def test_unquoted_number_tag_gets_the_quoting_fix() -> None:
    findings = validate(parse_values("image:\n  tag: 1.10\n", "v.yaml"))
    assert [(f.line, f.path) for f in findings] == [(2, "image.tag")]
    assert "quote" in findings[0].fix


def test_unknown_key_is_named_with_its_line() -> None:
    findings = validate(parse_values("drain:\n  bufferSeconds: 10\n  preStopSecond: 5\n", "v.yaml"))
    assert [(f.line, f.col, f.path) for f in findings] == [(3, 3, "drain.preStopSecond")]
    assert "unknown key `preStopSecond`" in findings[0].message


def test_errors_inside_a_role_are_not_hidden_by_any_of() -> None:
    # handlers.<role> is anyOf [role, null]: the role branch's own errors are reported
    assert _errors("handlers:\n  job:\n    replicas: -1\n    colour: red\n") == [
        (3, 5, "handlers.job.replicas"), (4, 5, "handlers.job.colour")]


def test_yaml_11_boolean_is_a_type_error_for_strings() -> None:
    assert _errors("database:\n  name: no\n") == [(2, 3, "database.name")]


def test_value_from_defaults_is_marked() -> None:
    # a custom role without the keys the schema requires: reported on the role's line
    findings = validate(parse_values("handlers:\n  extra:\n    enabled: true\n", "v.yaml"))
    assert findings, "a role without command/maxJobRuntimeSeconds must be refused"
    assert all(f.line == 2 for f in findings)


def test_schema_is_the_file_helm_uses() -> None:
    assert SCHEMA_FILE == Path(__file__).resolve().parents[2] / "chart" / "values.schema.json"
    json.loads(SCHEMA_FILE.read_text())


def test_dotted() -> None:
    assert dotted(["handlers", "web", "env", 0, "name"]) == "handlers.web.env[0].name"


def test_one_handler_per_probe_block() -> None:
    """values.schema.json oneProbeHandler, the one source helm and check share: any probe
    block (a role's, a disabled role's, the chart-wide ones) names at most one handler."""
    text = ("handlers:\n  web:\n    readinessProbe:\n      httpGet: {port: 8080}\n      exec: {command: [x]}\n"
            "  job:\n    enabled: false\n    startupProbe:\n      grpc: {port: 1}\n      heartbeat: {}\n"
            "      tcpSocket: {port: 2}\n"
            "liveness:\n  tcpSocket: {port: 8080}\n  heartbeat: {}\n")
    findings = validate(parse_values(text, "v.yaml"))
    assert [(f.line, f.col, f.path) for f in findings] == [
        (3, 5, "handlers.web.readinessProbe"), (8, 5, "handlers.job.startupProbe"), (12, 1, "liveness")]
    by_path = {f.path: f for f in findings}
    assert by_path["handlers.web.readinessProbe"].message == "httpGet and exec together: a probe has exactly one handler"
    assert by_path["handlers.web.readinessProbe"].fix == "keep one of httpGet, exec"
    assert by_path["handlers.job.startupProbe"].message.startswith("grpc, heartbeat and tcpSocket together")
    # one handler (or none: borrowed, or the heartbeat) is fine
    assert _errors("handlers:\n  web:\n    readinessProbe:\n      httpGet: {port: 8080}\n    livenessProbe: {}\n"
                   "liveness:\n  heartbeat: {}\n") == []


def test_null_deleting_a_block_or_key_the_chart_needs() -> None:
    """helm's coalescing deletes a default set to null; values.schema.json requires the blocks
    and formula keys the templates read (image, drain, drain.bufferSeconds …), so helm and
    check refuse the null at its line instead of the chart crashing or rendering a grace
    without its buffer."""
    text = "image: null\ndrain:\n  bufferSeconds: null\n  preStopSeconds: ~\nstartupProbe:\n  minKubeVersion: null\n"
    findings = validate(parse_values(text, "v.yaml"))
    assert [(f.line, f.col, f.path) for f in findings] == [
        (1, 1, "image"), (3, 3, "drain.bufferSeconds"), (4, 3, "drain.preStopSeconds"),
        (6, 3, "startupProbe.minKubeVersion")]
    assert findings[1].message == ("`bufferSeconds: null` deletes the chart's default drain.bufferSeconds, "
                                   "which the chart needs")
    assert findings[1].fix == "remove the `bufferSeconds: null` line (set only the keys you want to change)"
    # nulls the chart documents stay allowed: a default role removed, an optional key unset
    assert _errors("handlers:\n  web: null\nliveness:\n  terminationGracePeriodSeconds: null\n"
                   "nodeLossTolerationSeconds: null\ncommands:\n  drain: null\n") == []


def test_only_the_keys_the_file_sets_are_walked(monkeypatch) -> None:
    """validate() hands jsonschema only the top-level keys the file sets (the rest are the
    chart's defaults, valid by test_chart_defaults_are_valid): the same findings as the walk of
    every merged key, for schema errors, nulls, unknown keys and clean files."""
    import sys

    from generator import schema

    bench = Path(__file__).resolve().parents[2] / "bench"
    sys.path.insert(0, str(bench))
    try:
        import check_bench
    finally:
        sys.path.remove(str(bench))
    texts = [t.format(n=3, rt=600, r=2, d=5, b=20, ra=30, la=300, low=10) for _, t in check_bench.VARIANTS]
    texts += ["image: null\ndrain:\n  bufferSeconds: null\n", "handlers:\n  web:\n    replicas: -1\n  job: 3\n",
              "networkPolicy:\n  enabled: yes\n  extra: 1\nfoo: {}\n", "heartbeat:\n  intervalSeconds: 0\n"]
    examples = sorted((Path(__file__).resolve().parents[2] / "values-examples").glob("*.yaml"))
    texts += [p.read_text() for p in examples]
    loaded = [parse_values(t, "v.yaml") for t in texts]
    walked_less = [validate(vf) for vf in loaded if vf.ok]
    monkeypatch.setattr(schema, "_touched", lambda vf, data: data)
    monkeypatch.setattr(schema, "_passes_compiled", lambda chart, data: False)
    assert walked_less == [validate(vf) for vf in loaded if vf.ok]
    assert sum(bool(f) for f in walked_less) >= 5


def test_tolerations_the_api_server_refuses() -> None:
    """A role's and the migration Jobs' tolerations: what the API server's ValidateTolerations refuses
    (an operator or effect it does not know, an empty key without Exists, a value with Exists,
    tolerationSeconds without NoExecute, a key that is not a qualified name, a value that is not a
    label value) the schema refuses first, at the entry's key path."""
    for where in ("handlers:\n  job:\n    tolerations: ", "migration:\n  tolerations: "):
        path = "handlers.job.tolerations[0]" if where.startswith("handlers") else "migration.tolerations[0]"
        for bad, key in (("{key: a, operator: Foo}", ".operator"), ("{key: a, effect: Sometimes}", ".effect"),
                         ("{operator: Equal, value: x}", ".operator"), ("{value: x}", ""),
                         ("{key: a, operator: Exists, value: x}", ".value"), ("{key: a, tolerationSeconds: 5}", ""),
                         ("{key: 'bad key', operator: Exists}", ".key"), ("{key: a, value: 'not a value!'}", ".value")):
            assert [p for _, _, p in _errors(f"{where}[{bad}]\n")] == [path + key], bad
        for good in ("{key: a}", "{operator: Exists}", "{key: a, operator: Exists, effect: NoSchedule}",
                     "{key: a, operator: Equal, value: x, effect: NoExecute, tolerationSeconds: 5}"):
            assert _errors(f"{where}[{good}]\n") == [], good


NODE_TERM = "{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [%s]}}}"
POD_TERM = "{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [%s]}}"
REQUIRED = "nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def test_affinity_the_api_server_refuses() -> None:
    """A role's and the migration Jobs' affinity: what the API server's ValidateAffinity refuses (a
    selector operator it does not know, In without values, values with Exists, Gt without one value,
    a required node selector without terms, a weight outside 1-100, a pod (anti-)affinity term
    without topologyKey, a selector key that is not a qualified name) the schema refuses first, at
    the key path of the entry."""
    term = f"{REQUIRED}.nodeSelectorTerms[0]"
    bad = [
        (NODE_TERM % "{matchExpressions: [{key: a, operator: Foo, values: [x]}]}", f"{term}.matchExpressions[0].operator"),
        (NODE_TERM % "{matchExpressions: [{key: a, operator: In}]}", f"{term}.matchExpressions[0]"),
        (NODE_TERM % "{matchExpressions: [{key: a, operator: Exists, values: [x]}]}", f"{term}.matchExpressions[0].values"),
        (NODE_TERM % "{matchExpressions: [{key: a, operator: Gt, values: ['1', '2']}]}", f"{term}.matchExpressions[0].values"),
        (NODE_TERM % "{matchFields: [{key: metadata.labels, operator: In, values: [node-1]}]}", f"{term}.matchFields[0].key"),
        (f"{{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: []}}}}}}",
         f"{REQUIRED}.nodeSelectorTerms"),
        ("{nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 101, preference: {}}]}}",
         "nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
        (POD_TERM % "{labelSelector: {matchLabels: {app: a}}}", "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"),
        (POD_TERM % "{topologyKey: 'bad key'}", "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
        (POD_TERM % "{topologyKey: zone, labelSelector: {matchExpressions: [{key: app, operator: Equals, values: [a]}]}}",
         "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator"),
    ]
    good = [
        NODE_TERM % "{matchExpressions: [{key: node-size, operator: Gt, values: ['3']}, {key: gpu, operator: DoesNotExist}]}",
        NODE_TERM % "{matchFields: [{key: metadata.name, operator: NotIn, values: [worker-1]}]}",
        "{podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: "
        "{topologyKey: kubernetes.io/hostname, labelSelector: {matchExpressions: [{key: app, operator: In, values: [a]}]}}}]}}",
    ]
    for where, prefix in (("handlers:\n  job:\n    affinity: ", "handlers.job.affinity."),
                          ("migration:\n  affinity: ", "migration.affinity.")):
        for value, path in bad:
            assert [p for _, _, p in _errors(f"{where}{value}\n")] == [prefix + path], value
        for value in good:
            assert _errors(f"{where}{value}\n") == [], value


def test_topology_spread_the_api_server_refuses() -> None:
    """A role's topologySpreadConstraints: maxSkew below 1, an empty topologyKey, an unknown
    whenUnsatisfiable, minDomains without DoNotSchedule, an unknown node policy."""
    where = "handlers:\n  job:\n    topologySpreadConstraints: "
    base = "maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule"
    for extra, key in (("maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule", ".maxSkew"),
                       ("maxSkew: 1, topologyKey: '', whenUnsatisfiable: DoNotSchedule", ".topologyKey"),
                       ("maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Sometimes", ".whenUnsatisfiable"),
                       ("maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2", ".whenUnsatisfiable"),
                       (f"{base}, nodeTaintsPolicy: Always", ".nodeTaintsPolicy")):
        assert [p for _, _, p in _errors(f"{where}[{{{extra}}}]\n")] == ["handlers.job.topologySpreadConstraints[0]" + key], extra
    for good in (base, f"{base}, minDomains: 2, nodeAffinityPolicy: Ignore, labelSelector: {{matchLabels: {{app: a}}}}"):
        assert _errors(f"{where}[{{{good}}}]\n") == [], good


def test_env_sources_the_api_server_refuses() -> None:
    """ValidateEnv and ValidateEnvFrom: a valueFrom with no source or two, a value beside a valueFrom,
    a key reference without its name or key or with a key the API server refuses, an envFrom
    reference without a name."""
    for bad, path in (("env: [{name: A, valueFrom: {}}]", "env[0].valueFrom"),
                      ("env: [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}, secretKeyRef: {name: s, key: k}}}]",
                       "env[0].valueFrom"),
                      ("env: [{name: A, value: x, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]", "env[0].value"),
                      ("env: [{name: A, valueFrom: {secretKeyRef: {name: s}}}]", "env[0].valueFrom.secretKeyRef"),
                      ("env: [{name: A, valueFrom: {configMapKeyRef: {name: c, key: '..a'}}}]", "env[0].valueFrom.configMapKeyRef.key"),
                      ("env: [{name: A, valueFrom: {configMapKeyRef: {name: Not_A_Name, key: a}}}]", "env[0].valueFrom.configMapKeyRef.name"),
                      ("envFrom: [{configMapRef: {}}]", "envFrom[0].configMapRef"),
                      ("envFrom: [{secretRef: {name: ''}}]", "envFrom[0].secretRef.name")):
        assert sorted({p for _, _, p in _errors(bad + "\n")}) == [path], bad
    for good in ("env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: .a, optional: true}}}, {name: B, value: ''}]",
                 "env: [{name: A, value: '', valueFrom: {resourceFieldRef: {resource: limits.memory}}}]",
                 "envFrom: [{configMapRef: {name: cfg-}, prefix: X_}, {secretRef: {name: s.b}}]"):
        assert _errors(good + "\n") == [], good


def test_security_contexts_the_api_server_refuses() -> None:
    """The chart-wide and a role's security contexts: a field the API server does not know (kubectl's
    strict validation refuses it; helm would drop a misspelt one with a warning), an ID outside
    0-2147483647, a profile type it does not know or Localhost without its profile; null still
    removes a default."""
    for bad, path in (("podSecurityContext: {runAsNonroot: true}", "podSecurityContext.runAsNonroot"),
                      ("containerSecurityContext: {runAsUser: -1}", "containerSecurityContext.runAsUser"),
                      ("handlers: {job: {securityContext: {procMount: Masked}}}", "handlers.job.securityContext.procMount"),
                      ("handlers: {job: {podSecurityContext: {seccompProfile: {type: Localhost}}}}",
                       "handlers.job.podSecurityContext.seccompProfile"),
                      ("handlers: {web: {podSecurityContext: {fsGroup: 3000000000}}}", "handlers.web.podSecurityContext.fsGroup")):
        assert sorted({p for _, _, p in _errors(bad + "\n")}) == [path], bad
    for good in ("handlers: {job: {securityContext: {runAsUser: null, capabilities: {add: [NET_BIND_SERVICE]}}}}",
                 "podSecurityContext: {seccompProfile: {type: Localhost, localhostProfile: p.json}, sysctls: [{name: a.b, value: '1'}]}"):
        assert _errors(good + "\n") == [], good
