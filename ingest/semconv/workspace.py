"""Where an agent span's run works, and the run it continues, read from the attributes
that say it.

An agent (``invoke_agent``) span's ``start`` step carries, in its ``detail``, the keys
every other input writes too (:mod:`features.session.workspace`):

=============  ===========================================================================
detail key     attributes, first set wins (on the span, else on its resource)
=============  ===========================================================================
``host``       ``host.name``
``workspace``  ``process.working_directory``; ``process.cwd`` (non-standard, in use)
``repository`` ``vcs.repository.url.full``
``branch``     ``vcs.ref.head.name``; ``vcs.repository.ref.name`` (deprecated name)
``commit``     ``vcs.ref.head.revision``; ``vcs.repository.ref.revision`` (deprecated name)
=============  ===========================================================================

The names are the OpenTelemetry semantic conventions' (all "development" status):
``host.name`` from the host resource, ``process.working_directory`` from the process
registry (``ATTR_PROCESS_WORKING_DIRECTORY`` of ``@opentelemetry/semantic-conventions``;
not ``process.cwd``, which no convention defines), and the VCS registry, which renamed
``vcs.repository.ref.*`` to ``vcs.ref.head.*``. A span's own attribute wins over its
resource's, key by key: a process running several agents in different checkouts says
so on each agent span, one running one says it once on its resource. Values are kept as
sent (the pipeline's redaction gate handles credentials in a repository URL; the
workspace key ignores them).

The run it continues (:mod:`features.session.lineage`): ``predecessor`` from
``trajwatch.predecessor.session_id`` (:data:`PREDECESSOR_ATTRIBUTE`), on the span, else on
its resource: the ``data.session_id`` of the ``trajwatch.resume`` webhook that started the
run, echoed by the orchestrator that resumed it in a new trace. Else the agent span's first
link to a span of another trace (OpenTelemetry's way to say a new trace continues an older
one): the session its attributes name (``gen_ai.conversation.id``, ``session.id`` or
:data:`PREDECESSOR_ATTRIBUTE`), else its trace id under :data:`PREDECESSOR_TRACE`, which
the ordering stage turns into that trace's session when it knows the trace
(:func:`ingest.pipeline.resolution.resolve`). OpenTelemetry's
``session.previous_id`` is not read: it names a user's previous session, which need not be
a run this one continues, and a payment repeated a month later is no replay.
"""

from __future__ import annotations

from collections.abc import Mapping

from features.session.lineage import PREDECESSOR
from ingest.decoded import SpanRecord
from ingest.semconv.attributes import first_str

__all__ = ["PREDECESSOR_ATTRIBUTE", "PREDECESSOR_TRACE", "WORKSPACE_ATTRIBUTES", "workspace_detail"]

WORKSPACE_ATTRIBUTES: Mapping[str, tuple[str, ...]] = {
    "host": ("host.name",),
    "workspace": ("process.working_directory", "process.cwd"),
    "repository": ("vcs.repository.url.full",),
    "branch": ("vcs.ref.head.name", "vcs.repository.ref.name"),
    "commit": ("vcs.ref.head.revision", "vcs.repository.ref.revision"),
}
"""Start ``detail`` key → the attributes read for it, current name first."""

PREDECESSOR_ATTRIBUTE = "trajwatch.predecessor.session_id"
"""The attribute naming the session a run continues (start ``detail`` key ``predecessor``)."""
PREDECESSOR_TRACE = "predecessor_trace"
"""The start ``detail`` key of the trace an agent span links to, when the link names no
session: resolved to the trace's session by the ordering stage."""
_LINK_SESSION = ("gen_ai.conversation.id", "session.id", PREDECESSOR_ATTRIBUTE)


def workspace_detail(span: SpanRecord) -> dict[str, str]:
    """The workspace facts ``span`` (or, key by key, its resource) names, and the run it
    continues, as start ``detail`` entries; empty when it names none.

    >>> span = SpanRecord(trace_id="t", span_id="a", parent_span_id=None, name="invoke_agent",
    ...     kind=1, start_ns=0, end_ns=1, attributes={"process.working_directory": "/w/b"},
    ...     resource={"host.name": "ci-7", "process.working_directory": "/w/a",
    ...               "vcs.repository.ref.revision": "9d59409"})
    >>> workspace_detail(span)
    {'host': 'ci-7', 'workspace': '/w/b', 'commit': '9d59409'}
    """
    facts: dict[str, str] = {}
    for key, names in WORKSPACE_ATTRIBUTES.items():
        value = first_str(span.attributes, names) or first_str(span.resource, names)
        if value is not None and value.strip():
            facts[key] = value.strip()
    names = (PREDECESSOR_ATTRIBUTE,)
    predecessor = first_str(span.attributes, names) or first_str(span.resource, names)
    if predecessor is not None and predecessor.strip():
        facts[PREDECESSOR] = predecessor.strip()
        return facts
    link = next((k for k in span.links if k.trace_id != span.trace_id), None)
    if link is not None:
        named = first_str(link.attributes, _LINK_SESSION)
        if named is not None and named.strip():
            facts[PREDECESSOR] = named.strip()
        else:
            facts[PREDECESSOR_TRACE] = link.trace_id
    return facts
