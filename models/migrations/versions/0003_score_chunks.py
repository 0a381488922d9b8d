"""The detectors' per-step scores, stored with each analysis checkpoint.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02

Adds ``score_chunks``: one row per session per checkpoint holding every detector's score
after each step since the previous checkpoint (see ``models.tables.ScoreChunkRow``), so
the explorer reads the scores instead of replaying the steps. Sessions stored before it
have no rows; the explorer replays those. Written out in full (see 0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "score_chunks",
        sa.Column("session_id", sa.String(length=512), nullable=False),
        sa.Column("start_seq", sa.Integer(), nullable=False),
        sa.Column("end_seq", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
            name=op.f("fk_score_chunks_session_id_sessions"),
        ),
        sa.PrimaryKeyConstraint("session_id", "start_seq", name=op.f("pk_score_chunks")),
    )


def downgrade() -> None:
    op.drop_table("score_chunks")
