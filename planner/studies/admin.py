"""Studies and runs in the admin: status, progress and errors at a glance, re-run on demand."""

from django.contrib import admin

from planner.studies.launch import rerun
from planner.studies.models import Run, Study
from planner.worker_rows import WORKER_FIELDS


class RunInline(admin.TabularInline):
    model = Run
    extra = 0
    fields = ["policy_name", "status", "progress", "attempts", "worker", "error"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "trace", "baseline", "run_count", "status", "created_by", "created_at"]
    list_filter = ["created_at", "trace"]
    search_fields = ["name", "description", "trace__name"]
    readonly_fields = ["created_by"]
    inlines = [RunInline]

    @admin.display(description="runs")
    def run_count(self, study: Study) -> int:
        return study.runs.count()


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = [
        "policy_name",
        "study",
        "status",
        "progress",
        "attempts",
        "worker",
        "heartbeat",
        "finished_at",
    ]
    list_filter = ["status", "worker", "study"]
    search_fields = ["policy_name", "study__name", "error"]
    readonly_fields = [
        "study",
        "policy",
        "policy_name",
        "policy_snapshot",
        *WORKER_FIELDS,
        "metrics",
        "result_file",
        "created_at",
        "started_at",
        "finished_at",
    ]
    actions = ["replay_again"]

    @admin.action(description="Replay again from scratch")
    def replay_again(self, request, queryset) -> None:
        for run in queryset:
            rerun(run)
        self.message_user(request, f"Re-enqueued {queryset.count()} run(s).")
