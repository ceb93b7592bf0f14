"""Sweeps over the API: admins create (the variants replay as Celery tasks) and delete (with the
variant policies not kept) and keep a variant as a policy; every role reads, the front included."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from planner.advisor.api.serializers import KeepSerializer, SweepDetailSerializer, SweepSerializer
from planner.advisor.front import sweep_rows
from planner.advisor.launch import SweepLaunch, delete_sweep, keep_variant, start_sweep
from planner.advisor.models import Sweep


class SweepViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Admins create and delete; every role reads. Creating makes the variants and enqueues their
    replays; poll the detail for progress, then read ``front``."""

    queryset = Sweep.objects.select_related("trace", "base_policy", "created_by", "study")
    filterset_fields = ["trace", "base_policy"]
    search_fields = ["name"]
    ordering_fields = ["created_at"]

    def get_serializer_class(self):
        return SweepDetailSerializer if self.action == "retrieve" else SweepSerializer

    @extend_schema(responses={200: SweepDetailSerializer})
    def retrieve(self, request, *args, **kwargs):
        sweep = self.get_object()
        points = [row.as_dict() for row in sweep_rows(sweep)]
        sweep.points = points
        sweep.front = [point for point in points if point["on_front"]]
        return Response(SweepDetailSerializer(sweep, context=self.get_serializer_context()).data)

    def perform_create(self, serializer: SweepSerializer) -> None:
        data = serializer.validated_data
        launch = SweepLaunch.from_data(data, created_by=self.request.user)
        serializer.instance = start_sweep(launch)

    def perform_destroy(self, instance: Sweep) -> None:
        delete_sweep(instance)

    @extend_schema(
        request=KeepSerializer,
        responses={200: OpenApiResponse(description='{"policy": id, "name": str}'), 400: None},
    )
    @action(detail=True, methods=["post"], url_path=r"variants/(?P<number>\d+)/keep")
    def keep(self, request, pk=None, number=None):
        """Save variant ``number`` as a policy (renamed when ``name`` is given): it stays when the
        sweep is deleted."""
        sweep = self.get_object()
        variant = get_object_or_404(sweep.variants.select_related("policy"), number=number)
        payload = KeepSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        policy = keep_variant(variant, payload.validated_data.get("name", ""))
        return Response({"policy": policy.pk, "name": policy.name}, status=status.HTTP_200_OK)
