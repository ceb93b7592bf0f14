"""Every file of the corpus gives, through every reader, exactly the message it gave before the
columnar parser (recorded in corpus-messages.json from the row-by-row readers): a faster parser
must not change what a person is told about their file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from scheduling.errors import InputError
from scheduling.traces import FORMATS, read_trace

HERE = Path(__file__).parent
RECORDED: dict[str, str] = json.loads((HERE / "corpus-messages.json").read_text(encoding="utf-8"))


def outcome(name: str, fmt: str) -> str:
    stream = io.BytesIO((HERE / "corpus" / name).read_bytes())
    stream.name = name
    try:
        trace = read_trace(stream, format=fmt, max_rows=100_000)
    except InputError as error:
        return str(error)
    return f"ok: {len(trace)} jobs"


def test_every_corpus_file_and_reader_was_recorded():
    files = sorted(path.name for path in (HERE / "corpus").iterdir())
    assert set(RECORDED) == {f"{name} {fmt}" for name in files for fmt in ["auto", *FORMATS]}


@pytest.mark.parametrize("key", sorted(RECORDED))
def test_the_message_is_the_recorded_one(key):
    name, fmt = key.rsplit(" ", 1)
    assert outcome(name, fmt) == RECORDED[key]
