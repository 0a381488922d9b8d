"""Initial schema: sessions, steps, alerts, the webhook outbox, dead letters, input offsets.

Revision ID: 0001
Revises:
Create Date: 2026-11-29

Written out in full rather than imported from ``models.tables``: a migration is a
snapshot, and must keep creating *this* schema after the tables move on.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("session_id", sa.String(length=512), nullable=False),
        sa.Column("goal", sa.Text(), nullable=True),
        sa.Column("agent", sa.String(length=512), nullable=True),
        sa.Column("workspace", sa.Text(), nullable=True),
        sa.Column("repository", sa.Text(), nullable=True),
        sa.Column("policy_id", sa.String(length=512), nullable=True),
        sa.Column("budget", sa.JSON(), nullable=False),
        sa.Column("started_ts", sa.BigInteger(), nullable=True),
        sa.Column("ended_ts", sa.BigInteger(), nullable=True),
        sa.Column("end_status", sa.String(length=128), nullable=True),
        sa.Column("claimed_done", sa.Boolean(), nullable=True),
        sa.Column("next_seq", sa.Integer(), server_default="0", nullable=False),
        sa.Column("model_session", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_ts", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("state", sa.LargeBinary(), nullable=True),
        sa.Column("updated_seq", sa.Integer(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_sessions")),
    )
    op.create_index(op.f("ix_sessions_started_ts"), "sessions", ["started_ts"])

    op.create_table(
        "steps",
        sa.Column("step_id", sa.String(length=1024), nullable=False),
        sa.Column("session_id", sa.String(length=512), nullable=False),
        sa.Column("kind", sa.String(length=128), nullable=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("end_ts", sa.BigInteger(), nullable=True),
        sa.Column("agent", sa.String(length=512), nullable=True),
        sa.Column("tool", sa.String(length=512), nullable=True),
        sa.Column("action", sa.Text(), nullable=True),
        sa.Column("call_id", sa.String(length=512), nullable=True),
        sa.Column("arguments", sa.Text(), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=128), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("model", sa.String(length=512), nullable=True),
        sa.Column("finish_reason", sa.String(length=128), nullable=True),
        sa.Column("tokens_in", sa.Integer(), nullable=True),
        sa.Column("tokens_out", sa.Integer(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("model_session", sa.Integer(), nullable=False),
        sa.Column("egress_host", sa.String(length=512), nullable=True),
        sa.Column("egress_url", sa.Text(), nullable=True),
        sa.Column("egress_method", sa.String(length=16), nullable=True),
        sa.Column("http_status", sa.Integer(), nullable=True),
        sa.Column("idempotency_key", sa.String(length=512), nullable=True),
        sa.Column("parent_step_id", sa.String(length=1024), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("source_ref", sa.Text(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.session_id"], name=op.f("fk_steps_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("step_id", name=op.f("pk_steps")),
        sa.UniqueConstraint("session_id", "seq", name=op.f("uq_steps_session_id_seq")),
    )

    op.create_table(
        "alerts",
        sa.Column("alert_id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=512), nullable=False),
        sa.Column("detector", sa.String(length=128), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("onset_seq", sa.Integer(), nullable=False),
        sa.Column("onset_step_id", sa.String(length=1024), nullable=False),
        sa.Column("raised_seq", sa.Integer(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("checkpoint_id", sa.String(length=512), nullable=True),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("alert_id", name=op.f("pk_alerts")),
    )
    op.create_index(
        op.f("ix_alerts_session_id_onset_seq_detector"),
        "alerts",
        ["session_id", "onset_seq", "detector"],
    )

    op.create_table(
        "deliveries",
        sa.Column("delivery_id", sa.Text(), nullable=False),
        sa.Column("alert_id", sa.String(length=64), nullable=False),
        sa.Column("endpoint", sa.String(length=512), nullable=False),
        sa.Column("status", sa.String(length=16), server_default="pending", nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_attempt_at", sa.BigInteger(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("created", sa.BigInteger(), nullable=False),
        sa.Column("updated", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["alert_id"], ["alerts.alert_id"], name=op.f("fk_deliveries_alert_id_alerts")
        ),
        sa.PrimaryKeyConstraint("delivery_id", name=op.f("pk_deliveries")),
        sa.UniqueConstraint("alert_id", "endpoint", name=op.f("uq_deliveries_alert_id_endpoint")),
    )
    op.create_index(
        op.f("ix_deliveries_status_next_attempt_at"), "deliveries", ["status", "next_attempt_at"]
    )

    op.create_table(
        "dead_letters",
        # INTEGER PRIMARY KEY: SQLite's rowid (auto-assigned), SERIAL on PostgreSQL.
        sa.Column("received_seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("dead_letter_id", sa.String(length=64), nullable=False),
        sa.Column("source", sa.String(length=512), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("content_type", sa.String(length=128), nullable=False),
        sa.Column("received_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("received_seq", name=op.f("pk_dead_letters")),
        sa.UniqueConstraint("dead_letter_id", name=op.f("uq_dead_letters_dead_letter_id")),
    )

    op.create_table(
        "input_offsets",
        sa.Column("source", sa.String(length=512), nullable=False),
        sa.Column("partition", sa.String(length=128), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("source", "partition", name=op.f("pk_input_offsets")),
    )


def downgrade() -> None:
    op.drop_table("input_offsets")
    op.drop_table("dead_letters")
    op.drop_index(op.f("ix_deliveries_status_next_attempt_at"), table_name="deliveries")
    op.drop_table("deliveries")
    op.drop_index(op.f("ix_alerts_session_id_onset_seq_detector"), table_name="alerts")
    op.drop_table("alerts")
    op.drop_table("steps")
    op.drop_index(op.f("ix_sessions_started_ts"), table_name="sessions")
    op.drop_table("sessions")
