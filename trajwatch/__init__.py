"""trajwatch's composition root: the command line, config and settings, and the wiring
of replay, eval and the service. It is the only package that builds a pipeline from a
source, a store and a detector set; nothing else imports it."""
