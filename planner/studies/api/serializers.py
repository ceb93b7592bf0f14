"""Studies and runs as JSON; a run's detail carries its headline summary, not its full metrics."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from planner.capacity.models import Policy
from planner.studies.models import Run, RunStatus, Study
from planner.traces.models import Trace
from planner.worker_rows import WORKER_FIELDS
from scheduling.window import measured_over


class RunSerializer(serializers.ModelSerializer):
    summary = serializers.JSONField(
        read_only=True, help_text="metrics.summary and per-share waits once the run succeeded"
    )
    status = serializers.ChoiceField(choices=RunStatus.choices, read_only=True)

    class Meta:
        model = Run
        fields = [
            "id",
            "study",
            "policy",
            "policy_name",
            *WORKER_FIELDS,
            "created_at",
            "started_at",
            "finished_at",
            "summary",
        ]
        read_only_fields = fields


class RunDetailSerializer(RunSerializer):
    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "policy_snapshot"]
        read_only_fields = fields


class StudySerializer(serializers.ModelSerializer):
    trace = serializers.PrimaryKeyRelatedField(queryset=Trace.objects.all())
    policies = serializers.PrimaryKeyRelatedField(
        queryset=Policy.objects.all(), many=True, help_text="one run per policy, replayed in parallel"
    )
    baseline = serializers.PrimaryKeyRelatedField(
        queryset=Policy.objects.all(),
        required=False,
        allow_null=True,
        help_text="one of the policies; the first one when omitted",
    )
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    status = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    runs = RunSerializer(many=True, read_only=True)
    window = serializers.SerializerMethodField(
        help_text="the common window every succeeded run is measured over once all runs finished "
        "(docs/semantics.md section 5: the union of their spans), null before"
    )

    class Meta:
        model = Study
        fields = [
            "id",
            "name",
            "description",
            "trace",
            "policies",
            "baseline",
            "created_by",
            "created_at",
            "status",
            "progress",
            "window",
            "runs",
        ]
        read_only_fields = ["created_at"]

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {k: {"type": "number"} for k in ("start", "end", "seconds")},
        }
    )
    def get_window(self, study: Study) -> dict | None:
        runs = list(study.runs.all())
        if not runs or any(not run.finished for run in runs):
            return None
        measured = {
            measured_over({"summary": run.summary})
            for run in runs
            if run.status == RunStatus.SUCCEEDED and run.summary
        }
        if len(measured) != 1:
            return None
        start, end = measured.pop()
        return {"start": start, "end": end, "seconds": end - start}

    def get_status(self, study: Study) -> str:
        return study.status

    def get_progress(self, study: Study) -> float:
        return study.progress

    def to_representation(self, study: Study) -> dict:
        data = super().to_representation(study)
        data["policies"] = [run.policy_id for run in study.runs.all()]
        return data
