"""A real S3 API server on localhost for the tests: moto's server mode, in a process of its own.

The server enforces credentials (moto's ``INITIAL_NO_AUTH_ACTION_COUNT``): its first three
requests create an IAM user with an access key, every later one must be signed with that
key, so a wrong key is refused as S3 would refuse it. Its request recorder
(``/moto-api/recorder``) tells which requests a run made. The process ends when the
test session does (it reads its stdin until the session closes it).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass

_SERVER = """
import sys
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()
server.stop()
"""

REGION = "us-east-1"
_buckets = itertools.count()


@dataclass
class S3Server:
    endpoint: str
    key_id: str
    secret: str
    process: subprocess.Popen

    @classmethod
    def start(cls, log_path: str) -> "S3Server":
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3")
        with open(log_path, "w") as log:
            # in the log's folder: the recorder writes its file (moto_recording) into the working directory
            process = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=log, env=env, cwd=os.path.dirname(log_path))
        line = process.stdout.readline()
        if not line.strip():
            process.kill()
            raise RuntimeError(f"the moto server did not start; see {log_path}")
        endpoint = f"http://127.0.0.1:{int(line)}"
        import boto3  # installed with moto

        iam = boto3.client("iam", endpoint_url=endpoint, aws_access_key_id="bootstrap",
                           aws_secret_access_key="bootstrap", region_name=REGION)
        iam.create_user(UserName="tests")
        iam.put_user_policy(UserName="tests", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="tests")["AccessKey"]
        return cls(endpoint, key["AccessKeyId"], key["SecretAccessKey"], process)

    def stop(self) -> None:
        self.process.stdin.close()
        self.process.stdout.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def env(self) -> dict[str, str]:
        """Only the standard variables: the endpoint, the keys, the region, plain http allowed."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
        }

    def new_bucket(self) -> str:
        """The name of a new, empty bucket on this server (unique across tests and processes)."""
        name = f"test-{os.getpid()}-{next(_buckets)}"
        self.filesystem().create_dir(name)
        return name

    def filesystem(self):
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(endpoint_override=self.endpoint, access_key=self.key_id, secret_key=self.secret,
                                 region=REGION, allow_bucket_creation=True)

    # --- the request recorder ------------------------------------------------------

    def _moto_api(self, what: str, method: str = "POST") -> bytes:
        request = urllib.request.Request(f"{self.endpoint}/moto-api/recorder/{what}", method=method)
        with urllib.request.urlopen(request) as r:
            return r.read()

    def start_recording(self) -> None:
        self._moto_api("reset-recording")
        self._moto_api("start-recording")

    def recorded(self) -> list[tuple[str, str]]:
        """(method, URL path and query) of every request since ``start_recording``."""
        self._moto_api("stop-recording")
        lines = self._moto_api("download-recording", method="GET").decode().splitlines()
        out = []
        for line in lines:
            if line.strip():
                r = json.loads(line)
                out.append((r["method"], r["url"].split("/", 3)[-1]))
        return out
