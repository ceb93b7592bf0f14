"""One validator for every door: the engine's parse_policy, reached through the models, with
its field paths mapped back to the model fields being edited."""

import pytest
from django.core.exceptions import ValidationError

from planner.capacity.models import Share, ShareSpec
from tests.service.conftest import AWS_TYPE

pytestmark = pytest.mark.django_db


def test_the_aws_example_policy_round_trips_to_the_semantics_json(aws_policy):
    data = aws_policy.engine_policy().to_dict()
    assert data["capacity"] == {AWS_TYPE: 3}
    assert [(s["name"], s["strategy"], s["capacity"]) for s in data["shares"]] == [
        ("QS1", "LEND_AND_BORROW", {AWS_TYPE: 1}),
        ("QS2", "LEND", {AWS_TYPE: 1}),
        ("QS3", "RESERVE", {AWS_TYPE: 1}),
    ]
    assert data["shares"][0]["borrow_limit_percent"] == 200


def test_a_share_quota_beyond_the_pool_is_reported_on_the_share_capacity(aws_policy):
    qs3 = aws_policy.shares.get(name="QS3")
    # 1 + 1 + 2 = 4 instances of quota on a pool of 3.
    with pytest.raises(ValidationError) as caught:
        qs3.check_in_policy(ShareSpec("QS3", "RESERVE", capacity={AWS_TYPE: 2}))
    assert "add up to 4" in str(caught.value.message_dict["capacity"])


def test_a_borrow_limit_on_a_reserve_share_is_reported_on_that_field(aws_policy):
    qs3 = aws_policy.shares.get(name="QS3")
    qs3.borrow_limit_percent = 50
    with pytest.raises(ValidationError) as caught:
        qs3.full_clean()
    assert "only applies to LEND_AND_BORROW" in str(caught.value.message_dict["borrow_limit_percent"])


def test_a_new_share_with_a_taken_name_is_rejected(aws_policy):
    share = Share(policy=aws_policy, name="QS1", strategy="LEND", position=9)
    with pytest.raises(ValidationError) as caught:
        share.clean()
    assert "duplicate share name" in str(caught.value)


def test_shrinking_the_pool_below_its_quotas_names_the_pool_capacity(aws_policy):
    with pytest.raises(ValidationError) as caught:
        aws_policy.pool.check_capacity({AWS_TYPE: 2})
    assert "more than the pool's 2" in str(caught.value.message_dict["capacity"])


def test_a_duplicate_keeps_every_share_and_remembers_its_parent(aws_policy):
    variant = aws_policy.duplicate("aws-example-copy")
    assert variant.parent == aws_policy
    assert variant.engine_policy().to_dict()["shares"] == aws_policy.engine_policy().to_dict()["shares"]
    variant.shares.filter(name="QS3").update(strategy="LEND")
    assert aws_policy.shares.get(name="QS3").strategy == "RESERVE"
