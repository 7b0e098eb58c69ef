"""Colours shared by the figures and the web page, so a grade or a series looks the same in both.

Series (methods, families, compared models) use the Okabe–Ito palette and the ordered grades
viridis, light A to dark G; both stay readable with the common colour-vision deficiencies.
Colours are hex strings: matplotlib takes them as they are, and the page gets them through its
embedded metadata (`page_palettes`), so the page script types no colour of its own. No imports: the
figures and the page can both use this without pulling anything in.
"""

from __future__ import annotations

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
# matplotlib's viridis at 0.92 (A) down to 0.0 (G) in equal steps; tests/test_figures.py checks
# these against matplotlib.
GRADE_COLORS = {
    "A": "#cae11f",
    "B": "#67cc5c",
    "C": "#25ac82",
    "D": "#24868e",
    "E": "#34618d",
    "F": "#453581",
    "G": "#440154",
}
OTHER_GREY = "#9a9a9a"  # figures: series past the palette's end, points without a grade

# The page: points without a grade, up to ten families coloured (Okabe–Ito without its black,
# which would read as a ring on small points, then four more), the rest in a lighter grey, and
# one colour for each model in the comparison (so it holds at most as many models).
PAGE_NO_GRADE = "#a3a8b0"
PAGE_SERIES = (*OKABE_ITO[:6], "#8C564B", "#6A3D9A", "#B8A000", "#17BECF")
PAGE_OTHER = "#b5bac2"
PAGE_COMPARE = OKABE_ITO[:6]


def page_palettes() -> dict:
    """The page's colours, as its embedded metadata carries them (JSON-ready)."""
    return {
        "grade": dict(GRADE_COLORS),
        "no_grade": PAGE_NO_GRADE,
        "series": list(PAGE_SERIES),
        "other": PAGE_OTHER,
        "compare": list(PAGE_COMPARE),
    }


__all__ = [
    "GRADE_COLORS",
    "OKABE_ITO",
    "OTHER_GREY",
    "PAGE_COMPARE",
    "PAGE_NO_GRADE",
    "PAGE_OTHER",
    "PAGE_SERIES",
    "page_palettes",
]
