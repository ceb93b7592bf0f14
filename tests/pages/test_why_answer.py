""" "Why did my job wait?" answers in one sentence (planner/studies/wait_answer.py): how long and
why, its share's quota and borrowing, who held the instances, what would have let it start; and
each wait has its own legend label."""

import io

import pytest

from planner.reports.figures import job_timeline_figure, segment_labels
from planner.studies.launch import StudyLaunch, launch_study
from planner.traces.models import Trace, read_upload
from tests.pages.conftest import look_at

pytestmark = pytest.mark.django_db(transaction=True)

# Pool of 4; train: quota 2, may borrow 100 % more (2). t1 takes all 4 (2 own + 2 borrowed) for an
# hour from 0; t2 (1 instance) comes at 600 s: train is at its borrow limit and the pool is full,
# so t2 waits until t1 ends at 3,600 s: 3,000 s = 0.83 h, while train holds all 4.
CSV = b"""job_id,submit_time,share,priority,instance_count,duration
t1,0,train,1,4,3600
t2,600,train,1,1,1800
"""


REMEDY = "It would have started with a higher borrow limit for train (100 % now)."


@pytest.fixture
def study(small_policy, eager_celery):
    trace = Trace.store(read_upload(io.BytesIO(CSV), format="planner-csv"), name="full", format="planner-csv")
    return launch_study(StudyLaunch(name="full", trace=trace, policies=[small_policy]))


def test_the_answer_in_one_sentence(page_as, study):
    run = study.runs.get()
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/why/?run={run.pk}&job_id=t2")
    answer = page.locator("#wait-answer").inner_text()
    assert answer.startswith("Job t2 of train waited 0.83 h before it started, all of it because ")
    quota = "train's quota is 2 instances of ml.g5.xlarge and it may borrow up to 100 % of its quota more"
    assert quota in answer
    held = "when it was submitted the 4 ml.g5.xlarge instances were held by train (4) and none was free"
    held += " (it needs 1)"
    assert held in answer
    assert answer.endswith(REMEDY)
    look_at(page, "why-answer", "#job-timeline")
    names = page.locator("#job-timeline").evaluate("el => el._fullData.map(t => t.name)")
    assert len(names) == len(set(names)) and names[-1] == "run 1: succeeded"


def test_a_job_that_did_not_wait_says_so(client_as, study):
    run = study.runs.get()
    body = client_as("viewer").get(f"/api/runs/{run.pk}/job-timeline/", {"job_id": "t1"}).json()
    assert body["answer"] == "Job t1 of train did not wait: it started as soon as it was submitted."
    assert body["held_when_waiting"] is None
    t2 = client_as("viewer").get(f"/api/runs/{run.pk}/job-timeline/", {"job_id": "t2"}).json()
    held = {"time": 600.0, "type": "ml.g5.xlarge", "capacity": 4, "held": {"train": 4}, "free": 0}
    assert t2["held_when_waiting"] == held


def test_two_waits_for_one_reason_get_two_labels():
    def segment(state, reason, words, start):
        return {"state": state, "reason": reason, "words": words, "start": start, "end": start + 10,
                "seconds": 10}  # fmt: skip

    segments = [
        segment("waiting", "pool_full", "x", 0),
        segment("waiting", "pool_full", "x; and behind", 10),  # the same reason, split where others waited
        segment("running", None, "preempted by j9", 20),
        segment("waiting", "borrow_limit", "y", 30),
        segment("running", None, "succeeded", 40),
    ]
    labels = segment_labels(segments)
    assert labels == [
        "wait 1: pool full, nothing it may preempt",
        "wait 2: pool full, nothing it may preempt",
        "run 1: preempted by j9",
        "wait 3: its share's borrow limit reached",
        "run 2: succeeded",
    ]
    figure = job_timeline_figure({"job_id": "j", "submit_time": 0, "segments": segments})
    assert [trace["name"] for trace in figure["data"]] == labels
