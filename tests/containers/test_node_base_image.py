"""`logberg kind node-image` where podman has no Debian base and no registry answers: the
base its pause and components images build FROM is made (debootstrap, as `make
base-images`), not asked for. Against an image store of its own (CONTAINERS_STORAGE_CONF),
empty at the start, so the machine's own images stay as they were."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from logberg.errors import ServiceError
from logberg_platform.build.container_images.specs import BASE_LABEL
from logberg_platform.cli.kind import make_base
from logberg_platform.kind import podman_images

pytestmark = [pytest.mark.containers, pytest.mark.slow]


@pytest.fixture
def empty_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("podman") is None:
        pytest.skip("needs root and podman, as `make kind-node-image` does")
    conf = tmp_path / "storage.conf"
    conf.write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{tmp_path / "graph"}"\n'
        f'runroot = "{tmp_path / "run"}"\n'
    )
    monkeypatch.setenv("CONTAINERS_STORAGE_CONF", str(conf))
    listed = subprocess.run(
        ["podman", "images", "-q"], capture_output=True, text=True, check=True
    ).stdout
    assert listed.strip() == "", listed
    yield conf
    subprocess.run(["podman", "rmi", "-a", "-f"], capture_output=True, timeout=120)


def test_the_node_image_makes_the_base_an_empty_image_store_lacks(empty_store: Path) -> None:
    # Without a way to make it (a caller other than the CLI), the error says what to run.
    with pytest.raises(ServiceError, match="make base-images"):
        podman_images.base_image(print)

    said: list[str] = []
    ref, image_id = podman_images.base_image(said.append, make_base)
    assert said and "making the base" in said[0], said
    shown = f'{{{{.Id}}}} {{{{index .Labels "{BASE_LABEL}"}}}}'
    inspected = subprocess.run(
        ["podman", "image", "inspect", "--format", shown, ref],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert inspected == [image_id, "debootstrap"], inspected

    # The next build finds it and makes nothing.
    def must_not_run() -> str:
        raise AssertionError("the base was made twice")

    said.clear()
    assert podman_images.base_image(said.append, must_not_run)[1] == image_id
    assert said == []
