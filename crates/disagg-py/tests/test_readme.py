"""The README's Python example is real: the code block between the `python-rate-sweep` markers runs,
prints exactly the `python-rate-sweep-out` block and draws exactly docs/plots/python/rate-sweep.svg,
byte for byte (the chart only with the pinned matplotlib, unless CI is set: then it must be that one).

    python crates/disagg-py/tests/test_readme.py --update   # rewrites the output block and the chart
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, Tuple

import pytest

REPO = Path(__file__).resolve().parents[3]
README = REPO / "README.md"
CHART = REPO / "docs" / "plots" / "python" / "rate-sweep.svg"
CHART_NAME = "rate-sweep.svg"  # the file the block writes into its working directory
# The one matplotlib the committed chart is drawn with (scripts/python-env.sh installs the same).
MATPLOTLIB = "3.11.2"


def block(text: str, name: str, lang: str) -> str:
    """The fenced `lang` block between `<!-- name:begin -->` and `<!-- name:end -->`."""
    m = re.search(
        rf"<!-- {re.escape(name)}:begin -->\n```{lang}\n(.*?)```\n<!-- {re.escape(name)}:end -->",
        text,
        re.S,
    )
    if m is None:
        raise AssertionError(f"README.md: no ```{lang} block between the {name} markers")
    return m.group(1)


def run_block(code: str, cwd: Path) -> Tuple[str, bytes]:
    """Runs the block as a script in `cwd` (no display): what it prints and the chart it writes."""
    env = dict(os.environ, MPLBACKEND="Agg", MPLCONFIGDIR=str(cwd / ".mpl"))
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    if r.returncode != 0:
        raise AssertionError(f"the README's Python block failed:\n{r.stderr}")
    return r.stdout, (cwd / CHART_NAME).read_bytes()


def _need(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is not importable and CI is set")
        pytest.skip(f"{module} is not importable")


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Dict[str, object]:
    _need("pandas")
    _need("matplotlib")
    text = README.read_text(encoding="utf-8")
    out, svg = run_block(block(text, "python-rate-sweep", "python"), tmp_path_factory.mktemp("readme"))
    return {"text": text, "out": out, "svg": svg}


def test_the_block_prints_what_the_readme_shows(ran) -> None:
    assert ran["out"] == block(ran["text"], "python-rate-sweep-out", "text")


def test_the_block_draws_the_committed_chart(ran) -> None:
    import matplotlib

    if matplotlib.__version__ != MATPLOTLIB:
        msg = f"matplotlib {matplotlib.__version__} is not the pinned {MATPLOTLIB}"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    svg = ran["svg"]
    assert svg.startswith(b"<?xml") and b"<svg" in svg
    assert b"<dc:date>" not in svg  # metadata={"Date": None}
    assert svg == CHART.read_bytes(), (
        "docs/plots/python/rate-sweep.svg is stale: python crates/disagg-py/tests/test_readme.py --update"
    )


def test_the_printed_table_is_the_sweep(ran) -> None:
    # The printed figures, read back, are the sweep's own numbers (rounded to 0.1) in run order:
    # link slowest (eth-25g, eth-100g), rate fastest (4..16).
    import disagg

    lines = ran["out"].splitlines()
    assert lines[0].split() == ["link", "rate", "ttft_p99_ms", "tpot_p99_ms", "slo_met_pct"]
    assert all(line == line.rstrip() for line in lines)  # nothing an editor would strip
    rows = disagg.sweep(
        "link-eth-25g", vary={"link": ["eth-25g", "eth-100g"], "rate": [4, 6, 8, 10, 12, 14, 16]}
    )
    assert len(lines) == 1 + 14
    k = 0
    for link in ["eth-25g", "eth-100g"]:
        for rate in [4, 6, 8, 10, 12, 14, 16]:
            cells = lines[1 + k].split()
            s = rows[k]["summary"]
            assert cells[:2] == [link, f"{rate}.0"]
            want = [1e3 * s["ttft_s"]["p99"], 1e3 * s["tpot_s"]["p99"], 100 * s["slo_attainment"]]
            for cell, w in zip(cells[2:], want):
                assert abs(float(cell) - w) <= 0.05 + 1e-9, (link, rate, cell, w)
            k += 1


def test_the_pin_agrees_with_the_python_env_script() -> None:
    script = REPO / "scripts" / "python-env.sh"
    if not script.exists():
        pytest.skip("scripts/python-env.sh is not in this tree")
    pins = re.findall(r"matplotlib==([0-9][0-9.]*)", script.read_text())
    assert pins == [MATPLOTLIB], pins


def update() -> None:
    """Runs the block and writes its output into the README and its chart to docs/plots/python."""
    text = README.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as d:
        out, svg = run_block(block(text, "python-rate-sweep", "python"), Path(d))
    old = block(text, "python-rate-sweep-out", "text")
    marker = "<!-- python-rate-sweep-out:begin -->\n```text\n"
    text = text.replace(marker + old, marker + out, 1)
    README.write_text(text, encoding="utf-8")
    CHART.parent.mkdir(parents=True, exist_ok=True)
    CHART.write_bytes(svg)
    import matplotlib

    print(f"README.md and {CHART.relative_to(REPO)} rewritten (matplotlib {matplotlib.__version__})")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(f"usage: {sys.argv[0]} --update")
    update()
