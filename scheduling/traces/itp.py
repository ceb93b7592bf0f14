"""Importer for the Microsoft ITP 2021 trace (ElasticFlow, ``itp_all_clusters.csv``): each cluster
becomes a share of one pool, each job asks ``num_gpu`` instances of the one-GPU type ``gpu``.
"""

from __future__ import annotations

from typing import Any

from scheduling.trace import Trace
from scheduling.traces.fields import parse_int, parse_seconds, parse_text
from scheduling.traces.mapping import (
    CsvTable,
    TraceImport,
    TraceMapping,
    csv_columns,
    resolve_mapping,
    text_stream,
)

FORMAT = "itp-2021"
COLUMNS = ("job_id", "submission_time", "duration", "num_gpu", "cluster")
DEFAULT_MAPPING = TraceMapping(share_column="cluster")

# Skipped rows (choice), counted in stats["skipped"]: a job that asks no GPU does not use the pool
# being planned, and a job that ran zero seconds did no work and holds nothing in a replay.
SKIP_NO_GPU = "no_gpu"
# (TraceImport.add_row skips and counts the zero_duration ones)


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
    """The ITP trace as planner jobs. ``submission_time`` is seconds from the start of collection,
    so the trace's times are not calendar times. ``source_rows`` stops after that many data rows
    (previews); ``stats`` (a dict) receives the counts of read, imported and skipped rows."""
    chosen = resolve_mapping(mapping, DEFAULT_MAPPING)
    run = TraceImport(
        FORMAT,
        chosen,
        max_rows=max_rows,
        stats=stats,
        field_names={"submit_time": "submission_time", "instance_count": "num_gpu"},
    )
    with text_stream(source) as stream:
        table = CsvTable(stream)
        table.require("job_id", "submission_time", "duration", "num_gpu")
        chosen.check_columns(table.columns)
        at = table.index
        i_job, i_submit, i_duration, i_gpus = (
            at["job_id"],
            at["submission_time"],
            at["duration"],
            at["num_gpu"],
        )
        run.locate_mapped_columns(at)
        for row, cells in table.rows(source_rows):
            job_id = parse_text(cells[i_job], row, "job_id")
            submit = parse_seconds(cells[i_submit], row, "submission_time")
            duration = parse_seconds(cells[i_duration], row, "duration")
            gpus = parse_int(cells[i_gpus], row, "num_gpu", minimum=0)
            if gpus == 0:
                run.skip(SKIP_NO_GPU)
                continue
            run.add_row(row, cells, job_id=job_id, submit_time=submit, duration=duration, gpus=gpus)
        run.source_rows = table.data_row
    return run.finish(epoch_times=False, allow_empty=allow_empty)
