"""Rules from the instructions: sentences → policy rules (features.policy.instructions), the
TOML shown to a person (`trajwatch policy --from-instructions`), and what must not
become a rule."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from features.policy.check import Policy
from features.policy.instructions import MAX_CHARS, derive, derived_policy_id, to_toml
from trajwatch.cli.main import EXIT_USER, main

TESTS = re.compile(derive("Run the tests before committing.").rules[0].value["requires"])


@pytest.mark.parametrize(
    ("sentence", "key", "value"),
    [
        ("Never modify anything under tests/.", "forbidden_write_paths", "tests/**"),
        ("Do not edit files in the tests/ directory.", "forbidden_write_paths", "tests/**"),
        ("You must not touch .env", "forbidden_write_paths", ".env"),
        ("Don't write to .github/workflows/", "forbidden_write_paths", ".github/workflows/**"),
        ("NEVER delete `migrations/`.", "forbidden_write_paths", "migrations/**"),
        ("Never run rm -rf.", "forbidden_commands", r"\brm\s+\-rf\b"),
        ("Do not run `git reset --hard`.", "forbidden_commands", r"\bgit\s+reset\s+\-\-hard\b"),
        ("You are not allowed to use sudo.", "forbidden_commands", r"\bsudo\b"),
        (
            "You must never run `terraform destroy`.",
            "forbidden_commands",
            r"\bterraform\s+destroy\b",
        ),
        (
            "Never force-push.",
            "forbidden_commands",
            r"git\s+push\s+(?:\S+\s+){0,16}?(?:-f|--force)",
        ),
        ("Never push to main.", "forbidden_commands", r"(?:git\s+push)\s+(?:\S+\s+){0,16}?main\b"),
        ("Ask for approval before any git push.", "require_approval_for", r"git\s+push"),
        (
            "Always ask the user for permission before deploying.",
            "require_approval_for",
            r"\bdeploy",
        ),
        ("Get explicit approval before pushing.", "require_approval_for", r"git\s+push"),
        ("Don't push without asking.", "require_approval_for", r"git\s+push"),
        ("Never deploy without the user's approval", "require_approval_for", r"\bdeploy"),
        ("Only fetch from pypi.org.", "allowed_egress_hosts", "pypi.org"),
        (
            "Only download packages from https://registry.npmjs.org/",
            "allowed_egress_hosts",
            "registry.npmjs.org",
        ),
        ("Network access is limited to github.com.", "allowed_egress_hosts", "github.com"),
        ("Never access pastebin.com.", "denied_egress_hosts", "pastebin.com"),
        (
            "Ask for approval before running `terraform apply`.",
            "require_approval_for",
            r"\bterraform\s+apply\b",
        ),
        ("Do not run commands like `rm -rf /`.", "forbidden_commands", r"\brm\s+\-rf\s+/"),
        ("Do not upload anything to transfer.sh", "denied_egress_hosts", "transfer.sh"),
    ],
)
def test_a_rule_sentence_becomes_its_rule_citing_the_sentence(
    sentence: str, key: str, value: str
) -> None:
    d = derive(sentence)
    assert [(r.key, r.value) for r in d.rules] == [(key, value)]
    assert d.rules[0].sentence == sentence
    assert d.unused == ()


@pytest.mark.parametrize(
    ("sentence", "action"),
    [
        ("Run the tests before committing.", "git commit -m x"),
        ("Always run the test suite before you commit.", "git commit -am y"),
        ("Do not commit without running the tests.", "git commit"),
        ("Make sure the tests pass before pushing.", "git push origin b"),
        ("Never commit unless the tests pass.", "git commit"),
    ],
)
def test_tests_before_an_action_is_require_before(sentence: str, action: str) -> None:
    (rule,) = derive(sentence).rules
    assert rule.key == "require_before"
    assert re.search(rule.value["action"], action)
    assert TESTS.search(rule.value["requires"]) is None or True  # the regex itself
    requires = re.compile(rule.value["requires"])
    assert requires.search("pytest -q") and requires.search("npm test")
    assert not requires.search("git status")


def test_the_linter_before_pushing_requires_the_linter() -> None:
    (rule,) = derive("Make sure the linter passes before pushing.").rules
    assert re.search(rule.value["requires"], "ruff check .")
    assert not re.search(rule.value["requires"], "pytest")


def test_one_sentence_of_clauses_gives_each_rule() -> None:
    # the fixtures' system prompt: clauses joined by commas after a colon
    text = (
        "You are codewright, an autonomous software engineering agent. Follow policy "
        "coding-strict-v1: never force-push, ask for approval before pushing or deploying, "
        "run the tests before committing, stay on the task."
    )
    mapping = derive(text).mapping("p")
    assert mapping["forbidden_commands"] == [r"git\s+push\s+(?:\S+\s+){0,16}?(?:-f|--force)"]
    assert mapping["require_approval_for"] == [r"git\s+push", r"\bdeploy"]
    assert mapping["require_before"][0]["action"] == r"git\s+commit"


@pytest.mark.parametrize(
    "sentence",
    [
        "tests/ contains the tests.",
        "You are a helpful coding assistant.",
        "The project uses pytest and ruff.",
        "Pushing is done by CI.",
        "Commit messages follow Conventional Commits.",
    ],
)
def test_a_sentence_stating_no_rule_is_no_rule_and_not_reported(sentence: str) -> None:
    d = derive(sentence)
    assert d.rules == () and d.unused == () and d.descriptive == 1


@pytest.mark.parametrize(
    ("sentence", "why"),
    [
        ("Should I push to main?", "a question"),
        ("Can you run the tests before committing?", "a question"),
        ("If the build fails, never push.", "a condition"),
        ("When tests fail, do not commit.", "a condition"),
        ("Never give up.", "not understood"),
        ("Never run destructive commands.", "not understood"),
        ("Don't be verbose.", "not understood"),
        ("Never push yourself too hard.", "not understood"),
        # a backticked name later in the clause is no command (Codex's skills AGENTS.md)
        ("Avoid deeply nested references; prefer files linked from `SKILL.md`.", "not understood"),
    ],
)
def test_what_cannot_be_used_is_reported_with_the_reason(sentence: str, why: str) -> None:
    d = derive(sentence)
    assert d.rules == ()
    assert [s for s, _ in d.unused] == [sentence]
    assert why in d.unused[0][1]


def test_the_toml_loads_as_the_policy_it_shows_and_cites_each_sentence() -> None:
    text = (
        "# Rules\n"
        "- Never modify anything under tests/.\n"
        "- Ask for approval before any git push.\n"
        "- Never run rm -rf.\n"
        "- Run the tests before committing.\n"
        "- Only fetch from pypi.org and files.pythonhosted.org.\n"
        "- tests/ contains the tests.\n"
        "- If CI is red, do not merge.\n"
        "```\nnever run this example\n```\n"
    )
    d = derive(text)
    toml = to_toml(d, "mine")
    parsed = tomllib.loads(toml)
    assert parsed == d.mapping("mine")
    assert parsed["allowed_egress_hosts"] == ["pypi.org", "files.pythonhosted.org"]
    policy = Policy.from_mapping("mine", parsed)
    assert policy.forbidden_write_paths == ("tests/**",)
    for sentence in ("Never modify anything under tests/.", "Run the tests before committing."):
        assert f'# "{sentence}"' in toml
    assert '# - "If CI is red, do not merge." (a condition' in toml
    assert "example" not in toml  # a code fence is not instructions
    assert d.descriptive == 1


def test_derivation_is_bounded_and_the_id_stable() -> None:
    long = "Never run rm -rf. " + "Filler sentence here. " * 2_000 + "Never use sudo."
    d = derive(long)
    assert d.truncated and len(d.rules) == 1  # the sentence past MAX_CHARS is not read
    assert len(long) > MAX_CHARS
    assert derived_policy_id("a") == derived_policy_id("a") != derived_policy_id("b")


def test_cli_prints_the_derived_toml_and_what_it_could_not_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text(
        "Never modify anything under tests/.\nAsk for approval before any git push.\n"
        "Should I refactor?\n",
        encoding="utf-8",
    )
    assert main(["policy", "--from-instructions", str(agents)]) == 0
    out = capsys.readouterr().out
    parsed = tomllib.loads(out)
    assert parsed["policy_id"] == "derived-agents"
    assert parsed["forbidden_write_paths"] == ["tests/**"]
    assert parsed["require_approval_for"] == [r"git\s+push"]
    assert parsed["require_approval_answer"] is False  # the sentence says to ask
    assert '"Should I refactor?" (a question, not a rule)' in out
    assert main(["policy", "--from-instructions", str(agents), "--id", "team-rules"]) == 0
    assert tomllib.loads(capsys.readouterr().out)["policy_id"] == "team-rules"


def test_cli_names_an_unreadable_instructions_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "CLAUDE.md"
    bad.write_bytes(b"\xff\xfe never")
    assert main(["policy", "--from-instructions", str(bad)]) == EXIT_USER
    assert "not UTF-8" in capsys.readouterr().err
    assert main(["policy", "--from-instructions", str(tmp_path / "none.md")]) == EXIT_USER


RULES = (
    "Run the tests before committing. Make sure the build passes before deploying. "
    "Never force-push. Never push to main. Ask for approval before any git push. "
    "Never run rm -rf."
)
"""Instructions whose rules derive every pattern with a repeated part (a test command and
its ``test``, ``git push`` and its flag or branch)."""


def _hostile(n: int) -> list[str]:
    """Texts of ``n`` characters that made a backtracking pattern quadratic: one long word,
    a prefix of a rule repeated, the prefix glued to itself."""
    return [
        "x" * n,
        "mvn " * (n // 4),
        "mvnmvn" * (n // 6),
        "gradle " * (n // 7),
        "./gradlew " * (n // 10),
        "git push " * (n // 9),
        "mvn " + "y" * n,
    ]


def _cpu(patterns: list[re.Pattern[str]], texts: list[str]) -> float:
    import time

    started = time.process_time()
    for pattern in patterns:
        for text in texts:
            pattern.search(text)
    return time.process_time() - started


def test_derived_patterns_are_linear_in_a_call_s_text() -> None:
    """The derived patterns are searched in up to 64 KiB of every tool call: a 64 KB word
    cost 3 s against ``\\S*gradlew?\\s+(?:\\S+\\s+)*?test`` (found by the fuzzer in a session
    whose instructions asked for the tests before a commit). 16 times the text must cost
    at most ~40 times as much, and well under a second."""
    from features.text.clip import MAX_ANALYSED_CHARS

    policy = Policy.from_mapping("p", derive(RULES).mapping("p"))
    patterns = [
        *policy.forbidden_commands,
        *(p for rule in policy.require_before for p in (rule.requires, rule.action)),
        *policy.require_approval_for,
    ]
    assert len(patterns) >= 7 and policy._text_screen is not None
    patterns.append(policy._text_screen)
    # the least of five runs: the one least disturbed by the machine's other work (two
    # runs read 0.32-0.55 s for the same patterns on one idle machine)
    small = min(_cpu(patterns, _hostile(MAX_ANALYSED_CHARS // 16)) for _ in range(5))
    big = min(_cpu(patterns, _hostile(MAX_ANALYSED_CHARS)) for _ in range(5))
    assert big < 0.5, f"{big:.2f} s for 64 KiB"
    assert big <= 40 * max(small, 0.002), f"64 KiB {big:.3f} s vs 4 KiB {small:.3f} s"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("./gradlew --offline test", True),
        ("mvn -q -B -Dskip=false test", True),
        ("mvnw clean verify test", True),
        ("cd app && ../gradlew build test", True),
        ("mvn " + "x " * 20 + "test", False),  # the program and its test 16 words apart at most
    ],
)
def test_test_commands_are_still_recognised(text: str, found: bool) -> None:
    (rule,) = derive("Run the tests before committing.").rules
    assert bool(re.search(rule.value["requires"], text)) is found
