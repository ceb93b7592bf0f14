"""What ``GET /api/traces/<id>/commons/`` answers: the trace, the run read (if any) and the three
games' figures as ``scheduling.commons`` computes them. Used for the OpenAPI schema."""

from __future__ import annotations

from rest_framework import serializers


class CommonsTraceSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class CommonsRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    study = serializers.IntegerField()
    policy_name = serializers.CharField()


class CommonsReportSerializer(serializers.Serializer):
    """The report; each game is the dict ``scheduling.commons`` returns (see README.md)."""

    trace = CommonsTraceSerializer()
    run = CommonsRunSerializer(allow_null=True, help_text="the run read for RESERVE hoarding, if any")
    priority_inflation = serializers.JSONField(
        help_text="per share and week: jobs, jobs at the top priority and at or above the 90th "
        "percentile, their fractions, and a least-squares trend with its t-statistic"
    )
    job_splitting = serializers.JSONField(
        help_text="bursts of small jobs: totals per share, the top users, bursts per share and week"
    )
    reserve_hoarding = serializers.JSONField(
        allow_null=True,
        help_text="with ?run=: per RESERVE share (and any share with stranded quota) the stranded "
        "GPU-hours and $, as a fraction of its quota, in total and per day; null without a run",
    )
