"""Calibrations (create with a trace and the policy in force, list, detail with per-share figures)
and the quota-table upload that makes a pool, a policy and its shares in one step."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.api.errors import input_error
from planner.calibration.api.serializers import (
    CalibrationDetailSerializer,
    CalibrationSerializer,
    QuotaTableUploadSerializer,
)
from planner.calibration.launch import CalibrationLaunch, reap_stale_calibrations, start_calibration
from planner.calibration.models import Calibration
from planner.calibration.quota_import import import_quota_table
from planner.capacity.api.serializers import PolicySerializer
from planner.traces.api.views import first_error
from scheduling.errors import InputError


class CalibrationViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Admins create and delete; every role reads. Creating enqueues the replay; poll the detail."""

    queryset = Calibration.objects.select_related("trace", "created_by")
    filterset_fields = ["trace", "policy", "status"]
    search_fields = ["policy_name", "trace__name"]
    ordering_fields = ["created_at", "finished_at"]

    def get_queryset(self):
        queryset = super().get_queryset()
        return queryset if self.action == "retrieve" else queryset.defer("metrics", "policy_snapshot")

    def get_serializer_class(self):
        return CalibrationDetailSerializer if self.action == "retrieve" else CalibrationSerializer

    def get_object(self) -> Calibration:
        calibration = super().get_object()
        outcome = reap_stale_calibrations(Calibration.objects.filter(pk=calibration.pk))
        if outcome["requeued"] or outcome["failed"]:
            calibration = super().get_object()
        return calibration

    def perform_create(self, serializer: CalibrationSerializer) -> None:
        launch = CalibrationLaunch.from_data(serializer.validated_data, created_by=self.request.user)
        serializer.instance = start_calibration(launch)


class QuotaTableView(APIView):
    """Upload a quota table: a new pool and policy (one share per team) are created from it."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": QuotaTableUploadSerializer},
        responses={
            201: PolicySerializer,
            400: OpenApiResponse(
                description='{"error": {"row": int|null, "field": str|null, "message": str}}'
            ),
        },
    )
    def post(self, request):
        """Admin only. ``kind`` helios-day (GPUs per VC per day: ``day``, default the last) or nodes
        (nodes per VC x ``gpus_per_node``); every share gets ``strategy``. Nothing is stored on error."""
        form = QuotaTableUploadSerializer(data=request.data)
        if not form.is_valid():
            return input_error(first_error(form.errors))
        data = form.validated_data
        upload = data["file"]
        if upload.size > settings.PLANNER_MAX_UPLOAD_BYTES:
            return input_error(InputError(f"the file is {upload.size:,} bytes: too large", field="file"))
        try:
            policy = import_quota_table(
                upload,
                kind=data["kind"],
                name=data["name"],
                day=data["day"] or None,
                gpus_per_node=data["gpus_per_node"],
                strategy=data["strategy"],
            )
        except InputError as error:
            return input_error(error)
        return Response(
            PolicySerializer(policy, context={"request": request}).data, status=status.HTTP_201_CREATED
        )
