"""Where a session works: its branch, the revision checked out and the host.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-07

Adds ``branch``, ``revision`` and ``host`` to ``sessions`` beside ``workspace`` and
``repository`` (``models.records.SessionInfo``; read from a start step's ``detail`` by
``features.session.workspace.with_workspace``). Text, like ``workspace``: a value too long
for a bounded column would refuse the whole session row. Sessions stored before it have
none. Written out in full (see 0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = ("branch", "revision", "host")


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        for column in _COLUMNS:
            batch.add_column(sa.Column(column, sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        for column in reversed(_COLUMNS):
            batch.drop_column(column)
