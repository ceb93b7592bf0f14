"""The demo: three pools, each with a policy and its what-if variants, a trace, and a study
already replayed. Loading twice changes nothing (everything is looked up by name).

- AWS example (SEMANTICS.md section 4): 3 x ml.g5.xlarge, QS1/QS2/QS3, its four-job trace.
- Synthetic teams: ``scheduling.synthetic.generate`` and its four-share demo policy.
- ITP 2021 (Microsoft, real): ten clusters as ten shares (``scheduling.quota_tables``).

Variants of each: static split (all RESERVE), full pooling (all LEND_AND_BORROW, unlimited),
and no preemption (neither in-share nor cross-share).
"""

from __future__ import annotations

import copy
import io
import os
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import transaction

from planner.capacity.models import InstanceType, Policy, Pool
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run, Study
from planner.studies.tasks import replay_run
from planner.traces.models import Trace, read_upload
from scheduling.quota_tables import itp_policy_dict
from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate

AWS_POLICY = {
    "name": "aws-example",
    "description": "The AWS Batch quota-share example: QS1 lends and borrows (200%), QS2 lends, "
    "QS3 reserves.",
    "instance_types": {"ml.g5.xlarge": {"gpus": 1, "hourly_price": 1.41}},
    "capacity": {"ml.g5.xlarge": 3},
    "queueing": "best_effort_fifo",
    "startup_seconds": 0,
    "shares": [
        {"name": "QS1", "capacity": {"ml.g5.xlarge": 1}, "strategy": "LEND_AND_BORROW",
         "borrow_limit_percent": 200, "in_share_preemption": "lower_priority", "reclaim": "any"},
        {"name": "QS2", "capacity": {"ml.g5.xlarge": 1}, "strategy": "LEND"},
        {"name": "QS3", "capacity": {"ml.g5.xlarge": 1}, "strategy": "RESERVE"},
    ],
}  # fmt: skip

# QS1 submits priorities 3, 2, 1; QS2 submits a job; p1 is raised to 4 (one hour jobs).
AWS_TRACE = b"""{"jobs": [
 {"job_id": "qs1-p3", "submit_time": 0, "share": "QS1", "priority": 3, "duration": 3600},
 {"job_id": "qs1-p2", "submit_time": 60, "share": "QS1", "priority": 2, "duration": 3600},
 {"job_id": "qs1-p1", "submit_time": 120, "share": "QS1", "priority": 1, "duration": 3600},
 {"job_id": "qs2-a", "submit_time": 600, "share": "QS2", "priority": 0, "duration": 3600}],
 "priority_updates": [{"time": 1200, "job_id": "qs1-p1", "priority": 4}]}"""

SYNTHETIC_JOBS = 20000
ITP_TRACE = "itp-2021/itp_all_clusters.csv"
# The ITP trace ships with the planner (MIT licence: LICENSE and the upstream README beside it),
# gzip-compressed, so the demo is complete from the repository alone.
BUNDLED_DATA = Path(__file__).parent / "data"


def static_split(policy: dict) -> dict:
    """Every share keeps to its quota: nothing lent, nothing borrowed."""
    out = copy.deepcopy(policy)
    for share in out["shares"]:
        share["strategy"] = "RESERVE"
        for key in ("borrow_limit_percent", "borrowing_limit", "lending_limit"):
            share.pop(key, None)
    return out


def full_pooling(policy: dict) -> dict:
    """Every share lends all its idle quota and may borrow without limit."""
    out = copy.deepcopy(policy)
    for share in out["shares"]:
        share["strategy"] = "LEND_AND_BORROW"
        share["borrow_limit_percent"] = -1
        share.pop("borrowing_limit", None)
        share.pop("lending_limit", None)
    return out


def no_preemption(policy: dict) -> dict:
    """Nobody is ever preempted: no in-share preemption, no reclaiming of lent capacity."""
    out = copy.deepcopy(policy)
    for share in out["shares"]:
        share["in_share_preemption"] = "never"
        share["reclaim"] = "never"
    return out


VARIANTS: list[tuple[str, Callable[[dict], dict]]] = [
    ("static-split", static_split),
    ("full-pooling", full_pooling),
    ("no-preemption", no_preemption),
]


def data_dir() -> Path:
    """The real traces: ``PLANNER_DATA_DIR``, else ``shared/data`` beside the repository."""
    return Path(os.environ.get("PLANNER_DATA_DIR", settings.BASE_DIR.parent / "shared" / "data"))


def itp_trace_path() -> Path:
    """The ITP 2021 trace: from the data folder when it has it, else the copy the planner ships."""
    path = data_dir() / ITP_TRACE
    return path if path.exists() else BUNDLED_DATA / f"{ITP_TRACE}.gz"


