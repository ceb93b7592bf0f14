"""Trace upload (kept on disk, parsed by a worker: ``planner.traces.tasks``), list, detail and delete."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from planner.api.errors import input_error
from planner.traces.api.serializers import TraceSerializer, TraceUploadSerializer
from planner.traces.models import ParseStatus, Trace, check_options
from planner.traces.receive import receive_upload_form
from planner.traces.tasks import reap_stale_parses
from planner.traces.uploads import RawTraceParser
from scheduling.errors import InputError


def first_error(errors: dict) -> InputError:
    """The first serializer error as an InputError, so every bad upload has one shape."""
    field, messages = next(iter(errors.items()))
    message = messages[0] if isinstance(messages, list) else str(messages)
    return InputError(str(message), field=None if field == "non_field_errors" else field)


RAW_FIELDS = {
    "name": "the trace's name",
    "description": "a description",
    "format": "the reader (default auto)",
    "mapping": "column mapping, a JSON object",
    "filename": "the uploaded file's name (else Content-Disposition's)",
}


def upload_fields(request) -> dict:
    """The upload's fields: a form's own, or, for a file sent as the body, the query string's."""
    if request.content_type.startswith("multipart/form-data"):
        return request.data
    fields = {name: request.query_params[name] for name in RAW_FIELDS if name in request.query_params}
    if "file" in request.data:
        fields["file"] = request.data["file"]
    return fields


class TraceViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    queryset = Trace.objects.select_related("created_by")
    serializer_class = TraceSerializer
    # a form with the file in it, or the file as the body itself with the fields in the query
    # string (the simple way to send a JSON file or script an upload). No urlencoded form: it
    # cannot hold a file, and it is what `curl --data-binary` sends without a Content-Type.
    parser_classes = [MultiPartParser, RawTraceParser]
    filterset_fields = ["format", "name", "created_by"]
    search_fields = ["name", "description", "source_name"]
    ordering_fields = ["name", "created_at", "job_count"]

    def get_queryset(self):
        traces = super().get_queryset()
        wanted = self.request.query_params.get("status")
        if wanted in STATES:
            traces = traces.filter(status__in=STATES[wanted])
        return traces

    def retrieve(self, request, *args, **kwargs):
        trace = self.get_object()
        if not trace.finished:
            reap_stale_parses(Trace.objects.filter(pk=trace.pk))  # its worker may have died
            trace.refresh_from_db()
        return Response(self.get_serializer(trace).data)

    @extend_schema(
        request={
            "multipart/form-data": TraceUploadSerializer,
            "application/octet-stream": OpenApiTypes.BINARY,
        },
        parameters=[
            OpenApiParameter(
                name, str, description=f"{what} (with the file as the body; a form carries its own)"
            )
            for name, what in RAW_FIELDS.items()
        ],
        responses={
            202: TraceSerializer,
            400: OpenApiResponse(
                description='{"error": {"row": int|null, "field": str|null, "message": str}}'
            ),
            413: OpenApiResponse(description='{"error": {"row": null, "field": "file", "message": str}}'),
        },
    )
    def create(self, request, *args, **kwargs):
        """Upload a trace: the file is kept on disk and the answer comes at once (202, status
        ``parsing``); a worker parses it (``parse.bytes_read`` of ``parse.bytes_total``) and the
        trace becomes ``ready``, or ``failed`` with the error naming row and field (nothing else
        is kept). Poll ``url``. A body over the size limit is answered 413. The file comes in a
        multipart form with the other fields, or as the body itself (any Content-Type but multipart)
        with the fields in the query string."""
        limit = settings.PLANNER_MAX_UPLOAD_BYTES
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
        if declared > limit + 64 * 1024:
            return too_large(f"the upload is {declared:,} bytes: the limit is {limit:,}")
        form = TraceUploadSerializer(data=upload_fields(request))
        if not form.is_valid():
            return input_error(first_error(form.errors))
        upload = form.validated_data["file"]
        if upload.size > limit:
            return too_large(f"the file is {upload.size:,} bytes: the limit is {limit:,}")
        fmt = form.validated_data["format"]
        mapping = form.validated_data["mapping"]
        try:
            check_options(fmt, mapping)
        except InputError as error:
            return input_error(error)
        trace = receive_upload_form(form.validated_data, request.user)
        body = TraceSerializer(trace, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


STATES = {
    "parsing": [ParseStatus.QUEUED, ParseStatus.RUNNING],
    "ready": [ParseStatus.SUCCEEDED],
    "failed": [ParseStatus.FAILED],
}


def too_large(message: str) -> Response:
    return input_error(InputError(message, field="file"), status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
