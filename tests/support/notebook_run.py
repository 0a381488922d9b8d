"""Run notebooks top to bottom in a kernel of this interpreter, with parameters injected
papermill's way (a cell tagged ``injected-parameters`` after the cell tagged
``parameters``).

The kernel is this venv's Python (a kernelspec written to a temporary folder names
``sys.executable``, so no installed ``python3`` kernel of another environment is picked),
started in ``notebooks/`` as Jupyter starts it, with the repository first on
``PYTHONPATH`` so it imports this tree's code. One kernel runs several notebooks: each
starts with ``%reset -f`` (an empty namespace: nothing a notebook did is visible to the
next), and only the imported modules stay warm — importing scikit-learn, polars and
matplotlib costs a cold kernel several seconds.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from tests.support.paths import ROOT

KERNEL = "trajwatch-venv"


def inject(notebook: nbformat.NotebookNode, params: dict[str, Any]) -> None:
    """Insert ``NAME = value`` lines for ``params`` after the ``parameters`` cell, and a
    namespace reset before everything."""
    cells = notebook.cells
    at = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    source = "\n".join(f"{name} = {value!r}" for name, value in params.items())
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["injected-parameters"]
    cells.insert(at + 1, cell)
    reset = nbformat.v4.new_code_cell('get_ipython().run_line_magic("reset", "-f")')
    reset.metadata["tags"] = ["injected-reset"]
    cells.insert(0, reset)


class Kernel:
    """A kernel of this interpreter for :meth:`run`; a context manager that shuts it down."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="trajwatch-kernels-")
        spec_dir = Path(self._tmp.name) / KERNEL
        spec_dir.mkdir()
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        (spec_dir / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "trajwatch venv",
                    "language": "python",
                    "env": {"PYTHONPATH": path, "MPLBACKEND": "Agg"},
                }
            )
        )
        specs = KernelSpecManager(kernel_dirs=[self._tmp.name])
        # IPC sockets in the temporary folder: TCP ports picked at random can be taken
        # by a server another test (or another kernel) starts in between.
        self.manager = KernelManager(
            kernel_name=KERNEL,
            kernel_spec_manager=specs,
            transport="ipc",
            ip=str(Path(self._tmp.name) / "kernel"),
        )

    def run(
        self, path: Path, params: dict[str, Any], *, timeout: int = 120
    ) -> nbformat.NotebookNode:
        """Execute the notebook at ``path`` with ``params``; returns the executed notebook
        (raises ``nbclient.exceptions.CellExecutionError`` naming the failing cell)."""
        notebook = nbformat.read(path, as_version=4)
        inject(notebook, params)
        client = NotebookClient(
            notebook,
            km=self.manager,
            timeout=timeout,
            resources={"metadata": {"path": str(path.parent)}},
        )
        try:
            client.execute()
        finally:
            atexit.unregister(client._cleanup_kernel)
            if client.kc is not None:
                client.kc.stop_channels()
        return notebook

    def __enter__(self) -> Kernel:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.manager.has_kernel:
            self.manager.shutdown_kernel(now=True)
        self.manager.cleanup_resources()
        self._tmp.cleanup()


def run_notebook(
    path: Path, params: dict[str, Any], *, timeout: int = 120
) -> nbformat.NotebookNode:
    """Execute one notebook in a kernel of its own (see :class:`Kernel`)."""
    with Kernel() as kernel:
        return kernel.run(path, params, timeout=timeout)
