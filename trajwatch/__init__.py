"""trajwatch's composition root: the commands that build a pipeline from a source, a
store and a detector set (``serve``), and the ``trajwatch`` console script."""
