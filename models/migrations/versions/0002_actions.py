"""The actions' outbox: what the policy decided per delivery, its payload, endpoint state.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

Adds to ``deliveries`` the action (notify/kill/rollback), the mode (enforce/shadow), the
session, agent and alert time the per-session cooldown reads, the policy's decision and the
signed JSON body; and the ``webhook_endpoints`` table (an endpoint disabled by a 410).
Written out in full (see 0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(
            sa.Column("action", sa.String(length=16), server_default="notify", nullable=False)
        )
        batch.add_column(
            sa.Column("mode", sa.String(length=16), server_default="enforce", nullable=False)
        )
        batch.add_column(sa.Column("session_id", sa.String(length=512), nullable=True))
        batch.add_column(sa.Column("agent", sa.String(length=512), nullable=True))
        batch.add_column(sa.Column("alert_ts", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("decision", sa.Text(), nullable=True))
        batch.add_column(sa.Column("payload", sa.Text(), nullable=True))
    op.create_index(op.f("ix_deliveries_session_id"), "deliveries", ["session_id"])
    op.create_table(
        "webhook_endpoints",
        sa.Column("name", sa.String(length=512), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("updated", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_webhook_endpoints")),
    )


def downgrade() -> None:
    op.drop_table("webhook_endpoints")
    op.drop_index(op.f("ix_deliveries_session_id"), table_name="deliveries")
    with op.batch_alter_table("deliveries") as batch:
        for column in ("payload", "decision", "alert_ts", "agent", "session_id", "mode", "action"):
            batch.drop_column(column)
