"""Traces as JSON, and the multipart upload form."""

from __future__ import annotations

import json

from rest_framework import serializers

from planner.traces.models import Trace
from planner.validators import validate_long_name


class TraceSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = Trace
        fields = [
            "id",
            "name",
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


class TraceUploadSerializer(serializers.Serializer):
    """A trace file (CSV or JSON, gzip allowed) with its name; ``mapping`` is a JSON object."""

    file = serializers.FileField()
    name = serializers.CharField(max_length=200, validators=[validate_long_name])
    description = serializers.CharField(required=False, allow_blank=True, default="")
    format = serializers.CharField(required=False, default="auto", max_length=40)
    mapping = serializers.JSONField(required=False, allow_null=True, default=None)

    def validate_name(self, name: str) -> str:
        if Trace.objects.filter(name=name).exists():
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
