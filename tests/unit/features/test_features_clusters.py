"""The text vectors, action clusters and sub-goal graph stay deterministic and bounded."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from detectors.testing import Session
from features.calls.vectors import _LINK_BLANKS, cosine, step_terms, text_vector, tokenize
from features.session.clusters import ActionClusters
from features.session.subgoals import SubgoalGraph


def test_tokenize_splits_identifiers() -> None:
    assert tokenize("parseISOWeek get_week-days src/dates.py") == [
        "parse",
        "iso",
        "week",
        "get",
        "week",
        "day",
        "src",
        "date",
        "py",
    ]


@pytest.mark.slow  # a fresh interpreter, another hash seed
def test_vectors_are_the_same_in_another_process() -> None:
    code = (
        "from features.calls.vectors import text_vector; "
        "print(sorted(text_vector('date parser').items()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(sorted(text_vector("date parser").items()))


def test_cosine_ranks_related_text_higher() -> None:
    goal = text_vector("fix the ISO week date parser")
    assert cosine(goal, text_vector("read parse week dates")) > cosine(
        goal, text_vector("castle tours")
    )


def test_step_terms_packages_are_not_hosts() -> None:
    call, _ = Session().tool(
        "bash", {"command": "pip install requests && curl https://example.org/a"}
    )
    terms = step_terms(call)
    assert terms.hosts == ("example.org",) and terms.package_hosts == ("pypi.org",)


def test_clusters_are_bounded() -> None:
    c = ActionClusters(threshold=0.9, max_clusters=5)
    ids = [c.learn_one(text_vector(f"topic{i} word{i}")) for i in range(50)]
    assert len(set(ids)) == 50 and len(c.centroids_) == 5
    assert len(pickle.dumps(c.state())) < 8_000


def test_subgoal_graph_is_capped_and_measures_progress() -> None:
    g = SubgoalGraph(max_nodes=4, window=4)
    for i in range(20):
        g.update(i, [f"f{i}.py"], seq=i)
    assert g.graph.number_of_nodes() == 4 and g.progress == 1.0
    for _ in range(4):
        g.update(19, ["f19.py"], seq=30)
    assert g.progress == 0.0


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(list("|,;()[]<>\"'`{}= /.")))
)
def test_link_tokens_are_the_regex_split_tokens(text: str) -> None:
    # result_links splits with str.translate + str.split (fast); the tokens must be
    # exactly the regex split's on any text, Unicode blanks included.
    expected = [t for t in re.split(r"[\s|,;()\[\]<>\"'`{}=]+", text) if t]
    assert text.translate(_LINK_BLANKS).split() == expected
