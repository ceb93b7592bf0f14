"""``manage.py import_quota_table PATH --kind helios-day|nodes --name NAME``: a pool, a policy and one
share per team from a real quota table, in one step."""

from django.core.management.base import BaseCommand, CommandError

from planner.calibration.quota_import import KINDS, STRATEGIES, import_quota_table
from scheduling.errors import InputError
from scheduling.quota_tables import DEFAULT_GPUS_PER_NODE


class Command(BaseCommand):
    help = "Create a pool, a policy and its shares from a quota table (GPUs per VC per day, or nodes per VC)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="the table (CSV, gzip allowed)")
        kinds = "; ".join(f"{kind}: {text}" for kind, text in KINDS.items())
        parser.add_argument("--kind", required=True, choices=list(KINDS), help=kinds)
        parser.add_argument("--name", required=True, help="name of the new pool and policy")
        parser.add_argument("--day", default=None, help="helios-day: the day (YYYY-MM-DD); default the last")
        parser.add_argument(
            "--gpus-per-node",
            type=int,
            default=DEFAULT_GPUS_PER_NODE,
            help="nodes: GPUs per node (default 8)",
        )
        parser.add_argument(
            "--strategy", default="RESERVE", choices=STRATEGIES, help="every share's strategy"
        )

    def handle(self, path: str, *, kind: str, name: str, day, gpus_per_node: int, strategy: str, **options):
        try:
            policy = import_quota_table(
                path, kind=kind, name=name, day=day, gpus_per_node=gpus_per_node, strategy=strategy
            )
        except (InputError, OSError) as error:
            raise CommandError(error.describe() if isinstance(error, InputError) else str(error)) from None
        gpus = policy.pool.total_gpus()
        self.stdout.write(f"pool and policy {policy.name}: {policy.shares.count()} shares, {gpus:,.0f} GPUs")
