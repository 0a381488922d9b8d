"""The dead letters the pipeline itself writes: a decoder that failed, a record no column
can hold, a detector that raised. Each keeps the input or the record whole, with the
reason, so the case can be reproduced; none of them stops the loop."""

from __future__ import annotations

from typing import Any

from detectors.base import Detector
from models.errors import DecodeError
from models.records import Alert, DeadLetter, SessionInfo, Step
from models.storable import json_payload, payload_of


def decoder_failed(data: Any, source: str, location: str, error: Exception) -> DeadLetter:
    """``data`` (the whole input a decoder was given) kept with the decoder's error."""
    reason = error.reason if isinstance(error, DecodeError) else f"{type(error).__name__}: {error}"
    if isinstance(data, bytes):
        payload = data
    elif isinstance(data, str):
        payload = data.encode("utf-8", "surrogatepass")
    else:
        payload = json_payload(data)
    return DeadLetter(
        source=source,
        location=location,
        reason=f"the decoder failed: {reason}",
        payload=payload,
        content_type="application/octet-stream" if isinstance(data, bytes) else "application/json",
    )


def unstorable(record: Step | Alert | SessionInfo, reason: str) -> DeadLetter:
    """``record``, which no column can hold for ``reason`` (see :mod:`models.storable`)."""
    kind = type(record).__name__.lower()
    return DeadLetter(
        source=getattr(record, "source", "pipeline"),
        location=getattr(record, "source_ref", "") or record.session_id,
        reason=f"unstorable {kind}: {reason}",
        payload=payload_of(record),
        content_type="application/json",
    )


def detector_failed(step: Step, detector: Detector, error: Exception) -> DeadLetter:
    """``step``, on which ``detector`` raised ``error`` (the step is stored all the same)."""
    return DeadLetter(
        source=step.source,
        location=step.source_ref or step.step_id,
        reason=f"detector {detector.name} failed: {type(error).__name__}: {error}",
        payload=payload_of(step),
        content_type="application/json",
    )
