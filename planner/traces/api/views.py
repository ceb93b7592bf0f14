"""Trace upload (streamed through ``scheduling.traces``), list, detail and delete."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response

from planner.api.errors import input_error
from planner.traces.api.serializers import TraceSerializer, TraceUploadSerializer
from planner.traces.models import Trace, read_upload
from scheduling.errors import InputError


def first_error(errors: dict) -> InputError:
    """The first serializer error as an InputError, so every bad upload has one shape."""
    field, messages = next(iter(errors.items()))
    message = messages[0] if isinstance(messages, list) else str(messages)
    return InputError(str(message), field=None if field == "non_field_errors" else field)


class TraceViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    queryset = Trace.objects.select_related("created_by")
    serializer_class = TraceSerializer
    parser_classes = [MultiPartParser, FormParser, JSONParser]
    filterset_fields = ["format", "name", "created_by"]
    search_fields = ["name", "description", "source_name"]
    ordering_fields = ["name", "created_at", "job_count"]

    @extend_schema(
        request={"multipart/form-data": TraceUploadSerializer},
        responses={
            201: TraceSerializer,
            400: OpenApiResponse(
                description='{"error": {"row": int|null, "field": str|null, "message": str}}'
            ),
        },
    )
    def create(self, request, *args, **kwargs):
        """Upload a trace: it is parsed and validated as a whole; on any error nothing is stored."""
        limit = settings.PLANNER_MAX_UPLOAD_BYTES
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
        if declared > limit + 64 * 1024:
            return input_error(
                InputError(f"the upload is {declared:,} bytes: the limit is {limit:,}", field="file")
            )
        form = TraceUploadSerializer(data=request.data)
        if not form.is_valid():
            return input_error(first_error(form.errors))
        upload = form.validated_data["file"]
        if upload.size > limit:
            return input_error(
                InputError(f"the file is {upload.size:,} bytes: the limit is {limit:,}", field="file")
            )
        fmt = form.validated_data["format"]
        mapping = form.validated_data["mapping"]
        try:
            columns = read_upload(upload, format=fmt, mapping=mapping)
        except InputError as error:
            return input_error(error)
        trace = Trace.store(
            columns,
            name=form.validated_data["name"],
            description=form.validated_data["description"],
            format=fmt,
            source_name=upload.name or "",
            mapping=mapping,
            created_by=request.user,
        )
        return Response(TraceSerializer(trace).data, status=status.HTTP_201_CREATED)
