"""Small helpers every package uses: value checks with messages (checks), memoisation by identity (memo), validated catalog entries (validated)."""

__all__: list[str] = []
