"""The gate decoded input passes before it is ordered: a decoder's failure costs the one
input it was given (:func:`guarded_decode`), and every draft is made storable before any
stage reads its ``ts`` or a detector sees it (:func:`make_storable`)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ingest.decoded import Decoded, Draft
from ingest.pipeline.letters import decoder_failed
from models.storable import Unstorable, clean_id, plain_text, storable_step


def guarded_decode(
    decode: Callable[..., Decoded], data: Any, *, source: str, location: str, **options: Any
) -> Decoded:
    """``decode(data, …)``, with an exception out of the decoder (a bug: decoders reject
    bad records themselves) turned into one reject of the whole input, so it costs that
    input, kept whole with the reason, and never the loop."""
    try:
        return decode(data, source=source, location=location, **options)
    except Exception as error:
        return Decoded(spans=[], rejects=[decoder_failed(data, source, location, error)])


def make_storable(draft: Draft) -> None:
    """Repair the draft's text and check its values (:func:`models.storable.storable_step`)
    before it is ordered by its ``ts`` or seen by a detector; raises ``Unstorable``."""
    draft.step = storable_step(draft.step)
    for name, value in zip(_DRAFT_TEXT, _draft_texts(draft), strict=True):
        if value is None or plain_text(value):
            continue  # the common case: what clean_id returns as it is
        if not isinstance(value, str):
            raise Unstorable(f"{name}: a {type(value).__name__} where text belongs")
        setattr(draft, name, clean_id(value))


_DRAFT_TEXT = (  # ids all: repaired as ids are (models.storable.clean_id)
    "fallback_id",
    "natural_key",
    "session_hint",
    "trace_id",
    "span_id",
    "parent_span_id",
    "context",
)
_draft_texts = operator.attrgetter(*_DRAFT_TEXT)
