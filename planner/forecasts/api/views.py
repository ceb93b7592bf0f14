"""Forecasts over the API. Every role may start one (the question is every team member's) and
read them; only admins delete. Poll the detail for progress; read the jobs a page at a time with
``?search=`` over job ids and users; FORECAST.json whole at ``result/``."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics, mixins, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response

from planner.accounts.permissions import can_edit, can_read
from planner.forecasts.api.serializers import (
    ForecastDetailSerializer,
    ForecastJobSerializer,
    ForecastSerializer,
)
from planner.forecasts.launch import ForecastLaunch, reap_forecasts, start_forecast
from planner.forecasts.models import Forecast, ForecastJob, Source
from planner.studies.models import RunStatus


class ForecastPermission(BasePermission):
    """Read and create: any role; delete: admin."""

    message = "Your role does not allow this: forecasts need a planner role, deleting one the admin role."

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS or request.method == "POST":
            return can_read(request.user)
        return can_edit(request.user)


class ForecastViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """When will each job of a queue snapshot start: quantiles over samples replayed on the workers."""

    queryset = Forecast.objects.select_related("created_by").defer("snapshot", "policy_snapshot", "result")
    permission_classes = [ForecastPermission]
    filterset_fields = ["status", "policy", "history", "source"]
    search_fields = ["name", "policy_name"]
    ordering_fields = ["created_at", "finished_at"]

    def get_serializer_class(self):
        return ForecastDetailSerializer if self.action == "retrieve" else ForecastSerializer

    def get_queryset(self):
        queryset = super().get_queryset()
        return queryset if self.action == "retrieve" else queryset.defer("shares")

    def get_object(self) -> Forecast:
        forecast = super().get_object()
        if not forecast.finished:  # the reader is who waits: chunks whose worker died go back
            reap_forecasts(Forecast.objects.filter(pk=forecast.pk))
            forecast = super().get_object()
        return forecast

    def perform_create(self, serializer: ForecastSerializer) -> None:
        data = serializer.validated_data
        launch = ForecastLaunch.from_data(data, source=Source.API, created_by=self.request.user)
        serializer.instance = start_forecast(launch)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def result(self, request, pk=None):
        """FORECAST.json (SEMANTICS.md section 11) once the forecast has succeeded."""
        forecast = self.get_object()
        if forecast.status != RunStatus.SUCCEEDED:
            raise NotFound(f"forecast {forecast.pk} has no result: it is {forecast.status}")
        return Response(Forecast.objects.values_list("result", flat=True).get(pk=forecast.pk))


class ForecastJobList(generics.ListAPIView):
    """The jobs of a finished forecast, in FORECAST.json's order, a page at a time. ``?search=``
    matches job ids and users (any part, any case); filter by ``share`` and ``state``; order by
    ``position`` or ``start_p50``."""

    serializer_class = ForecastJobSerializer
    permission_classes = [ForecastPermission]
    filterset_fields = ["share", "state"]
    search_fields = ["job_id", "user"]
    ordering_fields = ["row", "position", "start_p50", "end_p50"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return ForecastJob.objects.none()
        pk = str(self.kwargs["pk"])
        if not pk.isdigit() or len(pk) > 18:  # past 2**63 the database cannot even look
            raise NotFound(f"no forecast {pk}")
        forecast = get_object_or_404(Forecast.objects.only("pk"), pk=int(pk))
        return ForecastJob.objects.filter(forecast=forecast).order_by("row")
