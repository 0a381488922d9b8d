"""What sessions wrote in each workspace, for the cross-session workspace check.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-08

Adds ``workspace_writes`` (one row per step and place written: a file path, the branch,
the whole tree; ``models.tables.WorkspaceWriteRow``), indexed by workspace key and event
time, and ``workspaces`` (one row per workspace key: the row a commit locks before it
judges that workspace, so PostgreSQL workers judging one workspace take turns). Sessions
stored before it have no rows: their writes are not compared. Written out in full (see
0001).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workspace_writes",
        sa.Column("step_id", sa.String(length=1024), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("op", sa.String(length=128), nullable=False),
        sa.Column("workspace_key", sa.String(length=1024), nullable=False),
        sa.Column("session_id", sa.String(length=512), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.Column("source_ref", sa.Text(), nullable=False),
        sa.Column("target", sa.String(length=128), nullable=True),
        sa.PrimaryKeyConstraint("step_id", "path", "op", name=op.f("pk_workspace_writes")),
    )
    op.create_index(
        op.f("ix_workspace_writes_workspace_key_ts"),
        "workspace_writes",
        ["workspace_key", "ts"],
        unique=False,
    )
    op.create_table(
        "workspaces",
        sa.Column("workspace_key", sa.String(length=1024), nullable=False),
        sa.Column("writes", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("workspace_key", name=op.f("pk_workspaces")),
    )


def downgrade() -> None:
    op.drop_table("workspaces")
    op.drop_index(op.f("ix_workspace_writes_workspace_key_ts"), table_name="workspace_writes")
    op.drop_table("workspace_writes")
