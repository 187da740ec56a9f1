"""Real files of every type ingest reads, for the ingest tests (the PDF is drawn with reportlab)."""

from __future__ import annotations

from pathlib import Path

MARKDOWN = """# Momentum research

Momentum is the tendency of recent winners to keep winning. We measure it over twelve months,
skipping the most recent one. The effect is strongest in small caps and weakest in large caps.

## Data

Daily returns from 1990 to 2024, adjusted for splits and dividends. Stocks below five dollars are
excluded because their spreads eat the premium. The universe is rebalanced monthly.

```python
# a code fence: this is not a heading
def score(prices):
    return prices[-21] / prices[-252] - 1
```

## Results

The long-short portfolio earned eight percent a year with a Sharpe ratio of 0.7. Crashes cluster
after market rebounds, when past losers rally hardest. Volatility scaling halves the worst drawdown.
"""

PYTHON = '''"""Position sizing helpers."""

import math

RISK_PER_TRADE = 0.01


def kelly_fraction(win_rate: float, payoff: float) -> float:
    """Return the Kelly fraction for a bet with this win rate and payoff ratio.

    def not_a_function_this_is_a_docstring(): nothing here starts a section.
    """
    return win_rate - (1 - win_rate) / payoff


@staticmethod
def volatility_target(returns: list[float], target: float = 0.1) -> float:
    """Scale exposure so that realised volatility matches the target."""
    vol = math.sqrt(sum(r * r for r in returns) / len(returns)) * math.sqrt(252)
    return target / vol if vol else 0.0


class Sizer:
    """Sizes positions from equity and a stop distance."""

    def __init__(self, equity: float) -> None:
        self.equity = equity

    def size(self, stop_distance: float) -> float:
        """Shares to buy so that hitting the stop loses one percent of equity."""
        return self.equity * RISK_PER_TRADE / stop_distance


LOOKBACK = 60
'''

YAML = """strategy:
  name: trend-following
  lookback: 60
  assets: [SPY, TLT, GLD]
risk:
  max_drawdown: 0.2
  stop: atr
---
backtest:
  start: 2010-01-01
  end: 2024-12-31
"""

CSV_HEADER = "date,ticker,close,signal,note"


def csv_text(rows: int = 40) -> str:
    lines = [CSV_HEADER]
    for i in range(rows):
        note = f'"multi-line\nnote {i}"' if i % 10 == 3 else f"row {i}"
        lines.append(f"2024-01-{i % 28 + 1:02d},SPY,{400 + i * 0.5:.2f},{'long' if i % 2 else 'flat'},{note}")
    return "\n".join(lines) + "\n"


TEXT = (
    "Volatility clusters: calm weeks follow calm weeks and storms follow storms. "
    "A strategy that sizes positions by recent volatility takes less risk when markets are wild.\n\n"
    "Transaction costs matter more than most backtests admit. A turnover of two hundred percent a year "
    "at ten basis points per trade costs twenty basis points of return, every year.\n"
)

PDF_PAGES = [
    ["Earnings drift after announcements.", "Prices keep moving in the direction of the surprise for weeks."],
    ["Page two discusses the bond market.", "Yields fell when inflation expectations dropped."],
    ["The final page is about liquidity.", "Thin markets make stops slip far beyond their levels."],
]


def make_pdf(path: Path, pages: list[list[str]] = PDF_PAGES) -> Path:
    """A real PDF, one page per list of lines, drawn with reportlab."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4)
    for lines in pages:
        y = 800
        for line in lines:
            c.drawString(72, y, line)
            y -= 18
        c.showPage()
    c.save()
    return path


def write_corpus(folder: Path) -> dict[str, Path]:
    """One file of each supported type (and one unsupported), by type name."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "markdown": folder / "momentum.md",
        "python": folder / "sizing.py",
        "yaml": folder / "config.yaml",
        "yml": folder / "other.yml",
        "csv": folder / "prices.csv",
        "text": folder / "notes.txt",
        "pdf": folder / "paper.pdf",
    }
    files["markdown"].write_text(MARKDOWN)
    files["python"].write_text(PYTHON)
    files["yaml"].write_text(YAML)
    files["yml"].write_text("alerts:\n  email: desk@example.com\n")
    files["csv"].write_text(csv_text())
    files["text"].write_text(TEXT)
    make_pdf(files["pdf"])
    (folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return files
