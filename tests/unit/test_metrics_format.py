"""logberg's metrics in the Prometheus text format (tests/static/test_promtool.py has promtool
check them)."""

from __future__ import annotations

from logberg.pipeline.metrics import exposition, gauge


def test_exposition_escapes_label_values_and_writes_integers_plainly() -> None:
    text = exposition(
        [gauge("logberg_x", "A test.", ({"reason": 'bad "quote"\\n'}, 3.0), ({}, 0.25))]
    )
    assert text == (
        "# HELP logberg_x A test.\n"
        "# TYPE logberg_x gauge\n"
        'logberg_x{reason="bad \\"quote\\"\\\\n"} 3\n'
        "logberg_x 0.25\n"
    )
