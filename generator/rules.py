"""The lifecycle policy rules JH001…JH012: each has a stable id, a severity, a one-line
message, the fix and README documentation. Every expected number comes from generator.model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from generator import model
from generator.findings import ERROR, POLICY, WARNING, Finding
from generator.schema import dotted
from generator.values import ValuesFile, merged

KeyPath = tuple[str, ...]


class _Skip(Exception):
    """A value a rule needs is missing or mistyped (the schema check reports that)."""


@dataclass(frozen=True)
class Hit:
    """One rule violation before it is located: the key paths it concerns (the first one
    present in the user's file is where it is reported), the message and the fix."""

    paths: Sequence[KeyPath]
    message: str
    fix: str


@dataclass(frozen=True)
class Context:
    """What a rule sees: merged values (defaults + file), the file's own values, the target
    kube version."""

    values: Mapping[str, Any]
    user: Mapping[str, Any]
    kube_version: str

    def get(self, dotted_path: str, default: Any = None) -> Any:
        """Merged value at a dotted path, or default."""
        node: Any = self.values
        for part in dotted_path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def user_sets(self, dotted_path: str) -> bool:
        """True when the user's file itself sets the key to a non-null value."""
        node: Any = self.user
        for part in dotted_path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return False
            node = node[part]
        return node is not None

    def num(self, dotted_path: str) -> float:
        """A numeric merged value; _Skip when missing or not a number."""
        value = self.get(dotted_path)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Skip(dotted_path)
        return value

    def flag(self, dotted_path: str, default: bool) -> bool:
        """A boolean merged value (default when missing); _Skip when mistyped."""
        value = self.get(dotted_path, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise _Skip(dotted_path)
        return value

    def hook_mode(self) -> bool:
        """The migration runs as a pre-install/pre-upgrade hook."""
        return self.flag("migration.enabled", True) and self.flag("migration.useHelmHooks", True)


@dataclass(frozen=True)
class Rule:
    """A policy rule and its documentation."""

    id: str
    severity: str
    title: str
    doc: str  # what is wrong and why (README)
    fix: str  # the generic fix (README); hits carry the concrete one
    check: Callable[[Context], Iterable[Hit]]


def _p(text: str) -> KeyPath:
    return tuple(text.split("."))


def _jh001(ctx: Context) -> Iterator[Hit]:
    for role in model.enabled_roles(ctx.values):
        try:
            grace = model.role_grace(ctx.values, role)
        except (KeyError, TypeError, ValueError) as exc:
            raise _Skip(role) from exc
        if grace.explicit is not None and grace.explicit < grace.computed:
            key = f"handlers.{role}.terminationGracePeriodSeconds"
            yield Hit(
                [_p(key), _p(f"handlers.{role}.maxJobRuntimeSeconds")],
                f"{key}={grace.explicit} is below the computed grace {grace.computed} "
                f"(ceil({grace.max_job_runtime}*{grace.multiplier})+{grace.buffer}+{grace.pre_stop}): "
                f"rollouts kill {role} handlers mid-job",
                f"remove {key} (the chart computes {grace.computed}) or set it to at least {grace.computed}",
            )


def _jh002(ctx: Context) -> Iterator[Hit]:
    live, ready, beat = ctx.num("liveness.maxAgeSeconds"), ctx.num("readiness.maxAgeSeconds"), ctx.num(
        "heartbeat.intervalSeconds")
    if live < 3 * ready:
        yield Hit([_p("liveness.maxAgeSeconds"), _p("readiness.maxAgeSeconds")],
                  f"liveness.maxAgeSeconds={live:g} is less than 3 * readiness.maxAgeSeconds={ready:g}: "
                  "a slow handler is restarted instead of just taken out of rotation",
                  f"set liveness.maxAgeSeconds to at least {3 * ready:g}")
    if ready < 3 * beat:
        yield Hit([_p("readiness.maxAgeSeconds"), _p("heartbeat.intervalSeconds")],
                  f"readiness.maxAgeSeconds={ready:g} is less than 3 * heartbeat.intervalSeconds={beat:g}: "
                  "one late heartbeat flaps readiness",
                  f"set readiness.maxAgeSeconds to at least {3 * beat:g}")


def _jh003(ctx: Context) -> Iterator[Hit]:
    if not (ctx.flag("migration.enabled", True) and ctx.flag("waitForMigrations.enabled", True)):
        return
    wait = ctx.num("waitForMigrations.timeoutSeconds")
    deadline = ctx.num("migration.activeDeadlineSeconds")
    db_wait = ctx.num("migration.waitForDatabase.timeoutSeconds")
    if wait < deadline + db_wait:
        yield Hit([_p("waitForMigrations.timeoutSeconds"), _p("migration.activeDeadlineSeconds"),
                   _p("migration.waitForDatabase.timeoutSeconds")],
                  f"waitForMigrations.timeoutSeconds={wait:g} is shorter than migration.activeDeadlineSeconds"
                  f"={deadline:g} + migration.waitForDatabase.timeoutSeconds={db_wait:g}: handlers give up "
                  "while the migration may still legitimately run",
                  f"set waitForMigrations.timeoutSeconds to at least {deadline + db_wait:g}")


def _jh004(ctx: Context) -> Iterator[Hit]:
    if ctx.hook_mode() and ctx.flag("database.createdByRelease", False):
        yield Hit([_p("database.createdByRelease"), _p("migration.useHelmHooks")],
                  "database.createdByRelease=true with migration.useHelmHooks=true: the pre-install hook "
                  "waits for a database the release only creates after the hook (install deadlock)",
                  "create the database outside this release, or set migration.useHelmHooks=false")


def _jh005(ctx: Context) -> Iterator[Hit]:
    existing = ctx.get("database.existingSecret") or ""
    if ctx.hook_mode() and not existing and not ctx.flag("database.secretIsHook", True):
        yield Hit([_p("database.secretIsHook"), _p("migration.useHelmHooks")],
                  "hook mode with a chart-created database Secret that is not a hook: the pre-install "
                  "migration Job starts before the Secret exists (install deadlock)",
                  "set database.secretIsHook=true (the default) or use database.existingSecret")


def _jh006(ctx: Context) -> Iterator[Hit]:
    if not ctx.flag("migration.enabled", True) or ctx.flag("migration.useHelmHooks", True):
        return
    suffix = ctx.get("migration.jobNameSuffix", "hash")
    if suffix != "hash":
        yield Hit([_p("migration.jobNameSuffix"), _p("migration.useHelmHooks")],
                  f"migration.useHelmHooks=false with migration.jobNameSuffix={suffix!r}: the Job name does "
                  "not change with its spec, so upgrades fail on the immutable Job template or skip the migration",
                  'set migration.jobNameSuffix: "hash"')


def _jh007(ctx: Context) -> Iterator[Hit]:
    if not ctx.flag("startupProbe.enabled", True) or not ctx.flag("startupProbe.force", False):
        return
    minimum = str(ctx.get("startupProbe.minKubeVersion", "1.18"))
    if not model.at_least(ctx.kube_version, minimum) and not ctx.flag("startupProbe.featureGateEnabled", False):
        yield Hit([_p("startupProbe.force"), _p("startupProbe.featureGateEnabled")],
                  f"startupProbe.force=true on Kubernetes {ctx.kube_version} (below startupProbe.minKubeVersion="
                  f"{minimum}) without startupProbe.featureGateEnabled: the API server drops the probe",
                  "enable the StartupProbe feature gate and set startupProbe.featureGateEnabled=true, "
                  "or remove startupProbe.force")


def _jh008(ctx: Context) -> Iterator[Hit]:
    key = "liveness.terminationGracePeriodSeconds"
    if ctx.user_sets(key) and not model.at_least(ctx.kube_version, model.PROBE_GRACE_MIN_VERSION):
        yield Hit([_p(key)],
                  f"{key} is set but Kubernetes {ctx.kube_version} < {model.PROBE_GRACE_MIN_VERSION} ignores "
                  "probe-level grace: a wedged handler is killed only after the full drain grace",
                  f"target Kubernetes >= {model.PROBE_GRACE_MIN_VERSION}, or remove {key} from this file")


def _jh009(ctx: Context) -> Iterator[Hit]:
    tag = ctx.get("image.tag")
    if tag is None or (isinstance(tag, str) and tag.strip() in ("", "latest")):
        shown = "empty" if not tag else repr(tag)
        yield Hit([_p("image.tag"), _p("image")],
                  f"image.tag is {shown}: the migration, init container and handlers may run different "
                  "images and the schema revision is not pinned",
                  'pin image.tag to a release, e.g. "2"')


def _jh010(ctx: Context) -> Iterator[Hit]:
    handlers = ctx.get("handlers") or {}
    for role in model.enabled_roles(ctx.values):
        spec = handlers.get(role) or {}
        resources = spec.get("resources") or {}
        if spec.get("port") is None and not (isinstance(resources, Mapping) and resources.get("requests")):
            yield Hit([_p(f"handlers.{role}.resources"), _p(f"handlers.{role}")],
                      f"job handler role {role!r} has no resources.requests: the scheduler packs it onto full "
                      "nodes and it is evicted first, mid-job",
                      f"set handlers.{role}.resources.requests (cpu and memory)")


def _jh011(ctx: Context) -> Iterator[Hit]:
    grace = model.probe_grace(ctx.values, ctx.kube_version)
    if grace is None:
        return
    pre_stop = ctx.num("drain.preStopSeconds")
    if grace <= pre_stop:
        yield Hit([_p("liveness.terminationGracePeriodSeconds"), _p("drain.preStopSeconds")],
                  f"liveness.terminationGracePeriodSeconds={grace} is not above drain.preStopSeconds={pre_stop:g}: "
                  "a liveness restart runs preStop first, so its sleep uses the whole probe grace and the "
                  "wedged handler is SIGKILLed before it ever gets SIGTERM to requeue its jobs",
                  f"set liveness.terminationGracePeriodSeconds to at least {pre_stop + 5:g} "
                  "(preStopSeconds + 5 s for the handler to requeue and exit)")


MIN_REQUEUE_SECONDS = 2


def _jh012(ctx: Context) -> Iterator[Hit]:
    buffer = ctx.num("drain.bufferSeconds")
    if buffer // 2 < MIN_REQUEUE_SECONDS:
        yield Hit([_p("drain.bufferSeconds")],
                  f"drain.bufferSeconds={buffer:g} leaves {int(buffer // 2)} s between DRAIN_DEADLINE_SECONDS and "
                  "the SIGKILL: a handler that hits its drain deadline is killed while it hands its jobs back, "
                  "so they wait for their leases to expire instead of rerunning at once",
                  f"set drain.bufferSeconds to at least {2 * MIN_REQUEUE_SECONDS}")


RULES: tuple[Rule, ...] = (
    Rule("JH001", ERROR, "grace period below the computed drain time",
         "An explicit handlers.<role>.terminationGracePeriodSeconds is below "
         "ceil(maxJobRuntimeSeconds * drain.runtimeMultiplier) + drain.bufferSeconds + drain.preStopSeconds.",
         "Remove the explicit value (the chart computes it) or raise it to the computed value.", _jh001),
    Rule("JH002", ERROR, "probe windows too close",
         "liveness.maxAgeSeconds < 3 * readiness.maxAgeSeconds, or readiness.maxAgeSeconds < 3 * "
         "heartbeat.intervalSeconds.",
         "Widen liveness.maxAgeSeconds / readiness.maxAgeSeconds to at least 3* the window below.", _jh002),
    Rule("JH003", ERROR, "handlers stop waiting before the migration may end",
         "waitForMigrations.timeoutSeconds < migration.activeDeadlineSeconds + "
         "migration.waitForDatabase.timeoutSeconds.",
         "Raise waitForMigrations.timeoutSeconds to at least the sum.", _jh003),
    Rule("JH004", ERROR, "hook mode with a database the release creates",
         "migration.useHelmHooks=true with database.createdByRelease=true: the pre-install hook runs before "
         "the release's own database exists (deadlock).",
         "Create the database outside the release or set migration.useHelmHooks=false.", _jh004),
    Rule("JH005", ERROR, "hook mode with a Secret that is not a hook",
         "migration.useHelmHooks=true, no database.existingSecret and database.secretIsHook=false: the "
         "chart's Secret is created after the pre-install migration Job that needs it (deadlock).",
         "Keep database.secretIsHook=true (default) or use database.existingSecret.", _jh005),
    Rule("JH006", ERROR, "plain migration Job with a fixed name",
         'migration.useHelmHooks=false with migration.jobNameSuffix other than "hash": the Job name does '
         "not change with its spec.",
         'Set migration.jobNameSuffix: "hash".', _jh006),
    Rule("JH007", ERROR, "startupProbe forced without the feature gate",
         "startupProbe.force=true below startupProbe.minKubeVersion (vs --kube-version) without "
         "startupProbe.featureGateEnabled=true.",
         "Enable the StartupProbe feature gate and declare it, or drop startupProbe.force.", _jh007),
    Rule("JH008", ERROR, "probe-level grace below Kubernetes 1.25",
         "The file sets liveness.terminationGracePeriodSeconds and --kube-version < 1.25, which ignores it.",
         "Target Kubernetes >= 1.25 or remove the key from the file.", _jh008),
    Rule("JH009", ERROR, "image tag latest or unset",
         "image.tag is empty, null or `latest`.",
         "Pin image.tag to a release.", _jh009),
    Rule("JH010", WARNING, "job handler without resource requests",
         "An enabled role without a port (a job handler) has no resources.requests.",
         "Set handlers.<role>.resources.requests.", _jh010),
    Rule("JH011", ERROR, "probe-level grace used up by the preStop sleep",
         "On Kubernetes >= 1.25, liveness.terminationGracePeriodSeconds <= drain.preStopSeconds: a liveness "
         "restart runs preStop first and SIGKILLs the handler before SIGTERM.",
         "Set liveness.terminationGracePeriodSeconds to at least drain.preStopSeconds + 5.", _jh011),
    Rule("JH012", WARNING, "no time left to requeue after the drain deadline",
         "drain.bufferSeconds < 4: DRAIN_DEADLINE_SECONDS (grace - preStopSeconds - bufferSeconds/2) leaves "
         "under 2 s before SIGKILL to release the leases of unfinished jobs.",
         "Set drain.bufferSeconds to at least 4.", _jh012),
)
RULES_BY_ID = {r.id: r for r in RULES}


def check(vf: ValuesFile, kube_version: str) -> list[Finding]:
    """Run every rule on a loaded values file (merged over the chart defaults)."""
    ctx = Context(values=merged(vf.data), user=vf.data, kube_version=kube_version)
    findings: list[Finding] = []
    for rule in RULES:
        try:
            hits = list(rule.check(ctx))
        except (_Skip, KeyError, TypeError, ValueError, AttributeError):
            continue  # a mistyped value: the schema check reports it
        for hit in hits:
            findings.append(_locate(vf, rule, hit))
    return findings


def _locate(vf: ValuesFile, rule: Rule, hit: Hit) -> Finding:
    """Report at the first of the hit's key paths the file itself sets."""
    for path in hit.paths:
        line, col, found = vf.position(path)
        if found:
            return Finding(vf.path, line, col, rule.id, rule.severity, POLICY, dotted(path), hit.message, hit.fix)
    line, col, _ = vf.position(hit.paths[0])
    return Finding(vf.path, line, col, rule.id, rule.severity, POLICY, dotted(hit.paths[0]),
                   hit.message + " (from chart defaults)", hit.fix)