class DemoLoader:
    """Loads each part once; ``say`` reports progress (the command prints it)."""

    def __init__(self, say: Callable[[str], None] = lambda line: None):
        self.say = say

    def policy_family(self, base: dict, pool_name: str) -> list[Policy]:
        """The base policy and its variants (``<name>-static-split``...), created when missing."""
        pool, _ = Pool.objects.get_or_create(
            name=pool_name, defaults={"description": base.get("description", "")}
        )
        if not pool.capacities.exists():
            for type_name, spec in base["instance_types"].items():
                InstanceType.objects.get_or_create(
                    name=type_name,
                    defaults={"gpus": spec.get("gpus", 1), "hourly_price": spec.get("hourly_price", 0)},
                )
            pool.set_capacity(base["capacity"])
        family = []
        parent = Policy.objects.filter(name=base["name"]).first()
        if parent is None:
            parent = Policy.create_from_dict(base, pool=pool)
            self.say(f"  policy {parent.name}")
        family.append(parent)
        for suffix, transform in VARIANTS:
            name = f"{base['name']}-{suffix}"
            data = transform(base)
            if data["shares"] == base["shares"]:
                continue  # the base already is this variant (ITP's clusters are static partitions)
            variant = Policy.objects.filter(name=name).first()
            if variant is None:
                data["description"] = f"{transform.__doc__.strip()} Variant of {base['name']}."
                variant = Policy.create_from_dict(data, pool=pool, name=name, parent=parent)
                self.say(f"  policy {variant.name}")
            family.append(variant)
        return family

    def trace(self, name: str, build: Callable[[], object], **fields) -> Trace:
        existing = Trace.objects.filter(name=name).first()
        if existing is not None:
            return existing
        trace = Trace.store(build(), name=name, **fields)
        self.say(f"  trace {name}: {trace.job_count:,} jobs")
        return trace

    def study(self, name: str, trace: Trace, policies: list[Policy], description: str) -> Study:
        study = Study.objects.filter(name=name).first()
        if study is None:
            with transaction.atomic():
                study = launch_study(
                    StudyLaunch(
                        name=name,
                        trace=trace,
                        policies=policies,
                        description=description,
                    ),
                    enqueue=False,
                )
        for run in study.runs.exclude(status="succeeded"):
            if run.status == "failed":
                Run.objects.filter(pk=run.pk).update(status="queued", attempts=0, error="")
            self.say(f"  replaying {run.policy_name} over {trace.name}...")
            replay_run.apply(args=[run.pk])
            run.refresh_from_db()
            if run.status != "succeeded":
                raise RuntimeError(f"the demo run {run.policy_name} failed: {run.error}")
        return study

    def aws_example(self) -> Study:
        self.say("AWS example (SEMANTICS.md section 4)")
        policies = self.policy_family(AWS_POLICY, "aws-example")
        trace = self.trace(
            "aws-example",
            lambda: read_upload(io.BytesIO(AWS_TRACE), format="planner-json"),
            format="planner-json",
            description="The four jobs of the AWS quota-share example, with the priority raise.",
        )
        return self.study("AWS example: lend, reserve or pool?", trace, policies, AWS_POLICY["description"])

    def synthetic_teams(self) -> Study:
        self.say("Synthetic teams")
        columns = generate(SYNTHETIC_JOBS, seed=1)
        base = demo_policy_dict(demo_pool_gpus(columns))
        base["name"] = "teams"
        policies = self.policy_family(base, "teams")
        trace = self.trace(
            "synthetic-teams",
            lambda: columns,
            format="synthetic",
            description=f"{SYNTHETIC_JOBS:,} jobs of four teams (scheduling.synthetic.generate, seed 1).",
        )
        return self.study("Four teams: what does reserving cost?", trace, policies, base["description"])

    def itp(self) -> Study | None:
        path = itp_trace_path()
        if not path.exists():
            self.say(f"ITP 2021: {path} not found, skipped")
            return None
        self.say("ITP 2021 (Microsoft, real trace)")
        base = itp_policy_dict(name="itp-2021", hourly_price=2.5)
        policies = self.policy_family(base, "itp-2021")
        trace = self.trace(
            "itp-2021",
            lambda: read_upload(path, format="itp-2021"),
            format="itp-2021",
            source_name=path.name.removesuffix(".gz"),
            description="Microsoft ITP GPU training jobs, 2021: 10 clusters as 10 teams (MIT licence).",
        )
        return self.study("ITP 2021: ten clusters, split or pooled?", trace, policies, base["description"])

    def load(self, *, itp: bool = True) -> list[Study]:
        studies = [self.aws_example(), self.synthetic_teams()]
        if itp:
            study = self.itp()
            if study is not None:
                studies.append(study)
        return studies
