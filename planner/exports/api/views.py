"""A stored policy as AWS Batch CLI inputs (JSON) or Kueue YAML, and the import of either as a new policy.

Every role may export; importing creates a policy, so it needs the admin role (the API's default
permission, ``IsPlannerUser``).
"""

from __future__ import annotations

import json

import yaml
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.accounts.money import shows_money
from planner.api.errors import as_drf, input_error
from planner.api.parsers import BoundedJSONParser
from planner.api.renderers import RoleJSONRenderer
from planner.capacity.api.serializers import PolicySerializer
from planner.capacity.models import Policy
from planner.exports.api.serializers import AwsBatchBundleSerializer, PolicyImportSerializer
from planner.exports.importing import read_configuration, read_configuration_files, store_imported_policy
from scheduling.errors import InputError
from scheduling.export import to_aws_batch, to_kueue_yaml
from scheduling.model import Policy as EnginePolicy

INPUT_ERROR = OpenApiResponse(description='{"error": {"row": null, "field": str|null, "message": str}}')


class YAMLRenderer(BaseRenderer):
    """text/yaml: a string as it is (the export), anything else (an error) dumped as YAML."""

    media_type = "text/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if isinstance(data, str):
            return data.encode(self.charset)
        plain = json.loads(json.dumps(data))  # DRF's ErrorDetail strings as plain strings
        return yaml.safe_dump(plain, sort_keys=False).encode(self.charset)


def engine_policy_of(pk: int) -> EnginePolicy:
    """The stored policy as the engine sees it (404 when missing, 400 when it is not valid)."""
    policy = get_object_or_404(Policy.objects.select_related("pool"), pk=pk)
    try:
        return policy.engine_policy()
    except DjangoValidationError as error:
        raise as_drf(error) from None


class AwsBatchExportView(APIView):
    """The policy as AWS Batch quota-management CLI inputs."""

    @extend_schema(
        operation_id="policies_export_aws_batch",
        responses={200: AwsBatchBundleSerializer, 400: INPUT_ERROR},
        tags=["policies"],
    )
    def get(self, request, pk: int):
        """``documents``: one JSON object per ``aws batch`` call (create-service-environment,
        create-scheduling-policy with quotaSharePolicy, create-job-queue, one create-quota-share per
        share), keyed by file name; ``script``: the shell script running them with
        ``--cli-input-json file://...``; ``notes``: every knob AWS Batch lacks and what was written
        instead. POST the same object to /api/policy-imports/ (format aws-batch) to read it back."""
        bundle = to_aws_batch(engine_policy_of(pk), prices=shows_money(request.user))
        return Response({"policy": pk, **bundle.to_dict()})


class KueueExportView(APIView):
    """The policy as Kueue YAML."""

    renderer_classes = [YAMLRenderer, RoleJSONRenderer]

    @extend_schema(
        operation_id="policies_export_kueue",
        parameters=[
            OpenApiParameter(
                "priorities",
                OpenApiTypes.STR,
                description="job priorities to make a WorkloadPriorityClass for, comma separated "
                "(default 0): class priority-<p> has value p",
            )
        ],
        responses={(200, "text/yaml"): OpenApiTypes.STR, (400, "application/json"): INPUT_ERROR},
        tags=["policies"],
    )
    def get(self, request, pk: int):
        """Multi-document YAML (kueue.x-k8s.io/v1beta1): a Cohort (its own nominalQuota is the
        unassigned capacity), one ResourceFlavor per instance type, one ClusterQueue per share with
        nvidia.com/gpu quotas (instances x GPUs per instance), borrowingLimit, lendingLimit and
        preemption, and WorkloadPriorityClasses. Leading comments say what Kueue cannot express."""
        policy = engine_policy_of(pk)
        try:
            text = to_kueue_yaml(
                policy,
                priorities=_priorities(request.query_params.get("priorities", "0")),
                prices=shows_money(request.user),
            )
        except InputError as error:
            return _json_error(error)
        return HttpResponse(text, content_type="text/yaml; charset=utf-8")


class PolicyImportView(APIView):
    """Import an AWS Batch bundle or Kueue YAML as a new policy."""

    parser_classes = [BoundedJSONParser, MultiPartParser, FormParser]

    @extend_schema(
        operation_id="policy_imports_create",
        request={
            "application/json": PolicyImportSerializer,
            "multipart/form-data": PolicyImportSerializer,
        },
        responses={201: PolicySerializer, 400: INPUT_ERROR},
        tags=["policies"],
    )
    def post(self, request):
        """Admin only. ``format`` aws-batch (``bundle``: the JSON of /export/aws-batch/ or just its
        documents, or live describe outputs) or kueue (``yaml``: the YAML text, the planner's export or
        ``kubectl get ... -o yaml``); or one or more ``file`` parts with either (AWS: the outputs of
        describe-service-environments, describe-scheduling-policies, list-quota-shares and
        describe-job-queues; Kueue: the List and, optionally, the Kueue Configuration). The policy goes
        on pool ``pool``: an existing pool must have the imported capacity, a new one is created with it.
        What the planner does not model is listed in the new policy's description."""
        form = PolicyImportSerializer(data=request.data)
        if not form.is_valid():
            return Response(form.errors, status=status.HTTP_400_BAD_REQUEST)
        values = form.validated_data
        job_queue = values.get("job_queue") or None
        try:
            uploads = request.FILES.getlist("file")
            if uploads:
                data = read_configuration_files(values["format"], _files(uploads), job_queue=job_queue)
            else:
                data = read_configuration(values["format"], _source(values), job_queue=job_queue)
            policy = store_imported_policy(data, pool_name=values["pool"], name=values.get("name") or None)
        except InputError as error:
            return input_error(error)
        return Response(PolicySerializer(policy, context={"request": request}).data, status=201)


def _files(uploads) -> list[tuple[str, bytes]]:
    """(name, content) of each uploaded configuration file."""
    return [(upload.name or f"file {i + 1}", upload.read()) for i, upload in enumerate(uploads)]


def _source(values: dict):
    """The bundle (JSON) or YAML text of the import, from the payload."""
    if values["format"] == "aws-batch":
        if values.get("bundle") is None:
            raise InputError("give the bundle (JSON) or a file", field="bundle")
        return values["bundle"]
    if not values.get("yaml"):
        raise InputError("give the YAML text or a file", field="yaml")
    return values["yaml"]


def _priorities(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()] or [0]
    except ValueError:
        raise InputError(
            f"{text!r} is not a comma-separated list of whole numbers", field="priorities"
        ) from None


def _json_error(error: InputError) -> HttpResponse:
    return HttpResponse(
        json.dumps({"error": error.as_dict()}), status=400, content_type="application/json; charset=utf-8"
    )
