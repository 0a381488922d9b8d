"""Per-session features kept online: clusters, sub-goals, compaction, ordering."""
