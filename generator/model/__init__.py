"""The lifecycle policy model: the single source of the numbers the chart must render.

Every expected value in the generated tests, every policy rule and `jobhandlers grace`
comes from these functions; the chart's templates implement the same formulas in
`chart/templates/_grace.tpl` and `_probes.tpl`, and the generated tests hold them equal.

One module per concern: versions, roles, grace, probes, drain, migration, containers, env,
launcher, scalein, autoscaling. Import the package (`from generator import model`): every name is here."""

from __future__ import annotations

from .versions import (  # noqa: F401
    KUBE_VERSIONS, DEFAULT_KUBE_VERSION, PROBE_GRACE_MIN_VERSION, PDB_V1_MIN_VERSION,
    SECCOMP_FIELD_MIN_VERSION, GRPC_PROBE_MIN_VERSION, NATIVE_SLEEP_MIN_VERSION, STOP_SIGNAL_MIN_VERSION,
    NATIVE_SIDECAR_MIN_VERSION, SPREAD_MIN_VERSION, SPREAD_MATCH_LABEL_KEYS_MIN_VERSION,
    ORDINAL_MIN_VERSION, STS_MAX_UNAVAILABLE_MIN_VERSION, RELAXED_ENV_NAMES_MIN_VERSION,
    STRICT_CIDR_MIN_VERSION, NODE_AFFINITY_LABEL_VALUES_MIN_VERSION, SLEEP_ZERO_MIN_VERSION, UNHEALTHY_POD_EVICTION_MIN_VERSION,
    POD_REPLACEMENT_POLICY_MIN_VERSION, POST_DEPLOY_PROJECTED_TOKEN_MIN_VERSION, version_tuple,
    minor_version, at_least, pdb_api_version, native_sidecars
)
from .roles import (  # noqa: F401
    WORKLOAD_KINDS, IMAGE_TAG_PATTERN, RELEASE_NAME, NAMESPACE, role_kind, enabled_roles, image_reference,
    version_label, node_loss_toleration, pdb_unhealthy_pod_eviction_policy
)
from .drain import (  # noqa: F401
    DRAIN_MODES, DRAIN_FALLBACK, Drain, role_drain, prestop_action, stop_signal_rendered, needs_shell
)
from .grace import (  # noqa: F401
    Grace, computed_grace, role_grace, max_grace
)
from .probes import (  # noqa: F401
    PROBE_KINDS, HANDLER_KINDS, PROBE_DEFAULTS, startup_probe_rendered, liveness_initial_delay, probe_grace,
    Probe, probe_candidate_keys, probe_candidates, resolve_probe, role_startup_probe_rendered,
    role_liveness_initial_delay, rendered_probe_grace
)
from .migration import (  # noqa: F401
    post_deploy_enabled, post_deploy_rollout_timeout, migration_pod_replacement_policy
)
from .scalein import (  # noqa: F401
    DELETION_COST_POLICY_MIN_VERSION, SCALE_IN, role_prefers_idle
)
from .launcher import (  # noqa: F401
    MUTATING_ADMISSION_POLICY_MIN_VERSION, POD_SECURITY_LEVELS, LAUNCHER_DEFAULT_RULES, Launcher,
    role_launcher, launcher_mutates, launched_pods_admitted, role_calls_api
)
from .containers import (  # noqa: F401
    user_containers, init_container_order, regular_sidecars, container_resources, owned_resources,
    parse_quantity
)
from .env import (  # noqa: F401
    ROLE_ENV, COMMON_ENV, START_DRAINED_ENV, ACCEPT_AHEAD_ENV, WAIT_TIMEOUT_ENV, IDENTITY_ENV,
    CHART_ENV_NAMES, handler_env_names, common_env_names, EnvContainer, env_containers, env_references
)
from .autoscaling import (  # noqa: F401
    HPA_V2_MIN_VERSION, HPA_BEHAVIOR_MIN_VERSION, AUTOSCALING, role_autoscaler, autoscaler_poll_seconds,
    derived_scale_down
)
