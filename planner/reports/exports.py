"""CSV downloads of the report tables, safe to open in a spreadsheet: a text cell that starts
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (a formula to a spreadsheet) is
prefixed with a single quote; numbers are written as numbers."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from django.http import HttpResponse

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    """The cell as written to the CSV: numbers as they are, formula-like text quoted."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        # Sums of floats leave dust (1.4210854715202004e-14 for a zero): nine significant
        # digits are more than any figure here carries.
        return 0 if abs(value) < 1e-9 else float(f"{value:.9g}")
    if isinstance(value, int):
        return value
    text = str(value)
    if text.startswith(FORMULA_STARTS):
        return "'" + text
    return text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([safe_cell(h) for h in header])
    for row in rows:
        writer.writerow([safe_cell(cell) for cell in row])
    return out.getvalue()


def csv_response(filename: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> HttpResponse:
    """A CSV attachment (UTF-8 with a byte-order mark so spreadsheets read accents right)."""
    response = HttpResponse("\ufeff" + csv_text(header, rows), content_type="text/csv; charset=utf-8")
    safe_name = "".join(c if c.isalnum() or c in "-_." else "-" for c in filename)
    response["Content-Disposition"] = f'attachment; filename="{safe_name}"'
    return response
