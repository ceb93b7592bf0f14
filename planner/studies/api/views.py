"""Create a study (one run per policy, enqueued on Celery) and poll it; read run metrics,
CDFs, time series and the finance view."""

from __future__ import annotations

from urllib.parse import urlencode

import orjson
from django.db.models import Prefetch, TextField
from django.db.models.functions import Cast
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.reverse import reverse

from planner.accounts.money import shows_money
from planner.accounts.permissions import IsFinanceReader
from planner.api.renderers import FastJSONRenderer
from planner.reports.jobs import search_payload
from planner.studies.api.serializers import RunDetailSerializer, RunSerializer, StudySerializer
from planner.studies.jobs import NoJobIndex, job_finder
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run, RunStatus, Study
from planner.studies.reaper import reap_stale_runs
from planner.studies.timeline import NoTimeline, run_job_timeline
from planner.studies.window import ensure_study_window
from planner.web import page_cache
from scheduling.errors import InputError

MAX_JOBS = 500  # results of one job search


class StudyViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    queryset = Study.objects.select_related("trace", "created_by").prefetch_related(
        Prefetch("runs", queryset=Run.objects.defer("metrics", "policy_snapshot").order_by("id"))
    )
    serializer_class = StudySerializer
    filterset_fields = ["trace", "created_by", "baseline"]
    search_fields = ["name", "description"]
    ordering_fields = ["name", "created_at"]

    def get_object(self) -> Study:
        study = super().get_object()
        # Reading a study is when someone waits for it: runs whose worker died go back to the queue.
        outcome = reap_stale_runs(runs=Run.objects.filter(study=study))
        runs = list(Run.objects.filter(study=study).only("id", "status", "summary"))
        if outcome["requeued"] or outcome["failed"] or ensure_study_window(study, runs):
            study = super().get_object()
        return study

    @extend_schema(
        parameters=[
            OpenApiParameter("search", str, description="job id, user or name starts with (case ignored)"),
            OpenApiParameter("run", int, description="the run (policy) to read; default the baseline's"),
            OpenApiParameter("share", str, description="only this share's jobs"),
            OpenApiParameter("limit", int, description=f"at most this many results, 1-{MAX_JOBS} (50)"),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"])
    def jobs(self, request, pk=None):
        """The job finder of the study's pages: jobs whose id, user or name starts with ``search``
        under one run, each with its share, state, wait (seconds, null if it never started),
        queued seconds, preemptions and the links to its timeline; without ``search``, each
        share's longest waits and most preempted jobs."""
        # Not get_object(): the list's filters would read ?search= as a search of study names.
        study = Study.objects.filter(pk=int(pk)).first() if str(pk).isdigit() else None
        if study is None:
            raise NotFound(f"no study {pk}")
        self.check_object_permissions(request, study)
        runs = list(study.runs.filter(status=RunStatus.SUCCEEDED).defer("metrics").order_by("id"))
        if not runs:
            raise NotFound("no run of this study has succeeded yet")
        wanted = request.query_params.get("run")
        if wanted is not None:
            run = next((r for r in runs if str(r.pk) == wanted), None)
            if run is None:
                raise ValidationError({"run": f"{wanted!r} is not a succeeded run of study {study.pk}: "
                                       f"choose one of {', '.join(str(r.pk) for r in runs)}"})  # fmt: skip
        else:
            run = next((r for r in runs if r.policy_id == study.baseline_id), runs[0])
        limit = request.query_params.get("limit", "50")
        if not limit.isdigit() or not 1 <= int(limit) <= MAX_JOBS:
            raise ValidationError({"limit": f"{limit!r}: give a whole number from 1 to {MAX_JOBS}"})
        share = request.query_params.get("share", "")
        try:
            finder = job_finder(run)
        except NoJobIndex as error:
            raise NotFound(str(error)) from None
        if share and share not in finder.share_names:
            shares = ", ".join(finder.share_names)
            raise ValidationError({"share": f"{share!r} is not a share of this trace: {shares}"})
        query = request.query_params.get("search", "").strip()[:200]
        payload = search_payload(finder, query, share, int(limit))
        timeline = reverse("run-job-timeline", args=[run.pk], request=request)
        page = reverse("reports:study-why", args=[study.pk], request=request)
        for key in ("results", "longest_waits", "most_preempted"):
            for row in payload.get(key, []):
                job = urlencode({"job_id": row["job_id"]})
                row["timeline_url"] = f"{timeline}?{job}"
                row["page_url"] = f"{page}?run={run.pk}&{job}"
        return Response({"study": study.pk, "run": run.pk, "policy": run.policy_name, **payload})

    def perform_create(self, serializer: StudySerializer) -> None:
        launch = StudyLaunch.from_data(serializer.validated_data, created_by=self.request.user)
        serializer.instance = launch_study(launch)


def finished_metrics(run: Run) -> dict:
    if run.status != RunStatus.SUCCEEDED or not run.metrics:
        raise NotFound(f"run {run.pk} has no metrics: it is {run.status}")
    return run.metrics


def finished_metrics_read_fast(run: Run) -> dict:
    """``finished_metrics`` of a run read without its metrics: the JSON text parsed by orjson, not
    by the JSONField's json.loads (hundreds of KB: 125 ms a request became about 25)."""
    text = Run.objects.filter(pk=run.pk).values_list(Cast("metrics", TextField()), flat=True).first()
    if run.status != RunStatus.SUCCEEDED or not text or text == "null":
        raise NotFound(f"run {run.pk} has no metrics: it is {run.status}")
    return orjson.loads(text)


class RunViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Run.objects.select_related("study").defer("metrics")
    filterset_fields = ["study", "status", "policy", "worker"]
    search_fields = ["policy_name", "error"]
    ordering_fields = ["id", "created_at", "finished_at", "progress"]

    def get_serializer_class(self):
        return RunDetailSerializer if self.action == "retrieve" else RunSerializer

    def get_object(self) -> Run:
        run = super().get_object()
        # A run's figures are those of its study's common window, once the study has finished.
        siblings = list(Run.objects.filter(study_id=run.study_id).only("id", "status", "summary"))
        if ensure_study_window(run.study, siblings):
            run = super().get_object()
        return run

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def metrics(self, request, pk=None):
        """Every aggregate of the run (``ReplayResult.metrics``): summary, shares, pool, series, CDFs."""
        run = self.get_object()
        renderer = request.accepted_renderer
        if not isinstance(renderer, FastJSONRenderer) or renderer.get_indent(request.accepted_media_type, {}):
            return Response(finished_metrics_read_fast(run))
        # The encoded body (hundreds of KB) is kept per process under the run's figures and the
        # caller's $ (the renderer removes $ figures for a viewer): no read, parse nor encoding.
        key = None
        if run.status == RunStatus.SUCCEEDED and run.metrics_digest:
            money = shows_money(request.user)
            key = page_cache.page_key("metrics", run.pk, run.finished_at, run.metrics_digest, money)
        context = {"request": request}
        body = page_cache.remembered(
            key, lambda: renderer.render(finished_metrics_read_fast(run), renderer.media_type, context)
        )
        return HttpResponse(body, content_type=renderer.media_type)

    @extend_schema(
        parameters=[
            OpenApiParameter("kind", str, enum=["wait", "jct"], default="wait"),
            OpenApiParameter("share", str, required=False, description="a share name; all jobs when omitted"),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"])
    def cdf(self, request, pk=None):
        """A downsampled CDF ``{"x": [seconds], "y": [fraction], "n": jobs}`` of wait or JCT."""
        metrics = finished_metrics(self.get_object())
        kind = request.query_params.get("kind", "wait")
        if kind not in ("wait", "jct"):
            raise ValidationError({"kind": "must be wait or jct"})
        cdfs = metrics.get("cdfs", {}).get(kind, {})
        share = request.query_params.get("share")
        if share:
            curve = cdfs.get("shares", {}).get(share)
            if curve is None:
                raise NotFound(f"no share named {share!r} in this run")
        else:
            curve = cdfs.get("all", {"x": [], "y": [], "n": 0})
        return Response({"kind": kind, "share": share, **curve})

    @extend_schema(
        parameters=[
            OpenApiParameter("job_id", str, required=True, description="a job_id of the run's trace")
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"], url_path="job-timeline")
    def job_timeline(self, request, pk=None):
        """Why one job waited: its segments (waiting with the reason the scheduler found, running
        with how it ended, e.g. preempted by which job) and its waiting time by reason."""
        job_id = request.query_params.get("job_id")
        if not job_id:
            raise ValidationError({"job_id": "give the job_id of a job of this run's trace"})
        try:
            return Response(run_job_timeline(self.get_object(), job_id))
        except NoTimeline as error:
            raise NotFound(str(error)) from None
        except InputError as error:
            raise NotFound(error.describe()) from None

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def series(self, request, pk=None):
        """Usage over time per share (own / borrowed / lent / idle / stranded GPUs per bucket)."""
        return Response(finished_metrics(self.get_object()).get("series", {}))

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"], permission_classes=[IsFinanceReader])
    def finance(self, request, pk=None):
        """Finance view: GPU-hours and $ per share (capacity, own, borrowed, lent, idle, stranded,
        rerun), per day, and the pool's unassigned capacity. Finance and admin roles only."""
        metrics = finished_metrics(self.get_object())
        money = ("capacity", "own", "borrowed", "lent", "idle", "stranded", "rerun")
        shares = [
            {
                "name": share["name"],
                **{key: value for key, value in share.items() if any(key.startswith(f"{m}_") for m in money)},
            }
            for share in metrics.get("shares", [])
        ]
        return Response(
            {"shares": shares, "pool": metrics.get("pool", {}), "periods": metrics.get("periods", {})},
            status=status.HTTP_200_OK,
        )
