"""The parts of runs' metrics a page needs, read by the database without the rest of the document.

``metrics -> 'key'`` reads the whole stored JSON again for every key asked (PostgreSQL detoasts the
document once per expression: four keys of ITP's 0.7 MB, four times). On PostgreSQL the parts come
from one ``jsonb_each`` pass over each run's document, as text parsed by orjson; elsewhere (SQLite)
one ``KeyTransform`` per part.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.db.models.fields.json import KeyTransform

from planner.studies.models import Run


def metrics_parts(
    run_ids: Iterable[int], keys: Iterable[str], nested: Mapping[str, str] | None = None
) -> dict[int, dict[str, Any] | None]:
    """Each run's ``{key: metrics[key]}`` for ``keys`` (None for a key it lacks), and for ``nested``
    ``{key: subkey}`` only ``{key: {subkey: metrics[key][subkey]}}``; None for a run without
    metrics."""
    ids, wanted, nested = list(run_ids), list(keys), dict(nested or {})
    if not ids:
        return {}
    read = _postgresql if connection.vendor == "postgresql" else _any_database
    return read(ids, wanted, nested)


def _postgresql(ids: list[int], keys: list[str], nested: dict[str, str]) -> dict[int, dict[str, Any] | None]:
    cases, params = "", []
    for key, subkey in nested.items():
        cases += " WHEN %s THEN jsonb_build_object(%s, part.value -> %s)::text"
        params += [key, subkey, subkey]
    value = f"CASE part.key{cases} ELSE part.value::text END" if cases else "part.value::text"
    sql = (
        f"SELECT run.id, run.metrics IS NULL, part.key, {value} FROM {Run._meta.db_table} run "
        "LEFT JOIN LATERAL jsonb_each(run.metrics) part ON part.key = ANY(%s) WHERE run.id = ANY(%s)"
    )
    parts: dict[int, dict[str, Any] | None] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, [*keys, *nested], ids])
        for run_id, empty, key, text in cursor.fetchall():
            if empty:
                parts[run_id] = None
                continue
            found = parts.setdefault(run_id, _absent(keys, nested))
            if key is not None:
                found[key] = orjson.loads(text)
    return parts


def _absent(keys: list[str], nested: dict[str, str]) -> dict[str, Any]:
    """The parts of a document that has none of them (as KeyTransform reads them)."""
    return {**dict.fromkeys(keys), **{key: {subkey: None} for key, subkey in nested.items()}}


Parts = dict[int, dict[str, Any] | None]


def _any_database(ids: list[int], keys: list[str], nested: dict[str, str]) -> Parts:
    columns: dict[str, Any] = {f"part_{n}": KeyTransform(key, "metrics") for n, key in enumerate(keys)}
    for n, (key, subkey) in enumerate(nested.items()):
        columns[f"nested_{n}"] = KeyTransform(subkey, KeyTransform(key, "metrics"))
    empty = ExpressionWrapper(Q(metrics__isnull=True), output_field=BooleanField())
    parts: Parts = {}
    rows = Run.objects.filter(pk__in=ids).annotate(empty=empty, **columns)
    for row in rows.values("id", "empty", *columns):
        if row["empty"]:
            parts[row["id"]] = None
            continue
        found = {key: row[f"part_{n}"] for n, key in enumerate(keys)}
        for n, (key, subkey) in enumerate(nested.items()):
            found[key] = {subkey: row[f"nested_{n}"]}
        parts[row["id"]] = found
    return parts
