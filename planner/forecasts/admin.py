"""Forecasts in the admin: read their state and chunks; deleting one deletes its chunks and jobs."""

from django.contrib import admin

from planner.forecasts.models import Forecast, ForecastChunk


class ChunkInline(admin.TabularInline):
    model = ForecastChunk
    fields = ["index", "first", "count", "status", "progress", "attempts", "worker", "error"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Forecast)
class ForecastAdmin(admin.ModelAdmin):
    list_display = [
        "__str__", "policy_name", "history", "samples", "status", "chunks_done", "chunks", "created_at",
    ]  # fmt: skip
    list_filter = ["status", "source"]
    search_fields = ["name", "policy_name"]
    exclude = ["snapshot", "result"]  # megabytes of JSON: read them over the API
    readonly_fields = [
        "source", "snapshot_format", "snapshot_time", "running_jobs", "pending_jobs", "policy", "policy_name",
        "policy_snapshot", "history", "samples", "seed", "arrivals", "horizon_days", "chunk_samples",
        "chunks",
        "chunks_done", "status", "error", "shares", "created_by", "created_at", "finished_at",
    ]  # fmt: skip
    inlines = [ChunkInline]
