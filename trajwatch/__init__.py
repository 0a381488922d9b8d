"""trajwatch's composition root: the only package that builds a pipeline from a source, a
store and a detector set; nothing else imports it.

- :mod:`trajwatch.settings` (the one settings object) and :mod:`trajwatch.config` (the TOML
  config: detector parameters, policies, actions);
- :mod:`trajwatch.cli`: the command line, one module per command group;
- :mod:`trajwatch.service`: serve, worker, replay, the pre-execution check, process set-up;
- :mod:`trajwatch.actions`: the action policy, the outbox sink, the webhook dispatcher;
- :mod:`trajwatch.breaker`: the reference circuit breaker;
- :mod:`trajwatch.analysis`: ``trajwatch eval`` and the notebooks' toolkit;
- :mod:`trajwatch.bench`: ``trajwatch bench``.
"""
