"""Importer for the Alibaba GPU cluster pods of 2023 (``openb_pod_list_*.csv``, FGD paper): pods with
their creation, scheduling and deletion times, so replays can be compared with the recorded waits.
"""

from __future__ import annotations

from typing import Any

from scheduling.errors import InputError
from scheduling.trace import Trace
from scheduling.traces.fields import is_absent, parse_int, parse_seconds, parse_text
from scheduling.traces.mapping import (
    CsvTable,
    PriorityMode,
    TraceImport,
    TraceMapping,
    csv_columns,
    resolve_mapping,
    text_stream,
)

FORMAT = "alibaba-openb-2023"
COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)

# Kubernetes QoS classes as priorities (choice): latency-sensitive first, best-effort last, with
# room between them for a policy variant to slot other work in.
QOS_PRIORITY = {"LS": 3000, "Guaranteed": 2000, "Burstable": 1000, "BE": 0}

# The share defaults to the QoS class (choice): gpu_spec, the only other candidate, is empty in the
# published default pod list, while LS versus BE is the split a quota plan actually has to make.
DEFAULT_MAPPING = TraceMapping(
    share_column="qos", priority_column="qos", priority_mode=PriorityMode.MAP, priority_map=QOS_PRIORITY
)

# Skipped pods (choice), counted in stats["skipped"]:
SKIP_NO_GPU = "no_gpu"  # CPU-only pods do not use the GPU pool
SKIP_NEVER_SCHEDULED = "never_scheduled"  # no scheduled_time: it never ran, so its work is unknown
# (and zero_duration, counted by TraceImport.add_row: deleted the second it was scheduled, no work)


source_columns = csv_columns


def read(
    source: Any,
    *,
    mapping: TraceMapping | dict | None = None,
    stats: dict | None = None,
    max_rows: int | None = None,
    source_rows: int | None = None,
    allow_empty: bool = False,
) -> Trace | None:
    """Pods as jobs: submit = ``creation_time``, recorded start = ``scheduled_time``, work =
    ``deletion_time - scheduled_time`` (seconds from the trace's origin, not calendar times).

    GPUs = ``num_gpu`` x ``gpu_milli`` / 1000; a fraction of a GPU is rounded up to a whole one,
    or counted in tenths with ``fractional_gpus="tenths"`` in the mapping. The GPU model, when
    ``gpu_spec`` names one (``V100M16|V100M32``: any of them), picks the instance type through
    ``mapping.instance_types``.
    """
    chosen = resolve_mapping(mapping, DEFAULT_MAPPING)
    run = TraceImport(
        FORMAT,
        chosen,
        max_rows=max_rows,
        stats=stats,
        field_names={
            "job_id": "name",
            "submit_time": "creation_time",
            "instance_count": "num_gpu",
            "duration": "deletion_time",
            "recorded_start": "scheduled_time",
        },
    )
    with text_stream(source) as stream:
        table = CsvTable(stream)
        table.require("name", "num_gpu", "creation_time", "deletion_time", "scheduled_time")
        chosen.check_columns(table.columns)
        at = table.index
        i_milli = at.get("gpu_milli")
        i_spec = at.get("gpu_spec")
        run.locate_mapped_columns(at)
        for row, cells in table.rows(source_rows):
            name = parse_text(cells[at["name"]], row, "name")
            num_gpu = parse_int(cells[at["num_gpu"]], row, "num_gpu", minimum=0)
            milli = (
                1000
                if i_milli is None
                else parse_int(cells[i_milli], row, "gpu_milli", minimum=0, maximum=1000)
            )
            if num_gpu == 0 or milli == 0:
                run.skip(SKIP_NO_GPU)
                continue
            created = parse_seconds(cells[at["creation_time"]], row, "creation_time")
            if is_absent(cells[at["scheduled_time"]]):
                run.skip(SKIP_NEVER_SCHEDULED)
                continue
            scheduled = parse_seconds(cells[at["scheduled_time"]], row, "scheduled_time")
            deleted = parse_seconds(cells[at["deletion_time"]], row, "deletion_time")
            if deleted < scheduled:
                raise InputError(
                    f"{deleted:g} is before scheduled_time {scheduled:g}", row=row, field="deletion_time"
                )
            if scheduled < created:
                raise InputError(
                    f"{scheduled:g} is before creation_time {created:g}", row=row, field="scheduled_time"
                )
            run.add_row(  # deleted the second it was scheduled: skipped as zero_duration
                row,
                cells,
                job_id=name,
                submit_time=created,
                duration=deleted - scheduled,
                instance_type=_instance_type(chosen, cells[i_spec] if i_spec is not None else ""),
                gpus=num_gpu * milli / 1000,
                recorded_start=scheduled,
            )
        run.source_rows = table.data_row
    return run.finish(epoch_times=False, allow_empty=allow_empty)


def _instance_type(mapping: TraceMapping, spec: str) -> str:
    spec = spec.strip()
    if spec and spec not in mapping.instance_types:
        for model in spec.split("|"):
            if model.strip() in mapping.instance_types:
                return mapping.instance_type_of(model)
    return mapping.instance_type_of(spec)
