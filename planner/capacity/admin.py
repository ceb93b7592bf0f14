"""Raw edits of pools, instance types, policies and shares; every change goes through the
engine's validator (model ``clean()`` and the formsets below)."""

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.urls import reverse
from django.utils.html import format_html

from planner.capacity.models import (
    CalendarChange,
    CalendarError,
    ChangeSpec,
    InstanceType,
    Policy,
    Pool,
    PoolCapacity,
    Share,
    ShareLimit,
    duplicate_change_rows,
)


class TypeRowsFormSet(BaseInlineFormSet):
    """Rows of one instance type each, checked together once every row is valid on its own and
    their owner is saved: ``check`` gets the forms of the rows kept (filled in, not deleted, with a
    type); a ValidationError it raises becomes the formset's error."""

    def owner_saved(self) -> bool:
        return self.instance.pk is not None

    def check(self, forms: list) -> None:
        """Each subclass's check of its rows as a set (the pool's capacity, a calendar, a share's
        limits); this base is never used as a formset itself."""
        raise NotImplementedError

    def clean(self) -> None:
        super().clean()
        if any(self.errors) or not self.owner_saved():
            return
        kept = []
        for form in self.forms:
            data = form.cleaned_data
            if data and not data.get("DELETE") and data.get("instance_type") is not None:
                kept.append(form)
        try:
            self.check(kept)
        except ValidationError as error:
            raise ValidationError(error.messages) from None


class PoolCapacityFormSet(TypeRowsFormSet):
    """Checks the pool's new capacity against every policy of the pool, all rows at once."""

    def check(self, forms: list) -> None:
        capacity = {form.cleaned_data["instance_type"].name: form.cleaned_data["count"] for form in forms}
        self.instance.check_capacity(capacity)


class PoolCapacityInline(admin.TabularInline):
    model = PoolCapacity
    formset = PoolCapacityFormSet
    extra = 1


@admin.register(InstanceType)
class InstanceTypeAdmin(admin.ModelAdmin):
    list_display = ["name", "gpus", "hourly_price"]
    search_fields = ["name"]


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["name", "capacity_summary", "policy_count", "updated_at"]
    search_fields = ["name", "description"]
    inlines = [PoolCapacityInline]

    @admin.display(description="capacity")
    def capacity_summary(self, pool: Pool) -> str:
        return ", ".join(f"{count} x {name}" for name, count in pool.capacity_dict().items())

    @admin.display(description="policies")
    def policy_count(self, pool: Pool) -> int:
        return pool.policies.count()


class ShareInline(admin.TabularInline):
    model = Share
    extra = 0
    fields = [
        "position",
        "name",
        "strategy",
        "borrow_limit_percent",
        "in_share_preemption",
        "reclaim",
        "fair_weight",
        "quota",
    ]
    readonly_fields = ["quota"]
    show_change_link = True

    @admin.display(description="quota per type (edit on the share)")
    def quota(self, share: Share) -> str:
        return ", ".join(f"{limit.quota} x {limit.instance_type}" for limit in share.limits.all()) or "-"


class CalendarChangeFormSet(TypeRowsFormSet):
    """Checks the policy's calendar as a set, with the policy as edited, through the engine's
    validator; an error goes next to the row that caused it."""

    def check(self, forms: list) -> None:
        rows: list[tuple[object, ChangeSpec]] = []
        for form in forms:
            data = form.cleaned_data
            share = data.get("share")
            if share is not None and share.policy_id != self.instance.pk:
                form.add_error("share", f"{share} is a share of another policy")
                return
            spec = ChangeSpec(
                data["time"], share.name if share else None, data["instance_type"].name, data["count"]
            )
            rows.append((form, spec))
        specs = [spec for _, spec in rows]
        for row in duplicate_change_rows(specs):
            rows[row][0].add_error(
                None, f"{specs[row].target()} already has a row for {specs[row].instance_type} at this time"
            )
        try:
            self.instance.validate_with(changes=specs)
        except CalendarError as error:
            rows[error.row][0].add_error(None, error.messages)


