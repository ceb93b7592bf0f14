"""Shapes of the exports API: the AWS Batch bundle it returns and the import payload it reads."""

from __future__ import annotations

from rest_framework import serializers

from planner.exports.importing import FORMATS
from planner.validators import validate_name


class AwsBatchBundleSerializer(serializers.Serializer):
    """What /api/policies/<id>/export/aws-batch/ returns (for the schema; built by the engine)."""

    policy = serializers.IntegerField(help_text="the exported policy's id")
    documents = serializers.DictField(
        child=serializers.JSONField(), help_text="file name -> the JSON input of one aws batch call"
    )
    script = serializers.CharField(help_text="sh script running every call with --cli-input-json file://...")
    notes = serializers.ListField(
        child=serializers.CharField(), help_text="knobs AWS Batch lacks, and what was written instead"
    )


class PolicyImportSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=[(k, v) for k, v in FORMATS.items()])
    pool = serializers.CharField(
        max_length=100,
        help_text="pool to put the policy on: an existing one with the same capacity, or a new one",
    )
    name = serializers.CharField(
        max_length=100,
        validators=[validate_name],
        required=False,
        allow_blank=True,
        help_text="the new policy's name (default: the imported)",
    )
    bundle = serializers.JSONField(
        required=False, help_text="aws-batch: the JSON of /export/aws-batch/, or only its documents"
    )
    yaml = serializers.CharField(required=False, trim_whitespace=False, help_text="kueue: the YAML text")
    file = serializers.FileField(
        required=False,
        help_text="instead of bundle or yaml: a JSON or YAML file; repeat the field for several (the four "
        "aws batch describe outputs; kubectl's List and the Kueue Configuration)",
    )
    job_queue = serializers.CharField(
        required=False, allow_blank=True, help_text="aws-batch: the job queue, when several are described"
    )
