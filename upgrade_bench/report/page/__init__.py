"""What the report writes: report.md, the terminal answer, their sentences and tables, points.csv."""
