"""A `logberg` command run in rounds, each released by a barrier
(tests/integration/test_concurrency.py).

    python -m tests.helpers.barrier_run DIR NAME ROUNDS -- ARGS...

Starts the Spark session and warms the catalog, then for each round k: writes DIR/ready-NAME-k,
waits until DIR/go-k exists, runs `logberg ARGS` in this process (the CLI's own code, on
this session), and writes its exit code and stdout to DIR/NAME-k.json. Several such
processes, released by the same go file, commit at the same moment: no sleeps.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from pathlib import Path

from logberg import cli
from logberg.cli.spark import session

WAIT_S = 900.0


def main(argv: list[str]) -> int:
    folder, name, rounds = Path(argv[0]), argv[1], int(argv[2])
    args = argv[argv.index("--") + 1 :]
    spark = session(f"barrier-{name}")  # the commands below reuse this session
    spark.sql("SHOW NAMESPACES").collect()
    for k in range(rounds):
        (folder / f"ready-{name}-{k}").touch()
        deadline = time.monotonic() + WAIT_S
        while not (folder / f"go-{k}").exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"round {k}: never released")
            time.sleep(0.01)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli.main(args)
        # Written aside, then renamed: the test waits for the name, then reads it whole.
        result = folder / f"{name}-{k}.partial"
        result.write_text(json.dumps({"code": code, "out": out.getvalue()}))
        result.replace(folder / f"{name}-{k}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
