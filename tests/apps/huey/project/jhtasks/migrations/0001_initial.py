"""The TaskRun table, and huey's own SqlHuey tables (huey's create_tables: the same as its
`create_huey_tables` command), so `migrate` is the one migration and `migrate --check` sees
both."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def huey_tables(apps: Any, schema_editor: Any) -> None:
    from huey.contrib.djhuey import HUEY
    HUEY.storage.initialize_schema()


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [
        migrations.CreateModel(
            name="TaskRun",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("task_id", models.CharField(max_length=64)),
                ("task", models.CharField(max_length=64)),
                ("seconds", models.FloatField(default=0)),
                ("worker", models.CharField(default="", max_length=128)),
                ("started_at", models.DateTimeField(auto_now_add=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.RunPython(huey_tables, migrations.RunPython.noop),
    ]
