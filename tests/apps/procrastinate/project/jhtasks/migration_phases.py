"""procrastinate's two migration phases on Django's own migration API. Its migrations come as
`00NN_pre_…` (apply before the new code is deployed) and `00NN_post_…` (after every old
process is gone) pairs, one release at a time (procrastinate's docs: upgrade one minor
version at a time). Read by the `premigrate` and `schemacheck` commands."""

from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.graph import MigrationGraph

Key = tuple[str, str]


def post_deploy(graph: MigrationGraph) -> set[Key]:
    """This code's post-deploy migrations: per app, the `_post_` migrations after its last
    other one (the newest release's contract steps, e.g. procrastinate 3.2's
    0038_post_batch_defer_jobs). Older releases' `_post_` migrations belong to their own
    post-deploy phase, and on a fresh install no old code waits for them."""
    post: set[Key] = set()
    for leaf in graph.leaf_nodes():
        chain = [key for key in graph.forwards_plan(leaf) if key[0] == leaf[0]]
        while chain and "_post_" in chain[-1][1]:
            post.add(chain.pop())
    return post


def state() -> tuple[list[Key], list[Key], list[Key]]:
    """(pending, pending pre-deploy, ahead) for the default database in Django's plan order;
    ahead: applied migrations of installed apps that this code does not know."""
    executor = MigrationExecutor(connection)
    loader = executor.loader
    pending = [(m.app_label, m.name) for m, _ in executor.migration_plan(loader.graph.leaf_nodes())]
    post = post_deploy(loader.graph)
    known = set(loader.disk_migrations) | {r for m in loader.disk_migrations.values() for r in m.replaces}
    ahead = sorted(k for k in loader.applied_migrations if k[0] in loader.migrated_apps and k not in known)
    return pending, [k for k in pending if k not in post], ahead


def names(keys: list[Key], most: int = 4) -> str:
    """app.name, … of at most `most` keys, then how many more."""
    shown = ", ".join(f"{app}.{name}" for app, name in keys[:most])
    return shown + (f" and {len(keys) - most} more" if len(keys) > most else "")
