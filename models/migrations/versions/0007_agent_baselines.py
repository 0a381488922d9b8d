"""The per-agent behaviour baseline's state (``agent_baseline``).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07

Adds ``agent_baselines`` (one row per agent name: the history of its sessions' behaviour
the ``agent_baseline`` detector learns from, a versioned pickle;
``models.tables.AgentBaselineRow``). Written out in full (see 0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agent_baselines",
        sa.Column("agent", sa.String(length=512), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("sessions", sa.Integer(), nullable=False),
        sa.Column("state", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("agent", name=op.f("pk_agent_baselines")),
    )


def downgrade() -> None:
    op.drop_table("agent_baselines")