class CalendarChangeInline(admin.TabularInline):
    model = CalendarChange
    formset = CalendarChangeFormSet
    fields = ["time", "share", "instance_type", "count"]
    extra = 0
    verbose_name = "dated change (capacity or quota from this time on)"
    verbose_name_plural = "calendar: dated changes of the pool's capacity (no share) and of share quotas"

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        # Only the shares of the policy on this page.
        if db_field.name == "share":
            policy_id = request.resolver_match.kwargs.get("object_id") if request.resolver_match else None
            kwargs["queryset"] = Share.objects.filter(policy_id=policy_id)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


ADMIN_CALENDAR_ROWS = 200  # past this many calendar rows the admin links to the policy page


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "pool",
        "queueing",
        "startup_seconds",
        "fair_sharing",
        "share_count",
        "change_count",
        "parent_link",
        "updated_at",
    ]
    list_filter = ["pool", "queueing", "fair_sharing"]
    search_fields = ["name", "description"]
    inlines = [ShareInline, CalendarChangeInline]
    actions = ["duplicate_policies"]
    readonly_fields = ["calendar_elsewhere"]

    def get_inlines(self, request, obj):
        # A long calendar is not one form per row here (10,000 rows took the page past any
        # timeout): it is edited on the policy page, which shows its first rows and a count.
        if obj is not None and obj.changes.count() > ADMIN_CALENDAR_ROWS:
            return [ShareInline]
        return super().get_inlines(request, obj)

    def get_fields(self, request, obj=None):
        fields = list(super().get_fields(request, obj))
        if obj is None or obj.changes.count() <= ADMIN_CALENDAR_ROWS:
            fields.remove("calendar_elsewhere")
        return fields

    @admin.display(description="calendar")
    def calendar_elsewhere(self, policy: Policy) -> str:
        url = reverse("web:policy", args=[policy.pk]) + "#calendar"
        return format_html(
            '{} dated changes: more than {} are edited on <a href="{}">the policy page</a>',
            policy.changes.count(),
            ADMIN_CALENDAR_ROWS,
            url,
        )

    @admin.display(description="shares")
    def share_count(self, policy: Policy) -> int:
        return policy.shares.count()

    @admin.display(description="dated changes")
    def change_count(self, policy: Policy) -> int:
        return policy.changes.count()

    @admin.display(description="variant of")
    def parent_link(self, policy: Policy) -> str:
        if policy.parent is None:
            return "-"
        url = reverse("admin:capacity_policy_change", args=[policy.parent_id])
        return format_html('<a href="{}">{}</a>', url, policy.parent.name)

    @admin.action(description="Duplicate into a variant")
    def duplicate_policies(self, request, queryset) -> None:
        for policy in queryset:
            name = f"{policy.name} (copy)"
            suffix = 2
            while Policy.objects.filter(name=name).exists():
                name = f"{policy.name} (copy {suffix})"
                suffix += 1
            try:
                policy.duplicate(name)
            except ValidationError as error:
                self.message_user(request, " ".join(error.messages), level=messages.ERROR)
                return
        self.message_user(request, f"Duplicated {queryset.count()} policies.")


class ShareLimitFormSet(TypeRowsFormSet):
    """Checks the share's per-type numbers together, through the engine's validator."""

    def owner_saved(self) -> bool:
        return self.instance.policy_id is not None  # a share is checked within its policy

    def check(self, forms: list) -> None:
        rows = [
            ShareLimit(
                instance_type=form.cleaned_data["instance_type"],
                quota=form.cleaned_data.get("quota") or 0,
                borrowing_limit=form.cleaned_data.get("borrowing_limit"),
                lending_limit=form.cleaned_data.get("lending_limit"),
            )
            for form in forms
        ]
        self.instance.check_in_policy(self.instance.spec(limits=rows))


class ShareLimitInline(admin.TabularInline):
    model = ShareLimit
    formset = ShareLimitFormSet
    extra = 1


@admin.register(Share)
class ShareAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "policy",
        "strategy",
        "borrow_limit_percent",
        "in_share_preemption",
        "reclaim",
        "fair_weight",
        "position",
    ]
    list_filter = ["strategy", "in_share_preemption", "reclaim", "policy__pool", "policy"]
    search_fields = ["name", "policy__name"]
    inlines = [ShareLimitInline]
