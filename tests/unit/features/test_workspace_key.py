"""The workspace key (features/session/workspace.py): spellings of one workspace give one
key, different workspaces different keys, too little gives none; and the session facts a
start step teaches."""

from __future__ import annotations

import pickle

import pytest

from features.session.workspace import remote_name, with_workspace, workspace_key
from models.records import SessionInfo

SAME_REPOSITORY = [
    "https://github.com/acme/dates",
    "https://github.com/acme/dates/",
    "https://github.com/Acme/Dates.git",
    "https://x-access-token:ghs_abc123@github.com/acme/dates.git",
    "http://GitHub.com:443/acme/dates",
    "git@github.com:acme/dates.git",
    "git@github.com:/acme/dates.git/",
    "ssh://git@github.com/acme/dates.git",
    "ssh://git@github.com:22/acme/dates",
    "git://github.com/acme/dates.git",
]


@pytest.mark.parametrize("url", SAME_REPOSITORY)
def test_every_spelling_of_one_remote_is_one_key(url: str) -> None:
    assert workspace_key(repository=url, branch="main") == "git:github.com/acme/dates#main"


@pytest.mark.parametrize(
    "other",
    [
        "https://github.com/acme/dates-v2",  # another repository
        "https://github.com/acme-forks/dates",  # a fork
        "https://gitlab.com/acme/dates",  # another forge
        "acme/dates",  # no host: not claimed to be the github one
    ],
)
def test_other_repositories_are_other_keys(other: str) -> None:
    ours = workspace_key(repository=SAME_REPOSITORY[0], branch="main")
    assert workspace_key(repository=other, branch="main") != ours


def test_nested_groups_and_local_remotes_keep_their_whole_path() -> None:
    assert remote_name("https://gitlab.com/org/team/app.git") == "gitlab.com/org/team/app"
    assert remote_name("git@gitlab.com:org/team/app.git") == "gitlab.com/org/team/app"
    assert remote_name("/srv/git/app.git") == remote_name("file:///srv/git/app") == "/srv/git/app"
    assert remote_name("C:\\repos\\App.git") == "c:/repos/app"
    assert remote_name("") is None and remote_name("https://github.com/") is None


def test_branches_differ_by_name_and_case_and_a_detached_head_is_no_branch() -> None:
    url = SAME_REPOSITORY[0]
    main = workspace_key(repository=url, branch="main")
    assert workspace_key(repository=url, branch="refs/heads/main") == main
    assert workspace_key(repository=url, branch="feature/x") != main
    assert workspace_key(repository=url, branch="Main") != main  # git branches are case-sensitive
    # detached: the branch says nothing, the directory decides
    detached = workspace_key(repository=url, branch="HEAD", host="ci-7", directory="/w/dates")
    assert detached == "dir:ci-7:/w/dates"


def test_without_repository_and_branch_the_host_and_directory_decide() -> None:
    key = workspace_key(host="Build-7.example.com.", directory="/home/me/dates/")
    assert key == "dir:build-7.example.com:/home/me/dates"
    for spelling in ("/home/me/dates", "/home/me//dates/", "/home/me/./src/../dates"):
        assert workspace_key(host="build-7.example.com", directory=spelling) == key
    assert workspace_key(host="build-8.example.com", directory="/home/me/dates") != key
    assert workspace_key(host="build-7.example.com", directory="/home/me/dates2") != key
    # a repository without a branch does not override the directory
    assert workspace_key(host="build-7.example.com", directory="/home/me/dates",
                         repository="acme/dates") == key  # fmt: skip


def test_a_host_less_directory_is_a_key_of_its_own_kind_and_too_little_is_none() -> None:
    assert workspace_key(directory="/workspace") == "dir::/workspace"
    assert workspace_key(directory="/workspace") != workspace_key(host="c1", directory="/workspace")
    assert workspace_key() is None
    assert workspace_key(host="ci-7") is None
    assert workspace_key(repository="https://github.com/acme/dates") is None
    assert workspace_key(host="ci-7", directory="relative/path") is None
    assert workspace_key(host="ci-7", directory="  ") is None


def test_windows_directories_ignore_case_and_separators() -> None:
    a = workspace_key(host="PC", directory="C:\\Users\\Me\\App\\")
    assert a == workspace_key(host="pc", directory="c:/users/me/app") == "dir:pc:c:/users/me/app"


def test_a_start_fills_the_unknown_workspace_fields_and_the_commit_is_the_revision() -> None:
    info = SessionInfo(session_id="s", goal="g", workspace="/w/a", branch="main")
    detail = {
        "workspace": "/w/b",
        "repository": " https://github.com/acme/a ",
        "branch": "other",
        "commit": "9d59409",
        "host": "",
    }
    assert with_workspace(info, detail) == SessionInfo(
        session_id="s",
        goal="g",
        workspace="/w/a",  # the first start's
        repository="https://github.com/acme/a",
        branch="main",
        revision="9d59409",
        host=None,  # empty text is no host
    )
    bare = SessionInfo(session_id="s")
    assert with_workspace(bare, {"host": 7, "workspace": None, "commit": ["x"]}) is bare


# SessionInfo(session_id="s-old", goal="fix it", agent="coder", workspace="/w/app",
# repository="acme/app", policy_id="p", budget={"usd": 2.0}, started_ts=5, ended_ts=9,
# end_status="success", claimed_done=True), pickled by the code before branch, revision
# and host were added (main at 2ac0311): what a session's stored state holds.
OLD_INFO_PICKLE = bytes.fromhex(
    "8005957c000000000000008c0e6d6f64656c732e7265636f726473948c0b53657373696f6e496e666f94"
    "93942981945d94288c05732d6f6c64948c06666978206974948c05636f646572948c062f772f617070948c"
    "0861636d652f617070948c0170947d948c0375736494474000000000000000734b054b098c077375636365"
    "7373948865622e"
)


def test_session_info_pickled_before_the_workspace_fields_loads_with_them_unset() -> None:
    info = pickle.loads(OLD_INFO_PICKLE)
    assert info == SessionInfo(
        session_id="s-old",
        goal="fix it",
        agent="coder",
        workspace="/w/app",
        repository="acme/app",
        policy_id="p",
        budget={"usd": 2.0},
        started_ts=5,
        ended_ts=9,
        end_status="success",
        claimed_done=True,
    )
    assert (info.branch, info.revision, info.host) == (None, None, None)
    now = SessionInfo(session_id="s", branch="main", revision="9d5", host="ci-7", budget={"a": 1})
    assert pickle.loads(pickle.dumps(now)) == now
