"""The report: tables, plots and verdicts rendered from stored runs alone (HTML, CSV, JSON, Markdown)."""
