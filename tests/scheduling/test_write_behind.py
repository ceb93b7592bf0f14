"""A file written behind (``scheduling.write_behind``) holds every byte written, in order, however
the writes fall across the windows whose pages are let go."""

from __future__ import annotations

import os

from scheduling import write_behind


def test_every_byte_arrives_across_many_windows(tmp_path, monkeypatch):
    monkeypatch.setattr(write_behind, "WINDOW", 4096)
    pieces = [os.urandom(size) for size in (1, 4095, 4096, 10_000, 3, 70_000, 0, 5)]
    path = tmp_path / "out.bin"
    with path.open("wb") as opened:
        behind = write_behind.WriteBehind(opened)
        for piece in pieces:
            behind.write(memoryview(piece) if len(piece) % 2 else piece)
    assert path.read_bytes() == b"".join(pieces)
    assert behind.dropped > 0 and behind.started > behind.dropped  # windows were let go


def test_without_posix_fadvise_it_is_a_plain_write(tmp_path, monkeypatch):
    monkeypatch.setattr(write_behind, "WINDOW", 16)
    monkeypatch.delattr(os, "posix_fadvise")
    path = tmp_path / "out.bin"
    with path.open("wb") as opened:
        behind = write_behind.WriteBehind(opened)
        for _ in range(10):
            behind.write(b"0123456789")
    assert path.read_bytes() == b"0123456789" * 10
