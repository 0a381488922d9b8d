"""Sources, decoders, the pipeline and the CLI: the composition root of trajwatch."""
