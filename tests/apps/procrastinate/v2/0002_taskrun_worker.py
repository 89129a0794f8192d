"""v2 schema of jhtasks (copied into jhtasks/migrations/ for the :2 image only): adds
task_run.worker, an ALTER TABLE that waits for any lock held on jhtasks_taskrun."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jhtasks", "0001_initial"), ("procrastinate", "0041_post_retry_failed_job")]
    operations = [
        migrations.AddField(model_name="taskrun", name="worker", field=models.CharField(max_length=64, default="", blank=True)),
    ]
