"""Traces in the admin: metadata only; jobs are uploaded through the API or the pages."""

from django.contrib import admin

from planner.traces.models import Trace


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = ["name", "format", "job_count", "source_name", "created_by", "created_at"]
    list_filter = ["format", "created_at"]
    search_fields = ["name", "description", "source_name"]
    readonly_fields = ["format", "source_name", "mapping", "summary", "job_count", "jobs_file", "created_by"]
