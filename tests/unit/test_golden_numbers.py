"""The golden numbers (tests/golden): every catalog model x scenario gives the figures pinned in the
fixture. A refactor must leave them unchanged; a fix that moves a number rewrites the fixture in its own
commit, which lists what moved (``python -m tests.golden.numbers --diff``) and why."""

from tests.golden import numbers


def test_golden_numbers_unchanged():
    moved = numbers.differences(numbers.load(), numbers.collect())
    shown = "\n".join(moved[:60]) + (f"\n... and {len(moved) - 60:,} more" if len(moved) > 60 else "")
    assert not moved, f"{len(moved):,} golden numbers moved (python -m tests.golden.numbers --diff):\n{shown}"
