"""Run.metrics_digest: a digest of the run's figures, written with them; computed here for the runs
stored before (what the page cache keys on)."""

import hashlib

import orjson
from django.db import migrations, models


def metrics_digest(metrics) -> str:
    """planner.studies.models.metrics_digest as of this migration (a copy: migrations stay as written)."""
    options = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
    return hashlib.sha256(orjson.dumps(metrics, default=str, option=options)).hexdigest()


def digest_stored_metrics(apps, schema_editor):
    Run = apps.get_model("studies", "Run")
    for run in Run.objects.exclude(metrics=None).only("id", "metrics").iterator(chunk_size=20):
        Run.objects.filter(pk=run.pk).update(metrics_digest=metrics_digest(run.metrics))


class Migration(migrations.Migration):
    dependencies = [
        ("studies", "0004_run_worker_process"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="metrics_digest",
            field=models.CharField(
                blank=True,
                default="",
                help_text="sha256 of metrics, written with them",
                max_length=64,
            ),
        ),
        migrations.RunPython(digest_stored_metrics, migrations.RunPython.noop),
    ]
