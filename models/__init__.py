"""trajwatch data model: records (Step, Alert, DeadLetter) and their SQLAlchemy store."""
