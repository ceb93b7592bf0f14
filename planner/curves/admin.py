"""Curves and worth searches in the admin: read their state; deleting one deletes its points."""

from django.contrib import admin

from planner.curves.models import CapacityCurve, CurvePoint, SearchPoint, WorthSearch


class CurvePointInline(admin.TabularInline):
    model = CurvePoint
    fields = ["policy_name", "size", "gpus", "status", "progress", "attempts", "error"]
    readonly_fields = fields
    extra = 0
    can_delete = False


class SearchPointInline(admin.TabularInline):
    model = SearchPoint
    fields = ["step", "role", "size", "gpus", "status", "matches", "verdict", "attempts", "error"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(CapacityCurve)
class CapacityCurveAdmin(admin.ModelAdmin):
    list_display = ["name", "trace", "mode", "instance_type", "status", "created_by", "created_at"]
    list_filter = ["mode", "trace"]
    search_fields = ["name", "trace__name"]
    readonly_fields = ["trace", "mode", "instance_type", "sizes", "lines", "created_by", "created_at"]
    inlines = [CurvePointInline]


@admin.register(WorthSearch)
class WorthSearchAdmin(admin.ModelAdmin):
    list_display = ["name", "trace", "policy_a_name", "policy_b_name", "metric", "status", "answer_size"]
    list_filter = ["metric", "status"]
    search_fields = ["name", "policy_a_name", "policy_b_name"]
    readonly_fields = [
        "trace", "policy_a", "policy_b", "policy_a_snapshot", "policy_b_snapshot", "today", "upper",
        "status", "error", "steps", "answer_size", "exact", "created_by", "created_at", "finished_at",
    ]  # fmt: skip
    inlines = [SearchPointInline]
