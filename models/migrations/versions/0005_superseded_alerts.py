"""Alerts a session's judgement in event-time order no longer raises.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-06

Adds ``alerts.superseded``: NULL for an alert that stands, else why it no longer does (its
session was judged again in event-time order after a late step and did not raise it; see
``ingest.pipeline.rejudge``). Alerts stored before it stand. Written out in full (see 0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("alerts", sa.Column("superseded", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("alerts") as batch:
        batch.drop_column("superseded")
