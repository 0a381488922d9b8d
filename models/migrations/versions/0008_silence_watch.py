"""The sessions a Kafka worker watches for silence.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07

Adds ``silence_watch`` (one row per repartition partition and session whose next silence
step is due: ``models.tables.SilenceWatchRow``), keyed by (lane, session): a worker that
takes a lane over reads its rows. Written out in full (see 0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "silence_watch",
        sa.Column("lane", sa.String(length=512), nullable=False),
        sa.Column("session_id", sa.String(length=512), nullable=False),
        sa.Column("clock", sa.String(length=512), nullable=False),
        sa.Column("due", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("lane", "session_id", name=op.f("pk_silence_watch")),
    )


def downgrade() -> None:
    op.drop_table("silence_watch")
