"""The long-running processes: serve, worker, replay, the check, and process set-up."""
