"""The image commands, for `logberg images` and
`python -m logberg_platform.build.container_images`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from logberg.errors import ConfigError, ServiceError
from logberg_platform.build.container_images.base import make_base
from logberg_platform.build.container_images.builders import builder, say, write_containers_conf
from logberg_platform.build.container_images.building import build, report, save
from logberg_platform.build.container_images.specs import SHIPPED, raw_pins
from logberg_platform.build.container_images.tags import current_tag


# ----------------------------------------------------------------------------------- CLI
def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The image commands, for `logberg images` and `python -m` this package."""
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build images whose tags do not exist yet")
    b.add_argument("names", nargs="*", help=f"default: {' '.join(SHIPPED)}")
    b.add_argument("--force", action="store_true", help="build even if the tag exists")
    b.add_argument("--no-cache", action="store_true", help="and reuse no cached layer (timing)")
    t = sub.add_parser("tag", help="print the tag an image has for the inputs as they are")
    t.add_argument("name")
    s = sub.add_parser("save", help="write the images into one archive for a node")
    s.add_argument("names", nargs="+")
    s.add_argument("-o", "--output", required=True, type=Path)
    base = sub.add_parser("base", help="make the base image with debootstrap")
    base.add_argument("--rebuild", action="store_true", help="remake it even if it exists")
    sub.add_parser("report", help="sizes and build times, as JSON")
    sub.add_parser("builder", help="print the builder `build` uses (exit 2: none)")
    c = sub.add_parser("containers-conf", help="write podman's settings for this machine")
    c.add_argument("path", type=Path)


def run(a: argparse.Namespace) -> int:
    """Carry out one parsed image command; errors as one line and exit 2 (setting) or 1."""
    try:
        if a.command == "build":
            build(a.names or SHIPPED, force=a.force, no_cache=a.no_cache)
        elif a.command == "tag":
            print(current_tag(a.name))
        elif a.command == "save":
            names = save(a.names, a.output)
            say(f"wrote {a.output} ({', '.join(names)})")
        elif a.command == "base":
            make_base(builder(), raw_pins(), rebuild=a.rebuild)
        elif a.command == "report":
            print(json.dumps(report(), indent=2))
        elif a.command == "builder":
            found = builder()
            print(f"{found.kind} {found.exe}")
        else:
            print(write_containers_conf(a.path))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ServiceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m logberg_platform.build.container_images")
    add_arguments(ap)
    return run(ap.parse_args(argv))
