"""Shares whose names differ only in case (``a`` and ``A``) export to files whose names differ
ignoring case too: on a case-insensitive file system (macOS, Windows) one would overwrite the other."""

from __future__ import annotations

from scheduling.export.aws_batch import from_aws_batch, to_aws_batch
from scheduling.model import parse_policy

POLICY = {
    "name": "cases",
    "capacity": {"gpu": 3},
    "shares": [
        {"name": "a", "capacity": {"gpu": 1}},
        {"name": "A", "capacity": {"gpu": 1}},
        {"name": "A-2", "capacity": {"gpu": 1}},
    ],
}


def test_quota_share_files_are_unique_ignoring_case():
    bundle = to_aws_batch(parse_policy(POLICY))
    files = [name for name in bundle.documents if name.startswith("create-quota-share-")]
    # a, then A (taken ignoring case: A-2), then A-2 (taken too: A-2-2).
    assert files == [
        "create-quota-share-a.json",
        "create-quota-share-A-2.json",
        "create-quota-share-A-2-2.json",
    ]
    assert len({name.casefold() for name in files}) == len(files)
    # The quota shares keep their own names; only the files are renamed.
    names = [bundle.documents[name]["quotaShareName"] for name in files]
    assert names == ["a", "A", "A-2"]
    for name in files:
        assert f"file://{name}" in bundle.script


def test_the_bundle_reads_back_with_every_share():
    bundle = to_aws_batch(parse_policy(POLICY))
    back = from_aws_batch(bundle.documents)
    assert [share["name"] for share in back["shares"]] == ["a", "A", "A-2"]
