"""Forecasts as JSON: the create payload (the snapshot as a field or an uploaded file, its format,
the policy, the history trace or none, samples, seed, arrivals, horizon), the list (status and
progress), the detail (the chunks, the per-share queues) and the jobs (FORECAST.json's shape)."""

from __future__ import annotations

from rest_framework import serializers

from planner.api.serializers import LaunchedSerializer
from planner.capacity.models import Policy
from planner.forecasts import bounds
from planner.forecasts.models import Arrivals, Forecast, ForecastChunk, ForecastJob, SnapshotFormat
from planner.traces.models import Trace


class ForecastSerializer(LaunchedSerializer):
    snapshot = serializers.JSONField(
        required=False, write_only=True,
        help_text="the snapshot: a JSON object, or its text (planner JSON, kubectl get workloads -A -o json, "
        f"or AWS Batch pages); at most {bounds.MAX_SNAPSHOT_JOBS:,} jobs (MAX_SNAPSHOT_JOBS)",
    )  # fmt: skip
    snapshot_file = serializers.FileField(
        required=False, write_only=True, help_text="the snapshot as an uploaded file, instead of ``snapshot``"
    )
    snapshot_format = serializers.ChoiceField(choices=SnapshotFormat.values, required=False, default="auto")
    policy = serializers.PrimaryKeyRelatedField(queryset=Policy.objects.all())
    history = serializers.PrimaryKeyRelatedField(
        queryset=Trace.objects.all(), required=False, allow_null=True, default=None,
        help_text="a stored trace: durations and arrivals are drawn from it (none: each job's own)",
    )  # fmt: skip
    samples = serializers.IntegerField(
        required=False, default=bounds.DEFAULT_SAMPLES,
        help_text=f"1 to {bounds.MAX_SAMPLES:,} (MAX_SAMPLES), and samples x jobs at most "
        f"{bounds.DEFAULT_MAX_JOB_SAMPLES:,} (MAX_JOB_SAMPLES)",
    )  # fmt: skip
    seed = serializers.IntegerField(required=False, default=0, min_value=0, max_value=2**63 - 1)
    arrivals = serializers.ChoiceField(
        choices=Arrivals.values, required=False, allow_null=True, default=None,
        help_text="history (the default with a history) or none",
    )  # fmt: skip
    horizon_days = serializers.FloatField(
        required=False,
        default=30.0,
        help_text=f"more than 0, at most {bounds.MAX_HORIZON_DAYS} (MAX_HORIZON_DAYS)",
    )

    class Meta:
        model = Forecast
        fields = [
            "id", "name", "source", "snapshot", "snapshot_file", "snapshot_format", "snapshot_time",
            "running_jobs", "pending_jobs", "policy", "policy_name", "history", "samples", "seed", "arrivals",
            "horizon_days", "chunks", "chunks_done", "status", "progress", "error", "created_by",
            "created_at",
            "finished_at",
        ]  # fmt: skip
        read_only_fields = [
            "source", "snapshot_time", "running_jobs", "pending_jobs", "policy_name", "chunks", "chunks_done",
            "error", "created_at", "finished_at",
        ]  # fmt: skip
        extra_kwargs = {"name": {"required": False}}

    def validate(self, attrs: dict) -> dict:
        given = [key for key in ("snapshot", "snapshot_file") if attrs.get(key) not in (None, "")]
        if len(given) != 1:
            raise serializers.ValidationError(
                {"snapshot": "give the snapshot once: as the snapshot field or as snapshot_file"}
            )
        upload = attrs.pop("snapshot_file", None)
        if upload is not None:
            limit = bounds.max_snapshot_bytes()
            if upload.size > limit:
                raise serializers.ValidationError(
                    {"snapshot_file": f"{upload.size:,} bytes: a snapshot file holds at most {limit:,} "
                     "(MAX_SNAPSHOT_BYTES)"}
                )  # fmt: skip
            attrs["snapshot"] = upload.read()
        return attrs


class ChunkSerializer(serializers.ModelSerializer):
    class Meta:
        model = ForecastChunk
        fields = [
            "index", "first", "count", "status", "attempts", "worker", "error", "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields


class ForecastDetailSerializer(ForecastSerializer):
    """With the chunks, ``shares`` (per share: the queue at T0 and when it starts; $ only for
    finance and admin) and ``snapshot_summary``; the jobs are at ``jobs/``, FORECAST.json at ``result/``."""

    chunk_rows = ChunkSerializer(many=True, read_only=True)
    shares = serializers.JSONField(read_only=True)

    class Meta(ForecastSerializer.Meta):
        fields = [*ForecastSerializer.Meta.fields, "shares", "chunk_rows"]
        read_only_fields = fields


def _quantiles(job: ForecastJob, prefix: str) -> dict:
    return {q: getattr(job, f"{prefix}_{q}") for q in ("p10", "p50", "p90")}


class ForecastJobSerializer(serializers.ModelSerializer):
    """A job of FORECAST.json (SEMANTICS.md section 11), with its user, type and size."""

    start = serializers.SerializerMethodField()
    end = serializers.SerializerMethodField()
    p_start_within = serializers.SerializerMethodField()
    baselines = serializers.SerializerMethodField()

    class Meta:
        model = ForecastJob
        fields = [
            "job_id", "user", "share", "state", "position", "reason", "instance_type", "instance_count",
            "gpus",
            "start", "end", "p_start_within", "baselines",
        ]  # fmt: skip
        read_only_fields = fields

    def get_start(self, job: ForecastJob) -> dict:
        return _quantiles(job, "start")

    def get_end(self, job: ForecastJob) -> dict:
        return _quantiles(job, "end")

    def get_p_start_within(self, job: ForecastJob) -> dict:
        return {"1h": job.p_start_1h, "24h": job.p_start_24h}

    def get_baselines(self, job: ForecastJob) -> dict:
        return {
            "requested_time": job.baseline_requested_time,
            "share_median_wait": job.baseline_share_median_wait,
        }
