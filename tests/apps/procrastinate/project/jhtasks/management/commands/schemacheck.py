"""`django-admin schemacheck`: the chart's `commands.schemaCheck` for two migration phases."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from jhtasks import migration_phases as phases

BEHIND, AHEAD, UNREACHABLE = 3, 4, 5


class Command(BaseCommand):
    help = ("Exit 0 when the database is at this code's pre-deploy revision or later (only its "
            "post-deploy migrations pending, or none), 3 when another migration is pending (behind), "
            "4 when it has applied migrations this code does not know (ahead), 5 when unreachable.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--accept-ahead", action="store_true",
                            help="exit 0 with a warning when ahead (a readiness probe of old code during a split upgrade)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            pending, pre, ahead = phases.state()
        except DatabaseError as exc:
            raise CommandError(f"database unreachable: {' '.join(str(exc).split())}", returncode=UNREACHABLE)
        if pre:
            raise CommandError(f"schema behind this code: {len(pre)} pre-deploy migration(s) pending "
                               f"({phases.names(pre)}): run `django-admin premigrate` first", returncode=BEHIND)
        if ahead:
            message = (f"schema ahead of this code: the database has applied {len(ahead)} migration(s) "
                       f"it does not know ({phases.names(ahead)})")
            if not options["accept_ahead"]:
                raise CommandError(message, returncode=AHEAD)
            self.stdout.write(f"WARNING: {message}; accepted (--accept-ahead)")
        elif pending:
            self.stdout.write(f"schema at this code's pre-deploy revision; post-deploy pending: {phases.names(pending)}")
        else:
            self.stdout.write("schema at this code's head")
