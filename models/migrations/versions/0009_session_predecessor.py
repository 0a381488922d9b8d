"""The run a session continues: its predecessor.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07

Adds ``predecessor`` to ``sessions`` (``models.records.SessionInfo``; read from a step's
``detail`` by ``features.session.lineage.with_predecessor``): the session id of the run
a resumed or forked run continues as a new session. A session id, so as wide as one.
Sessions stored before it have none. Written out in full (see 0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("predecessor", sa.String(length=512), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("predecessor")
