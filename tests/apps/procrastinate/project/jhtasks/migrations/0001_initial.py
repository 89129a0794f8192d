"""v1 schema of jhtasks: the task_run table. It runs before procrastinate's own first
migration, so a lock that holds it up leaves the database without procrastinate's schema."""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []
    run_before = [("procrastinate", "0001_initial")]
    operations = [
        migrations.CreateModel(
            name="TaskRun",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("job_id", models.BigIntegerField()),
                ("task", models.CharField(max_length=64)),
                ("seconds", models.FloatField(default=0)),
                ("started_at", models.DateTimeField(auto_now_add=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
            ],
        ),
    ]
