"""`django-admin premigrate`: the pre-deploy phase (the chart's `commands.migrate`)."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand

from jhtasks import migration_phases as phases


class Command(BaseCommand):
    help = ("Apply every pending migration but this code's post-deploy ones (per app, the `_post_` "
            "migrations after its last other one), with Django's migrate; none of those pending: "
            "the same as `migrate`. `migrate` applies the rest after the rollout.")

    def handle(self, *args: Any, **options: Any) -> None:
        pending, pre, _ = phases.state()
        if pre == pending:
            call_command("migrate", interactive=False, verbosity=options["verbosity"])
            return
        if not pre:
            self.stdout.write("No pre-deploy migrations to apply.")
        for app, name in {app: name for app, name in pre}.items():  # each app's last pre-deploy one
            call_command("migrate", app, name, interactive=False, verbosity=options["verbosity"])
        post = [key for key in pending if key not in pre]
        self.stdout.write(f"Post-deploy migrations left for `migrate` after the rollout: {phases.names(post)}")
