"""From stored runs to the figures a report shows: statistics, derived metrics, verdicts, the seeds' results."""
