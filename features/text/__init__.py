"""Text basics every feature reads: bounded excerpts, memos, hosts, shell words."""
