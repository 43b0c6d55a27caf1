"""The report's PNG figures (matplotlib, imported only once the inputs are known good)."""
