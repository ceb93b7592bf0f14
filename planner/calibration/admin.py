"""Calibrations in the admin: status, progress and errors at a glance; computed again on demand."""

from django.contrib import admin
from django.db import transaction

from planner.calibration.launch import enqueue_calibrations
from planner.calibration.models import Calibration
from planner.worker_rows import WORKER_FIELDS


@admin.register(Calibration)
class CalibrationAdmin(admin.ModelAdmin):
    list_display = ["trace", "policy_name", "status", "progress", "attempts", "created_by", "finished_at"]
    list_filter = ["status", "trace"]
    search_fields = ["trace__name", "policy_name", "error"]
    readonly_fields = [
        "trace",
        "policy",
        "policy_name",
        "policy_snapshot",
        *WORKER_FIELDS,
        "metrics",
        "summary",
        "created_by",
        "created_at",
        "started_at",
        "finished_at",
    ]
    actions = ["compute_again"]

    def has_add_permission(self, request) -> bool:
        return False  # made from the API or the calibration page, which check the trace and policy

    @admin.action(description="Compute again from scratch")
    def compute_again(self, request, queryset) -> None:
        with transaction.atomic():
            ids = list(queryset.values_list("pk", flat=True))
            Calibration.queue_again(ids, metrics=None, summary=None)
            enqueue_calibrations(ids)
        self.message_user(request, f"Re-enqueued {len(ids)} calibration(s).")
