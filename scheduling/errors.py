"""The one exception for bad input: it names the row and the field so a person can fix the file."""

from __future__ import annotations


class InputError(ValueError):
    """A trace or policy that cannot be used as it is.

    ``row`` is the 1-based data row of a trace (the header is not counted) or ``None``
    for policies and whole-file problems; ``field`` is the column or the policy path
    (``shares[1].capacity.ml.g5.xlarge``).
    """

    def __init__(self, message: str, *, row: int | None = None, field: str | None = None):
        # A NUL byte quoted from the input is shown escaped: the message and the field are stored
        # (a failed trace's error), and PostgreSQL refuses NUL in text where SQLite took it.
        self.row = row
        self.field = field.replace("\x00", "\\x00") if field else field
        self.reason = message.replace("\x00", "\\x00")
        super().__init__(self.describe())

    def describe(self) -> str:
        where = []
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field:
            where.append(self.field)
        return f"{', '.join(where)}: {self.reason}" if where else self.reason

    def as_dict(self) -> dict:
        return {"row": self.row, "field": self.field, "message": self.describe()}
