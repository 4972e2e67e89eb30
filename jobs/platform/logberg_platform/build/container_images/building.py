"""Building, pruning and saving the images, and the report of their sizes and build times."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from logberg.errors import ConfigError, ServiceError
from logberg_platform.build.container_images.base import require_base, resolve_base
from logberg_platform.build.container_images.builders import Builder, builder, say
from logberg_platform.build.container_images.specs import (
    INPUTS_LABEL,
    SPECS,
    Spec,
    logberg_version,
    raw_pins,
    spec,
    state_dir,
)
from logberg_platform.build.container_images.tags import Plan, current_tag, plan, staged

# The steps that do work (podman: "[2/5] STEP 3/9: RUN ...", docker: "#7 [jars 2/4] RUN ...").
STEP_LINE = re.compile(
    r"^(\[\d+/\d+\] )?STEP \d+/\d+: (FROM|RUN|COPY|ADD) |^#\d+ \[[^\]]+\] (FROM|RUN|COPY|ADD) "
)


def build_one(pl: Plan, b: Builder, force: bool = False, no_cache: bool = False) -> dict[str, Any]:
    """Build one planned image unless its tag exists. Returns its build record."""
    if b.exists(pl.tag) and not force:
        say(f"{pl.tag}: up to date")
        return {"image": pl.spec.name, "tag": pl.tag, "built": False}
    logs = state_dir()
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{pl.spec.name}.log"
    say(f"{pl.tag}: building with {b.kind} (full log: {log_path})")
    labels = {
        INPUTS_LABEL: pl.inputs,
        "org.opencontainers.image.version": logberg_version(),
        "org.opencontainers.image.title": pl.spec.name,
    }
    started = time.monotonic()
    steps = cached = 0
    seen: set[str] = set()
    with staged(pl) as ctx, open(log_path, "w") as log:
        cmd = b.build_command(ctx / pl.spec.dockerfile, ctx, pl.tag, pl.args, labels, no_cache)
        proc = subprocess.Popen(
            cmd, env=dict(b.env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            text = line.rstrip()
            if "Using cache" in text or text.endswith(" CACHED"):
                cached += 1
            if STEP_LINE.match(text) and text not in seen:
                seen.add(text)
                steps += 1
                print(f"  [{time.monotonic() - started:5.0f}s] {text[:110]}", flush=True)
        code = proc.wait()
    seconds = round(time.monotonic() - started, 1)
    if code != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-40:])
        raise ServiceError(f"building {pl.tag} failed (exit {code}); {log_path} ends:\n{tail}")
    size = int(b.inspect(pl.tag).get("Size") or 0)
    say(f"{pl.tag}: built in {seconds:.0f}s, {size / 1e9:.2f} GB")
    record = {
        "image": pl.spec.name,
        "tag": pl.tag,
        "built": True,
        "builder": b.kind,
        "seconds": seconds,
        "size_bytes": size,
        "steps": steps,
        "cached_steps": cached,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with open(logs / "builds.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")
    return record


def prune(b: Builder, s: Spec, keep: int = 2) -> None:
    """Remove this image's older tags beyond the newest `keep` (a rebuild never reuses a
    tag, so they pile up). Only images this module built (its label), never one in use."""
    listed = b.run(
        "images", "--filter", f"reference={s.name}", "--filter", f"label={INPUTS_LABEL}",
        "--format", "{{.Repository}}:{{.Tag}}\t{{.CreatedAt}}", check=False,
    ).stdout.splitlines()  # fmt: skip
    refs = sorted(
        (line.split("\t") for line in listed if "\t" in line and ":<none>" not in line),
        key=lambda ref_created: ref_created[1],
        reverse=True,
    )
    for ref, _ in refs[keep:]:
        if b.run("rmi", ref, check=False).returncode == 0:
            say(f"removed the older {ref}")


def build(names: Sequence[str], force: bool = False, no_cache: bool = False) -> dict[str, str]:
    """Build the named images (and what they build on) unless their tags exist."""
    b = builder()
    p = raw_pins()
    base = resolve_base(b, p)
    say(f"builder {b.kind}; base {base.ref} ({base.source})")
    order: list[Spec] = []
    for name in names:
        s = spec(name)
        for need in (*s.needs, s.key):
            if SPECS[need] not in order:
                order.append(SPECS[need])
    tags: dict[str, str] = {}
    for s in order:
        pl = plan(s, b, p, base)
        wanted = s.key in {spec(n).key for n in names}
        record = build_one(
            pl, b, force=(force or no_cache) and wanted, no_cache=no_cache and wanted
        )
        if record["built"]:
            prune(b, s)
        tags[s.key] = pl.tag
    return tags


# ---------------------------------------------------------------------------------- save
def save(names: Sequence[str], out: Path) -> list[str]:
    """One archive (docker-archive) of the images' current tags, for `ctr images import`
    or `docker load`. Inside it the images are named docker.io/library/<name>:<tag>,
    which is what a pod's `image: logberg-spark:<tag>` resolves to on a containerd node."""
    b = builder()
    tags = [current_tag(n) for n in names]
    missing = [t for t in tags if not b.exists(t)]
    if missing:
        raise ConfigError(f"not built yet: {', '.join(missing)} (make images)")
    out.parent.mkdir(parents=True, exist_ok=True)
    if b.kind == "docker":
        b.run("save", "-o", str(out), *tags, timeout=None)
        return tags
    qualified = [f"docker.io/library/{t}" for t in tags]
    for tag, name in zip(tags, qualified, strict=True):
        b.run("tag", tag, name)
    try:
        out.unlink(missing_ok=True)
        b.run("save", "--format", "docker-archive", "-m", "-o", str(out), *qualified, timeout=None)
    finally:
        for name in qualified:
            b.run("untag", name, name, check=False)
    return qualified


# -------------------------------------------------------------------------------- report
def report() -> dict[str, Any]:
    """Each image's current tag, whether it is built, its size, and its build times (the
    last build and the last one with nothing cached) from the build records."""
    b = builder()
    p = raw_pins()
    base = require_base(b, p)
    records: list[dict[str, Any]] = []
    path = state_dir() / "builds.jsonl"
    if path.is_file():
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    images = []
    for s in SPECS.values():
        tag = plan(s, b, p, base).tag
        built = [r for r in records if r.get("image") == s.name and r.get("built")]
        cold = [r for r in built if r.get("cached_steps") == 0]
        images.append(
            {
                "image": s.name,
                "tag": tag,
                "present": b.exists(tag),
                "size_bytes": int(b.inspect(tag).get("Size") or 0) if b.exists(tag) else None,
                "last_build_seconds": built[-1]["seconds"] if built else None,
                "last_cold_build_seconds": cold[-1]["seconds"] if cold else None,
            }
        )
    return {"builder": b.kind, "base": base.ref, "base_source": base.source, "images": images}
