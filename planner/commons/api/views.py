"""``GET /api/traces/<id>/commons/[?run=<id>]``: the commons-games figures of a trace as JSON, the
same numbers the /commons/ page draws. Any role may read (``IsPlannerUser``)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.api.errors import input_error
from planner.commons.api.serializers import CommonsReportSerializer
from planner.commons.report import commons_report
from planner.studies.models import Run, RunStatus
from planner.traces.models import Trace
from scheduling.errors import InputError

INPUT_ERROR = OpenApiResponse(description='{"error": {"row": null, "field": "run", "message": str}}')


class CommonsReportView(APIView):
    """Commons games of a trace: priority inflation, job splitting and (of a run) RESERVE hoarding."""

    @extend_schema(
        operation_id="traces_commons",
        parameters=[
            OpenApiParameter(
                "run",
                OpenApiTypes.INT,
                description="a succeeded run of a study on this trace: adds RESERVE hoarding",
            )
        ],
        responses={
            200: CommonsReportSerializer,
            400: INPUT_ERROR,
            404: OpenApiResponse(description="no trace"),
        },
        tags=["traces"],
    )
    def get(self, request, pk: int):
        """Computed from the trace's columns on the first request (a few seconds for a million
        jobs) and kept; later requests read the stored figures."""
        trace = get_object_or_404(Trace.objects.only("id", "name", "jobs_file"), pk=pk)
        run = None
        raw = request.query_params.get("run")
        if raw not in (None, ""):
            try:
                run_id = int(raw)
            except ValueError:
                return input_error(InputError(f"run: {raw!r} is not a run id", field="run"))
            run = Run.objects.filter(pk=run_id).select_related("study").defer("metrics").first()
            if run is None or run.study.trace_id != trace.pk:
                return input_error(InputError(f"run: no run {run_id} of a study on this trace", field="run"))
            if run.status != RunStatus.SUCCEEDED:
                return input_error(
                    InputError(f"run: run {run_id} is {run.status}, not succeeded", field="run")
                )
        return Response(commons_report(trace, run))
