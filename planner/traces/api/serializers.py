"""Traces as JSON, and the multipart upload form."""

from __future__ import annotations

import json

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from planner.traces.models import ParseStatus, Trace
from planner.validators import validate_long_name


class ParseSerializer(serializers.Serializer):
    """Where the parse of an upload stands: bytes read of the file's size, attempts, the error."""

    bytes_read = serializers.IntegerField()
    bytes_total = serializers.IntegerField(source="upload_bytes")
    fraction = serializers.FloatField(source="progress")
    attempts = serializers.IntegerField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class ParseErrorSerializer(serializers.Serializer):
    row = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class TraceSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    status = serializers.ChoiceField(
        source="state",
        choices=["parsing", "ready", "failed"],
        read_only=True,
        help_text="parsing (a worker reads the upload), ready (studies may use it) or failed (see error)",
    )
    url = serializers.SerializerMethodField(help_text="this trace in the API (poll it while parsing)")
    parse = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()

    class Meta:
        model = Trace
        fields = [
            "id",
            "url",
            "name",
            "status",
            "parse",
            "error",
            "description",
            "format",
            "source_name",
            "mapping",
            "job_count",
            "summary",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields

    def get_url(self, trace: Trace) -> str:
        path = reverse("trace-detail", args=[trace.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    @extend_schema_field(ParseSerializer)
    def get_parse(self, trace: Trace) -> dict:
        return ParseSerializer(trace).data

    @extend_schema_field(ParseErrorSerializer(allow_null=True))
    def get_error(self, trace: Trace) -> dict | None:
        return trace.error_dict()


class TraceUploadSerializer(serializers.Serializer):
    """A trace file (CSV or JSON, gzip allowed) with its name; ``mapping`` is a JSON object."""

    file = serializers.FileField()
    name = serializers.CharField(max_length=200, validators=[validate_long_name])
    description = serializers.CharField(required=False, allow_blank=True, default="")
    format = serializers.CharField(required=False, default="auto", max_length=40)
    mapping = serializers.JSONField(required=False, allow_null=True, default=None)

    def validate_name(self, name: str) -> str:
        # a failed upload does not hold its name: the new upload replaces it
        if Trace.objects.filter(name=name).exclude(status=ParseStatus.FAILED).exists():
            raise serializers.ValidationError(f"a trace named {name!r} already exists")
        return name

    def validate_mapping(self, mapping):
        if isinstance(mapping, str):
            try:
                mapping = json.loads(mapping) if mapping.strip() else None
            except ValueError as error:
                raise serializers.ValidationError(f"not valid JSON: {error}") from None
        if mapping is not None and not isinstance(mapping, dict):
            raise serializers.ValidationError("must be a JSON object")
        return mapping
