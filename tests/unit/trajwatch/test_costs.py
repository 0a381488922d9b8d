"""Costs end to end (issue 25, item 14: every session cost $0.0000): the config's
``[prices]``, model-call spans priced or keeping their reported cost through the pipeline,
and ``trajwatch sessions`` of a spans-only recording."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from detectors.registry import DetectorSet
from features.prices.table import Prices, Rate
from ingest.pipeline.engine import Pipeline
from models.errors import ConfigError
from models.records import StepKind
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.cli.main import main
from trajwatch.config import detector_set, load_config, prices
from trajwatch.settings import Settings

BUNDLED = Prices.bundled()
T0 = 1_767_000_000 * 10**9


def test_the_config_adds_and_overrides_prices(tmp_path: Path) -> None:
    path = tmp_path / "trajwatch.toml"
    path.write_text(
        '[prices]\n"my-finetune" = { input = 1, output = 2 }\n"gpt-4o" = '
        "{ input = 5.0, output = 20.0 }\n"
    )
    table = prices(load_config(path))
    assert table.rate("my-finetune-v3") == Rate(1, 2)
    assert table.rate("gpt-4o-2024-08-06") == Rate(5.0, 20.0)
    assert table.rate("gpt-4.1") == BUNDLED.rate("gpt-4.1")  # the rest as bundled
    assert detector_set(load_config(path)).prices.rate("my-finetune") == Rate(1, 2)
    for bad in ('"m" = 3\n', '"m" = { input = 1 }\n', '"m" = { input = -1, output = 2 }\n'):
        path.write_text(f"[prices]\n{bad}")
        with pytest.raises(ConfigError, match=r"\[prices\]: 'm'"):
            prices(load_config(path))


def _otlp(spans: list[dict[str, Any]]) -> dict[str, Any]:
    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, float):
            return {"doubleValue": v}
        return {"stringValue": v}

    return {
        "resourceSpans": [
            {
                "resource": {"attributes": []},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                **{k: v for k, v in s.items() if k != "attributes"},
                                "attributes": [
                                    {"key": k, "value": value(v)}
                                    for k, v in s["attributes"].items()
                                ],
                            }
                            for s in spans
                        ]
                    }
                ],
            }
        ]
    }


def _chat(span_id: str, start: int, model: str, response: str, **extra: Any) -> dict[str, Any]:
    return {
        "traceId": "ab" * 16,
        "spanId": span_id,
        "parentSpanId": "01" * 8,
        "name": f"chat {model}",
        "kind": 3,
        "startTimeUnixNano": str(T0 + start * 10**9),
        "endTimeUnixNano": str(T0 + (start + 1) * 10**9),
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.conversation.id": "conv-cost",
            "gen_ai.request.model": model,
            "gen_ai.response.id": response,
            "gen_ai.usage.input_tokens": 10_000,
            "gen_ai.usage.output_tokens": 500,
            **extra,
        },
    }


def test_spans_are_priced_a_reported_cost_wins_and_a_logged_cost_too(store: Store) -> None:
    """Through the pipeline: a span with no cost is priced at list price, a span that
    carries its cost keeps it, and a session log's ``cost_usd`` for the same call wins
    over the list price whichever source arrives first."""
    pipeline = Pipeline(store, settings=Settings(), detectors=DetectorSet([]))
    logged = {
        "type": "model_call",
        "session_id": "conv-cost",
        "seq": 3,
        "ts": (T0 + 30 * 10**9) / 10**9,
        "model": "gpt-4o",
        "response_id": "resp-3",
        "tokens_in": 10_000,
        "tokens_out": 500,
        "cost_usd": 0.75,
    }
    document = _otlp(
        [
            _chat("02" * 8, 10, "claude-sonnet-4-5-20250929", "resp-1"),
            _chat("03" * 8, 20, "gpt-4o", "resp-2", **{"llm.cost.total": 0.0123}),
            _chat("04" * 8, 30, "gpt-4o", "resp-3"),  # before its log line
        ]
    )
    pipeline.feed_otlp_json(document, source="t", location="spans", partition="p")
    pipeline.feed_event(json.dumps(logged).encode(), source="t", location="l", partition="p")
    pipeline.close()
    costs = {s.model: s.cost for s in store.steps("conv-cost") if s.kind == StepKind.MODEL_CALL}
    by_response = sorted(
        (s.ts, s.cost) for s in store.steps("conv-cost") if s.kind == StepKind.MODEL_CALL
    )
    assert costs["claude-sonnet-4-5-20250929"] == 0.0375
    assert [cost for _, cost in by_response] == [0.0375, 0.0123, 0.75]
    (activity,) = store.session_activity(["conv-cost"])
    assert activity.cost == pytest.approx(0.0375 + 0.0123 + 0.75)


def test_sessions_of_a_spans_only_recording_cost_their_tokens_at_list_price(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bundled OTLP recording of a generated run: no span carries a cost, and its
    session cost $0 before; now its tokens at the list price of its model."""
    recording = ROOT / "fixtures" / "recorded" / "run-007-55e226.otlp.binpb"
    assert main(["replay", str(recording), "--db", db_url, "--json"]) == 0
    capsys.readouterr()
    assert main(["sessions", "--db", db_url, "--json"]) == 0
    (session,) = json.loads(capsys.readouterr().out)["sessions"]
    with Store.open(db_url) as store:
        calls = [s for s in store.steps(session["session_id"]) if s.kind == StepKind.MODEL_CALL]
    expected = sum(
        BUNDLED.rate(s.model).cost(s.tokens_in or 0, s.tokens_out or 0)  # type: ignore[union-attr]
        for s in calls
    )
    assert session["cost"] > 0
    assert session["cost"] == pytest.approx(expected, abs=1e-5)
