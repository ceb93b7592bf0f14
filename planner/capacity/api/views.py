"""CRUD for instance types, pools, policies (+ duplicate, export) and shares."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from planner.api.errors import as_drf
from planner.capacity.api.serializers import (
    InstanceTypeSerializer,
    PolicyDuplicateSerializer,
    PolicyListSerializer,
    PolicySerializer,
    PoolSerializer,
    ShareSerializer,
    TrainingPlanSerializer,
)
from planner.capacity.models import InstanceType, Policy, Pool, Share


class InstanceTypeViewSet(viewsets.ModelViewSet):
    queryset = InstanceType.objects.all()
    serializer_class = InstanceTypeSerializer
    filterset_fields = ["name"]
    search_fields = ["name", "description"]
    ordering_fields = ["name", "gpus", "hourly_price"]


class PoolViewSet(viewsets.ModelViewSet):
    queryset = Pool.objects.prefetch_related("capacities__instance_type")
    serializer_class = PoolSerializer
    filterset_fields = ["name"]
    search_fields = ["name", "description"]
    ordering_fields = ["name", "created_at", "updated_at"]


class PolicyViewSet(viewsets.ModelViewSet):
    """The list gives each policy's share count, not its shares (``/api/shares/?policy=<id>``);
    the detail embeds them (at most ``scheduling.model.MAX_SHARES``)."""

    queryset = Policy.objects.select_related("pool", "parent")
    serializer_class = PolicySerializer
    filterset_fields = ["pool", "parent", "queueing", "name"]
    search_fields = ["name", "description"]
    ordering_fields = ["name", "created_at", "updated_at"]

    def get_queryset(self):
        if self.action == "list":
            return super().get_queryset().annotate(share_count=Count("shares"))
        return super().get_queryset()

    def get_serializer_class(self):
        return PolicyListSerializer if self.action == "list" else PolicySerializer

    @extend_schema(request=PolicyDuplicateSerializer, responses={201: PolicySerializer})
    @action(detail=True, methods=["post"])
    def duplicate(self, request, pk=None):
        """Copy the policy with all its shares into a new variant (its ``parent`` is this one)."""
        policy = self.get_object()
        form = PolicyDuplicateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        copy = policy.duplicate(form.validated_data["name"], form.validated_data.get("description"))
        return Response(PolicySerializer(copy, context=self.get_serializer_context()).data, status=201)

    @extend_schema(request=TrainingPlanSerializer, responses={200: PolicySerializer})
    @action(detail=True, methods=["post"], url_path="training-plan")
    def training_plan(self, request, pk=None):
        """Add a training plan to the policy's calendar: its four changes (pool and share up at
        ``start``, back at ``end``), the changes in between raised by the plan's instances."""
        policy = self.get_object()
        form = TrainingPlanSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            policy.add_training_plan(form.validated_data["plan"])
        except DjangoValidationError as error:
            raise as_drf(error) from None
        return Response(PolicySerializer(policy, context=self.get_serializer_context()).data)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None):
        """The policy as the JSON of docs/semantics.md sections 7-10 (what ``python -m scheduling replay``
        reads; ``POST /api/policy-imports/`` and ``Policy.create_from_dict`` take it back)."""
        policy = self.get_object()
        try:
            engine_policy = policy.engine_policy()
        except DjangoValidationError as error:
            raise as_drf(error) from None
        data = engine_policy.to_dict()
        if policy.description:
            data["description"] = policy.description
        return Response(data, status=status.HTTP_200_OK)


class ShareViewSet(viewsets.ModelViewSet):
    queryset = Share.objects.select_related("policy").prefetch_related("limits__instance_type")
    serializer_class = ShareSerializer
    filterset_fields = ["policy", "strategy", "in_share_preemption", "reclaim", "name"]
    search_fields = ["name", "policy__name"]
    ordering_fields = ["position", "name"]

    def perform_destroy(self, share: Share) -> None:
        remaining = [s.spec() for s in share.policy.shares.exclude(pk=share.pk).order_by("position", "id")]
        if not remaining:
            raise as_drf(
                DjangoValidationError("a policy needs at least one share: delete the policy instead")
            )
        share.delete()
