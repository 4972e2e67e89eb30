"""logberg's container images: build them, tag them by content, save them for a node
(`logberg images build | tag | save | base | report | builder | containers-conf`:
logberg_platform.cli.images).

NAME is `spark`, `hive-metastore`, `spark-operator` (shipped) or `dev-postgres`, `dev-s3`
(the dev backends: the logberg-dev chart on kind, and the container
tests), with or without the `logberg-` prefix.

* One set of Dockerfiles for every builder: `docker buildx` where a Docker daemon answers,
  else podman (buildah underneath). LOGBERG_IMAGE_BUILDER=docker|podman picks one.
  podman's settings for this machine (runtime, rlimits) live in one containers.conf that
  this module writes (CONTAINERS_CONF; `make` exports it).
* Every image builds FROM the Debian base pinned by digest in versions.toml [base]. Where
  that cannot be pulled, the same name is made locally with debootstrap (`base`).
  LOGBERG_BASE_IMAGE names another base.
* A tag is `<name>:<logberg version>-<12 hex digits>`, a hash of everything the build reads:
  the staged context (the Dockerfile's allow-list, `<Dockerfile>.dockerignore`), the
  build arguments (all from versions.toml) and the base image. A changed input gives a
  new tag (a node never keeps a stale image under an old tag); an existing tag is not
  built again. A build keeps an image's two newest tags and removes older ones it made.
* `save` writes one docker-archive for `ctr -n k8s.io images import`, with the images
  named as a pod's `image: logberg-spark:<tag>` resolves on a containerd node.
"""

from logberg_platform.build.container_images import base, builders, building, specs, tags
from logberg_platform.build.container_images.base import Base, make_base, require_base, resolve_base
from logberg_platform.build.container_images.builders import (
    Builder,
    builder,
    podman_builder,
    write_containers_conf,
)
from logberg_platform.build.container_images.building import build, build_one, prune, report, save
from logberg_platform.build.container_images.specs import (
    BUILDER_ARGS,
    BUILDER_ENV,
    DEV,
    SHIPPED,
    SPECS,
    Spec,
    context_paths,
    declared_args,
    logberg_version,
    pin_args,
    raw_pins,
    repo_root,
    spec,
    state_dir,
)
from logberg_platform.build.container_images.tags import Plan, current_tag, plan, staged

__all__ = [
    "BUILDER_ARGS",
    "BUILDER_ENV",
    "DEV",
    "SHIPPED",
    "SPECS",
    "Base",
    "Builder",
    "Plan",
    "Spec",
    "base",
    "build",
    "build_one",
    "builder",
    "builders",
    "building",
    "context_paths",
    "current_tag",
    "declared_args",
    "logberg_version",
    "make_base",
    "pin_args",
    "plan",
    "podman_builder",
    "prune",
    "raw_pins",
    "repo_root",
    "report",
    "require_base",
    "resolve_base",
    "save",
    "spec",
    "specs",
    "staged",
    "state_dir",
    "tags",
    "write_containers_conf",
]
