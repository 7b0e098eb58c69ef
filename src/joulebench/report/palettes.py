"""Colours shared by the figures and the web page, so a grade or a series looks the same in both.

Every palette here stays distinguishable with the common colour-vision deficiencies:
tests/report/test_palettes.py simulates protanopia, deuteranopia and tritanopia (Machado et
al. 2009) and holds each pair of colours of a palette apart by a CIEDE2000 difference (grades at
least 15, series and families at least 10: the Okabe–Ito palette's own worst pair is 10.9).

- Series (methods, batch sizes, families, compared models): Okabe–Ito.
- Grades A-G: the order of the EU energy label (A green, D yellow, G red) in colours people
  with a colour-vision deficiency tell apart: dark blue (A) through pale yellow (D) to dark
  red (G). viridis, used before, put A and B (yellow-green, green) too close for small points.
Colours are hex strings: matplotlib takes them as they are, and the page gets them through its
embedded metadata (`page_palettes`), so the page script types no colour of its own. No imports:
the figures and the page can both use this without pulling anything in.
"""

from __future__ import annotations

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
# Families: Okabe–Ito without its black (it would read as a ring on small points), with its
# yellow; the figures colour the first few, the page all seven, the rest OTHER_GREY.
FAMILY_COLORS = (*OKABE_ITO[:6], "#F0E442")
# A (best) to G; chosen for the largest smallest CIEDE2000 difference of any two grades under
# normal vision and the three simulated deficiencies (17), with lightness and hue in order on
# each side of D; D is the lightest, and still shows on white in the points' outline.
GRADE_COLORS = {
    "A": "#29426b",
    "B": "#426bd6",
    "C": "#3aade6",
    "D": "#ded6a5",
    "E": "#e6a500",
    "F": "#d6524a",
    "G": "#7b3a42",
}
OTHER_GREY = "#c4c4c4"  # series past the palette's end (families but the first few)
OFF_FRONT_GREY = "#8a8a8a"  # the hollow markers of rows kept off the front: darker, as rings
INK = "#1d2330"  # dark text

# The page: points without a grade, and one colour for each model in the comparison (so it
# holds at most as many models) and for each Pareto front drawn (a dark one first).
PAGE_NO_GRADE = "#a3a8b0"
# Predictions' rings and interval bars (figures; the page when it colours by grade)
PREDICTED_COLOR = "#4b5563"
PAGE_COMPARE = OKABE_ITO[:6]
PAGE_FRONTS = (OKABE_ITO[6], *OKABE_ITO[:5])  # black, blue, orange, green, vermillion, purple


def _luminance(hex_colour: str) -> float:
    """WCAG relative luminance of '#rrggbb'."""
    channels = [int(hex_colour[k : k + 2], 16) / 255 for k in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def ink_on(background: str) -> str:
    """INK or white, whichever contrasts more with `background` (WCAG): a grade letter on its
    colour, in the energy label and on the page."""
    lum = _luminance(background)
    dark = (lum + 0.05) / (_luminance(INK) + 0.05)
    return INK if dark >= 1.05 / (lum + 0.05) else "#ffffff"


GRADE_INK = {grade: ink_on(colour) for grade, colour in GRADE_COLORS.items()}


def page_palettes() -> dict:
    """The page's colours, as its embedded metadata carries them (JSON-ready)."""
    return {
        "grade": dict(GRADE_COLORS),
        "grade_ink": dict(GRADE_INK),
        "no_grade": PAGE_NO_GRADE,
        "predicted": PREDICTED_COLOR,
        "series": list(FAMILY_COLORS),
        "other": OTHER_GREY,
        "compare": list(PAGE_COMPARE),
        "fronts": list(PAGE_FRONTS),
    }


__all__ = [
    "FAMILY_COLORS",
    "GRADE_COLORS",
    "GRADE_INK",
    "INK",
    "OFF_FRONT_GREY",
    "OKABE_ITO",
    "OTHER_GREY",
    "PAGE_COMPARE",
    "PAGE_FRONTS",
    "PAGE_NO_GRADE",
    "ink_on",
    "page_palettes",
]
