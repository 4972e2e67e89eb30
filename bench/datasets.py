"""Seeded, cached datasets made by our generator (`python -m generator`).

Each dataset lives in bench/data/datasets/<name>/ (the generator's output root); its files are
under raw/nginx/dt=*/ and its manifest under raw/nginx/_manifests/. A dataset is reused when
its recorded generator arguments are unchanged and the manifest (written last) exists.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.config import GZIP

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Spec:
    name: str
    num_files: int
    lines_per_file: int
    start_date: str
    end_date: str
    seed: int
    malformed_rate: float = 0.005
    fmt: str = "combined"  # the generator's --format

    @property
    def lines(self) -> int:
        return self.num_files * self.lines_per_file

    def args(self, root: Path) -> list[str]:
        return [
            "--output",
            root.as_uri(),
            "--num-files",
            str(self.num_files),
            "--lines-per-file",
            str(self.lines_per_file),
            "--start-date",
            self.start_date,
            "--end-date",
            self.end_date,
            "--malformed-rate",
            str(self.malformed_rate),
            "--seed",
            str(self.seed),
            "--gzip" if GZIP else "--no-gzip",
            "--format",
            self.fmt,
            "--quiet",
        ]


@dataclass
class Dataset:
    spec: Spec
    root: Path
    manifest: dict
    generated_s: float | None  # None when it came from the cache

    @property
    def landing(self) -> Path:
        return self.root / "raw" / "nginx"

    @property
    def uri(self) -> str:
        return self.landing.as_uri()

    @property
    def valid(self) -> int:
        return int(self.manifest["totals"]["valid"])

    @property
    def malformed(self) -> int:
        return int(self.manifest["totals"]["malformed_total"])

    @property
    def lines(self) -> int:
        return int(self.manifest["totals"]["lines"])

    @property
    def bytes(self) -> int:
        return int(self.manifest["totals"]["bytes"])


def _manifest(root: Path) -> dict | None:
    found = sorted((root / "raw" / "nginx" / "_manifests").glob("*.json"))
    if len(found) != 1:
        return None
    return json.loads(found[0].read_text())


def ensure(spec: Spec, base: Path) -> Dataset:
    root = base / spec.name
    stamp = root / "bench-spec.json"
    want = {**asdict(spec), "gzip": GZIP}
    if spec.fmt == "combined":
        del want["fmt"]  # the stamp of a combined set is what it was before formats existed
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        m = _manifest(root)
        if m is not None:
            return Dataset(spec, root, m, None)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "generator", *spec.args(root)], cwd=REPO, check=True)
    took = time.perf_counter() - t0
    m = _manifest(root)
    if m is None:
        raise RuntimeError(f"generator wrote no manifest under {root}")
    stamp.write_text(json.dumps(want, indent=1))
    return Dataset(spec, root, m, took)
