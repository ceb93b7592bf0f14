"""Sweeps in the admin: what was swept and how far the replays are; deleting one goes through
``delete_sweep`` (its study and the variant policies not kept go with it)."""

from django.contrib import admin

from planner.advisor.launch import delete_sweep
from planner.advisor.models import Sweep, SweepVariant


class SweepVariantInline(admin.TabularInline):
    model = SweepVariant
    fields = ["number", "policy", "label", "kept"]
    readonly_fields = ["number", "policy", "label"]
    extra = 0
    can_delete = False


@admin.register(Sweep)
class SweepAdmin(admin.ModelAdmin):
    list_display = ["name", "trace", "base_policy", "mode", "size", "status", "created_by", "created_at"]
    list_filter = ["mode", "trace"]
    search_fields = ["name", "base_policy__name", "trace__name"]
    readonly_fields = ["trace", "base_policy", "study", "created_by", "created_at"]
    inlines = [SweepVariantInline]

    def delete_model(self, request, obj: Sweep) -> None:
        delete_sweep(obj)

    def delete_queryset(self, request, queryset) -> None:
        for sweep in queryset:
            delete_sweep(sweep)
