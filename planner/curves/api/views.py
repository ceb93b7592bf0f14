"""Curves and worth searches over the API: admins create (the replays go to the workers) and
delete; every role reads, viewers without $ (the API's renderer drops them from every answer:
``planner.api.renderers``, ``planner.accounts.money``)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.response import Response

from planner.accounts.permissions import can_read_finance
from planner.curves.api.serializers import (
    CurveDetailSerializer,
    CurvePlanSerializer,
    CurveSerializer,
    WorthSearchDetailSerializer,
    WorthSearchSerializer,
)
from planner.curves.figures import search_view
from planner.curves.launch import (
    CurveLaunch,
    SearchLaunch,
    reap_curves,
    reap_searches,
    start_curve,
    start_search,
)
from planner.curves.models import CapacityCurve, WorthSearch


class _Base(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    pass


class CurveViewSet(_Base):
    """Capacity curves: the trace replayed under each policy at each pool size. Poll the detail for
    progress, then read ``rows`` (one per policy and size)."""

    queryset = CapacityCurve.objects.select_related("trace", "created_by")
    filterset_fields = ["trace", "mode"]
    search_fields = ["name"]
    ordering_fields = ["created_at"]

    def get_serializer_class(self):
        return CurveDetailSerializer if self.action == "retrieve" else CurveSerializer

    def get_object(self) -> CapacityCurve:
        curve = super().get_object()
        reap_curves(curve.points.all())
        return curve

    def perform_create(self, serializer: CurveSerializer) -> None:
        data = serializer.validated_data
        plans = _plans(data.get("plans") or [], data["policies"])
        launch = CurveLaunch.from_data(data, plans=plans, created_by=self.request.user)
        serializer.instance = start_curve(launch)


def _plans(plans: list[dict], policies: list) -> list[tuple]:
    """(policy, TrainingPlan) per plan; a policy id not among the curve's is a 400 naming it."""
    by_pk = {policy.pk: policy for policy in policies}
    out = []
    for i, attrs in enumerate(plans):
        pk = attrs.get("policy")
        if pk is not None and pk not in by_pk:
            raise ValidationError({"plans": f"plans[{i}].policy: {pk} is not one of the curve's policies"})
        out.append((by_pk.get(pk), CurvePlanSerializer().plan(attrs)))
    return out


class WorthSearchViewSet(_Base):
    """What policy A is worth in GPUs against policy B: the smallest pool at which A matches B at
    today's size, found step by step (each step's sizes replayed in parallel). Poll the detail."""

    queryset = WorthSearch.objects.select_related("trace", "created_by")
    filterset_fields = ["trace", "status", "metric"]
    search_fields = ["name", "policy_a_name", "policy_b_name"]
    ordering_fields = ["created_at", "finished_at"]

    def get_serializer_class(self):
        return WorthSearchDetailSerializer if self.action == "retrieve" else WorthSearchSerializer

    def get_queryset(self):
        queryset = super().get_queryset()
        return (
            queryset
            if self.action == "retrieve"
            else queryset.defer("policy_a_snapshot", "policy_b_snapshot")
        )

    @extend_schema(responses={200: WorthSearchDetailSerializer})
    def retrieve(self, request, *args, **kwargs):
        search = self.get_object()
        reap_searches(WorthSearch.objects.filter(pk=search.pk))
        search.refresh_from_db()
        view = search_view(search, money=can_read_finance(request.user))
        search.sentence = view.sentence
        search.answer_gpus = view.answer.gpus if view.answer is not None else None
        return Response(WorthSearchDetailSerializer(search, context=self.get_serializer_context()).data)

    def perform_create(self, serializer: WorthSearchSerializer) -> None:
        data = serializer.validated_data
        launch = SearchLaunch.from_data(data, created_by=self.request.user)
        serializer.instance = start_search(launch)
