"""`logberg images`: build, tag and save the container images (docker buildx or podman;
images/README.md). Each action is one handler; errors are one line, exit 2 for a setting
and 1 for a failed build or service."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path

from logberg.cli.command import Command, Handler, action, actions
from logberg.errors import ConfigError, ServiceError


def one_line_errors(fn: Callable[[argparse.Namespace], None]) -> Handler:
    @functools.wraps(fn)
    def handler(a: argparse.Namespace) -> int:
        try:
            fn(a)
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except ServiceError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        return 0

    return handler


@one_line_errors
def build(a: argparse.Namespace) -> None:
    from logberg_platform.build import container_images as images

    images.build(a.names or images.SHIPPED, force=a.force, no_cache=a.no_cache)


@one_line_errors
def tag(a: argparse.Namespace) -> None:
    from logberg_platform.build import container_images as images

    print(images.current_tag(a.name))


@one_line_errors
def save(a: argparse.Namespace) -> None:
    from logberg_platform.build import container_images as images
    from logberg_platform.build.container_images.builders import say

    names = images.save(a.names, a.output)
    say(f"wrote {a.output} ({', '.join(names)})")


@one_line_errors
def base(a: argparse.Namespace) -> None:
    from logberg_platform.build import container_images as images

    images.make_base(images.builder(), images.raw_pins(), rebuild=a.rebuild)


@one_line_errors
def report(a: argparse.Namespace) -> None:
    from logberg_platform.build import container_images as images

    print(json.dumps(images.report(), indent=2))


@one_line_errors
def builder(a: argparse.Namespace) -> None:
    from logberg_platform.build import container_images as images

    found = images.builder()
    print(f"{found.kind} {found.exe}")


@one_line_errors
def containers_conf(a: argparse.Namespace) -> None:
    from logberg_platform.build import container_images as images

    print(images.write_containers_conf(a.path))


def arguments(p: argparse.ArgumentParser) -> None:
    sub = actions(p)
    b = action(sub, "build", build, "build images whose tags do not exist yet")
    b.add_argument("names", nargs="*", help="default: the shipped images")
    b.add_argument("--force", action="store_true", help="build even if the tag exists")
    b.add_argument("--no-cache", action="store_true", help="and reuse no cached layer (timing)")
    t = action(sub, "tag", tag, "print the tag an image has for the inputs as they are")
    t.add_argument("name")
    s = action(sub, "save", save, "write the images into one archive for a node")
    s.add_argument("names", nargs="+")
    s.add_argument("-o", "--output", required=True, type=Path)
    bs = action(sub, "base", base, "make the base image with debootstrap")
    bs.add_argument("--rebuild", action="store_true", help="remake it even if it exists")
    action(sub, "report", report, "sizes and build times, as JSON")
    action(sub, "builder", builder, "print the builder `build` uses (exit 2: none)")
    c = action(sub, "containers-conf", containers_conf, "write podman's settings for this machine")
    c.add_argument("path", type=Path)


COMMAND = Command(
    "images",
    "build, tag and save the container images (docker buildx or podman; images/README.md)",
    arguments=arguments,
    order=62,
)
