"""What the report writes, in words (the numbers are the rooms' above): report.md, the terminal answer,
their sentences and tables, points.csv."""
