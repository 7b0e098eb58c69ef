"""The shared palettes (report/palettes.py): every colour of a palette told apart from every
other, with normal colour vision and with each simulated deficiency; the page gets the same."""

from __future__ import annotations

from itertools import combinations

import pytest
from helpers.colour_vision import CVD, closest_pair, difference

from joulebench.report import palettes

GRADES_APART = 15  # CIEDE2000, the smallest between two grades under any vision
SERIES_APART = 10  # Okabe–Ito's own worst pair is 10.9


def test_the_simulation_and_the_difference_are_the_published_ones():
    """CIEDE2000 against Sharma et al.'s test pairs; a deficiency loses a red-green difference
    (red and green look alike to a deuteranope) but keeps a blue-yellow one."""
    import numpy as np
    from helpers.colour_vision import ciede2000

    assert ciede2000(np.array([50, 2.6772, -79.7751]), np.array([50, 0, -82.7485])) == (
        pytest.approx(2.0425, abs=1e-4)
    )
    assert ciede2000(np.array([50, 2.5, 0]), np.array([73, 25, -18])) == pytest.approx(
        27.1492, abs=1e-4
    )
    red, green = "#d62728", "#2ca02c"
    assert difference(red, green) > 40 > 15 > difference(red, green, "deuteranopia")
    assert difference("#0072B2", "#F0E442", "deuteranopia") > 40


def test_grades_stay_apart_for_every_vision():
    """Any two grades, and a grade and the no-grade grey, stay apart; viridis (the old
    palette) did not: A and B were 9.5 apart to a protanope."""
    grades = list(palettes.GRADE_COLORS.values())
    worst = closest_pair(grades)
    assert worst[0] >= GRADES_APART, worst
    viridis_a_b = ("#cae11f", "#67cc5c")
    assert min(difference(*viridis_a_b, v) for v in CVD) < GRADES_APART
    for grey in (palettes.PAGE_NO_GRADE, palettes.OTHER_GREY, palettes.OFF_FRONT_GREY):
        worst = closest_pair(grades, [(grey, g) for g in grades])
        assert worst[0] >= SERIES_APART, worst


@pytest.mark.parametrize("name", ["FAMILY_COLORS", "OKABE_ITO", "PAGE_FRONTS", "PAGE_COMPARE"])
def test_series_stay_apart_for_every_vision(name):
    colours = list(getattr(palettes, name))
    worst = closest_pair(colours)
    assert worst[0] >= SERIES_APART, worst
    if name == "FAMILY_COLORS":  # "other families" is grey beside them
        grey = palettes.OTHER_GREY
        assert closest_pair(colours, [(grey, c) for c in colours])[0] >= SERIES_APART


def test_the_old_page_families_would_fail():
    """The page's families before: four colours past Okabe–Ito's, two of them within 2-3 of
    another to a protanope or tritanope: the check catches such a palette."""
    old = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9")
    old += ("#8C564B", "#6A3D9A", "#B8A000", "#17BECF")
    assert closest_pair(list(old))[0] < 3


def test_grades_are_ordered_in_lightness_on_each_side_of_d():
    """A to D lighter, D to G darker: the order reads without the legend."""
    from helpers.colour_vision import lab

    light = [lab(c)[0] for c in palettes.GRADE_COLORS.values()]
    d = list(palettes.GRADE_COLORS).index("D")
    assert light[: d + 1] == sorted(light[: d + 1])
    assert light[d:] == sorted(light[d:], reverse=True)
    assert max(light) < 88  # a D point still shows on white


def test_grade_letters_are_written_in_the_ink_that_contrasts_more():
    for grade, colour in palettes.GRADE_COLORS.items():
        ink = palettes.GRADE_INK[grade]
        other = "#ffffff" if ink == palettes.INK else palettes.INK
        assert _contrast(colour, ink) >= _contrast(colour, other), grade
    assert palettes.GRADE_INK["A"] == "#ffffff" and palettes.GRADE_INK["D"] == palettes.INK


def test_the_page_gets_the_same_colours():
    page = palettes.page_palettes()
    assert page["grade"] == palettes.GRADE_COLORS and page["grade_ink"] == palettes.GRADE_INK
    assert page["series"] == list(palettes.FAMILY_COLORS)
    assert page["fronts"] == list(palettes.PAGE_FRONTS)
    assert all(c.startswith("#") and len(c) == 7 for c in _every_colour(page))


def _every_colour(page: dict) -> list[str]:
    out = []
    for value in page.values():
        out += list(value.values()) if isinstance(value, dict) else [value] * isinstance(value, str)
        out += list(value) if isinstance(value, list) else []
    return out


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((palettes._luminance(a), palettes._luminance(b)))
    return (lb + 0.05) / (la + 0.05)


def test_no_two_palettes_share_a_name_for_a_different_colour():
    """Series and families overlap on purpose (Okabe–Ito); grades are their own colours."""
    assert not set(palettes.GRADE_COLORS.values()) & set(palettes.FAMILY_COLORS)
    assert all(a != b for a, b in combinations(palettes.GRADE_COLORS.values(), 2))
