"""Screenshots for docs/bench.md: the terminal leaderboard at 100 and 160 columns, and each plot kind.

The leaderboard is drawn exactly as ``portfolio report`` draws it in a terminal of that width
(:func:`portfolio.report.compact.choose_view`), recorded by rich as SVG and turned into PNG with
cairosvg (``pip install cairosvg``; it needs the cairo library). The plots are ``--plot``'s own.

    python benchmarks/screenshots.py [--out docs/images]

It reads the curated runs under runs/curated/ (contest-default: the portfolio, 3 seeds, contest
limits; contest-timeouts: greedy and the portfolio, one seed), so the pictures are of real results.
"""

from __future__ import annotations

import argparse
import io
import shutil
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = [REPO / "runs" / "curated" / "contest-default", REPO / "runs" / "curated" / "contest-timeouts"]


def leaderboard_png(board, width: int, path: Path) -> None:
    """The leaderboard as a terminal of ``width`` columns shows it, as PNG."""
    import cairosvg
    from rich.console import Console

    from portfolio.report.compact import choose_view

    renderable, natural = choose_view(board, "auto", width, terminal=True)
    console = Console(width=natural or width, record=True, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor")
    console.print(renderable)
    svg = console.export_svg(title=f"portfolio report ... ({width} columns)")
    cairosvg.svg2png(bytestring=svg.encode(), write_to=str(path), output_width=8 * width + 40)


def main() -> None:
    from portfolio.report import build, write_plots

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "images"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    board = build(RUNS, "contest", top=3)
    for width in (100, 160):
        leaderboard_png(board, width, out / f"leaderboard-{width}.png")
    with tempfile.TemporaryDirectory() as tmp:
        written = write_plots(board, tmp)
        wanted = {"points", "profile", "convergence-K", "convergence-B"}
        for path in written:
            last = path.stem.rsplit("-", 1)[-1]
            kind = f"convergence-{last}" if "-convergence-" in path.stem else last
            if path.suffix == ".png" and kind in wanted:
                shutil.copy(path, out / f"{kind}.png")
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
