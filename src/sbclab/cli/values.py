"""What the command line's text means: sizes, lists of counts and names, finite numbers. Kept apart
from the option bundles, which reach the cluster and plan modules: `sbclab data generate`, run once
per worker for every generated input, parses a size and should load nothing more."""

import math

import click

from ..errors import SbclabError
from ..units import parse_size


class FiniteRange(click.FloatRange):
    """A float range that also refuses NaN and infinity (which compare false with every bound)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a number here.", param, ctx)
        return number


def size(ctx, param, value):
    """A click callback: `256MB`, `1GB`, `2GiB` as bytes."""
    if value is None:
        return None
    try:
        return parse_size(value)
    except SbclabError as err:
        raise click.BadParameter(str(err)) from err


def sizes_list(ctx, param, value):
    """A click callback: `64MB,256MB` as bytes."""
    if value is None:
        return None
    return [size(ctx, param, v) for v in value.split(",") if v.strip()] or None


def counts(ctx, param, value):
    """A click callback: `1,2,4` as integers."""
    if value is None:
        return None
    try:
        found = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"'{value}' is not a comma-separated list of whole numbers, e.g. 1,2,4.") from None
    if not found:
        raise click.BadParameter("give at least one number, e.g. 1,2,4.")
    return found


def names(value: str | None) -> list[str] | None:
    """`a,b` as ['a', 'b'] (None when not given)."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None
