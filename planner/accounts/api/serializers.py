"""The signed-in user and their API token."""

from rest_framework import serializers


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField(help_text="admin, finance, viewer, or empty for no role")
    can_edit = serializers.BooleanField()
    can_read_finance = serializers.BooleanField()


class TokenSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="send as 'Authorization: Token <key>'; shown only when created")
    created = serializers.DateTimeField()
