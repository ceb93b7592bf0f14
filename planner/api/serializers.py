"""Serializer parts that several apps' APIs share."""

from __future__ import annotations

from rest_framework import serializers


# A computation a user launched (a sweep, a curve, a worth search, a forecast): where it is (computed
# from its rows, so read-only) and who started it. Subclasses name these in their Meta.fields, which
# decides the order. A comment, not a docstring: drf-spectacular would describe every subclass with it.
class LaunchedSerializer(serializers.ModelSerializer):
    status = serializers.CharField(read_only=True)
    progress = serializers.FloatField(read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
