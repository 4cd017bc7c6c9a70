"""Everything a report shows, computed once from the results directory: cells, derived figures,
comparisons, verdicts, the seeds' matching cells and the warnings that go first."""

import json
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..analysis import diff, reference, reproduction
from ..analysis.diff import Diff
from ..analysis.cells import Cell, CellKey, cluster_identity, clusters_in, exclusion_reason, group
from ..analysis.derived import (CellFigures, Comparison, Costs, datanode_resources, engine_ratios, figures, setup_ratios,
                                speedups, storage_gains)
from ..analysis.verdicts import Verdict, verdict
from ..results.index import read_summaries, run_row
from ..results.schema import RunRecord
from ..results.store import SetAside, read_runs, set_aside_warning


@dataclass
class ReferenceMatch:
    figures: CellFigures
    published: reference.Published
    sources: list[str] = field(default_factory=list)  # every table that prints this cell

    @property
    def ratio(self) -> float | None:
        """Ours over theirs: above 1, this cluster was slower than the seed's."""
        ours = self.figures.wall_time
        return ours.mean / self.published.seconds if ours and self.published.seconds else None

    def as_dict(self, with_cluster: bool = False) -> dict:
        key = self.figures.cell.key
        return {"cell": key.label(with_cluster), "emulated": self.figures.cell.emulated, "scale_factor": self.figures.cell.scale_factor,
                "ours_s": self.figures.wall_time.mean if self.figures.wall_time else None,
                "published_s": self.published.seconds, "published_printed": f"{self.published.printed} {self.published.unit}",
                "source": ", ".join(self.sources or [self.published.source]) + (
                    f" (inferred: {self.published.inferred})" if self.published.inferred else ""),
                "citation": self.published.citation, "ratio": self.ratio,
                "published_notes": self.published.notes}


@dataclass
class Report:
    results: Path
    runs: list[RunRecord]
    cells: list[Cell]
    figures: list[CellFigures]
    comparisons: list[Comparison]
    verdicts: dict[str, Verdict]
    references: list[ReferenceMatch]
    clusters: list[str]
    costs: Costs
    warnings: list[str] = field(default_factory=list)
    generated_at: str = ""
    command: list[str] = field(default_factory=list)
    reproductions: list = field(default_factory=list)  # analysis.reproduction.Reproduction
    tunings: list[dict] = field(default_factory=list)  # what `sbclab tune` wrote into tuning/, each search whole
    baseline: Path | None = None
    against_baseline: Diff | None = None  # these results (B) against the baseline's (A)
    set_aside: list[SetAside] = field(default_factory=list)  # damaged documents left out, named first in warnings

    @property
    def excluded(self) -> list[tuple[RunRecord, str]]:
        return [(r, exclusion_reason(r)) for r in self.runs if r.status != "headline"]

    @property
    def emulated(self) -> bool:
        return any(r.cluster.emulated for r in self.runs)

    @property
    def several_clusters(self) -> bool:
        return len(self.clusters) > 1

    def label(self, key: CellKey) -> str:
        """A cell's name in this report: with its cluster only when the report holds several."""
        return key.label(self.several_clusters)

    def series(self, run: RunRecord) -> dict | None:
        if not (run.measurements and run.measurements.series):
            return None
        path = self.results / run.measurements.series
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # a damaged series leaves the run's own figures standing
            return None
        return found if isinstance(found, dict) else None


# power.for_node's note when a configured source gave nothing: "SOURCE unavailable: WHY[; the model ...]".
_UNAVAILABLE = re.compile(r"^(?P<source>\S+) unavailable: (?P<why>.*?)(?:; the model estimate is used instead)?$")
_SHOWN = 6  # failed sources listed in the warning; the rest are counted


def power_warnings(runs: list[RunRecord], with_cluster: bool = False, estimated: bool | None = None) -> list[str]:
    """Which nodes' power is not a meter reading, and why: the model by configuration, or a configured
    source that failed (node, source, the first reason, and the runs it happened in).

    Read from each run's measurements: a failed source is in its node's power notes (the model stood
    in) or in the run's notes as "NODE: SOURCE unavailable: ..." (no figure at all). `estimated`
    says whether any counted figure is an estimate; None works it out from the runs."""
    chosen: set[str] = set()
    failed: dict[tuple[str, str], list[str]] = {}
    any_estimate = False
    for run in runs:
        m = run.measurements
        if m is None:
            continue
        where = f" ({cluster_identity(run)})" if with_cluster else ""
        for name, power in m.power.items():
            reasons = [found.group("source", "why") for found in map(_UNAVAILABLE.match, power.notes) if found]
            any_estimate |= power.estimate
            if reasons:
                source, why = reasons[0]
                failed.setdefault((name + where, f"{source} unavailable: {why}; the model estimate stands in"),
                                  []).append(run.run_id)
            elif power.estimate:
                chosen.add(name + where)
        for note in m.notes:
            name, _, rest = note.partition(": ")
            found = _UNAVAILABLE.match(rest)
            if found and name not in m.power:
                failed.setdefault((name + where, f"{found['source']} unavailable: {found['why']}; no power figure"),
                                  []).append(run.run_id)
    out = []
    if estimated if estimated is not None else any_estimate:
        text = ("Power is estimated (the profile's idle-to-load line by CPU utilisation) for some nodes; energy and "
                "performance-per-watt figures marked 'estimate' are not meter readings.")
        if chosen:
            text += f" The model is the configured source of {', '.join(sorted(chosen))}."
        if failed:
            text += f" The configured source failed for {', '.join(sorted({node for node, _ in failed}))} (next warning)."
        out.append(text)
    if failed:
        items = sorted(failed.items())
        listed = []
        for (node, why), run_ids in items[:_SHOWN]:
            runs_text = f"{len(run_ids)} runs, first {run_ids[0]}" if len(run_ids) > 1 else f"run {run_ids[0]}"
            listed.append(f"{node} ({runs_text}): {why}")
        more = f"; and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
        out.append("A configured power source gave no readings: " + "; ".join(listed) + more +
                   ". Check the meter or plug (address, network, permissions), or 'sbclab results show RESULTS RUN_ID' "
                   "for each run's notes.")
    return out


def tunings(results: Path) -> tuple[list[dict], list[str]]:
    """The searches `sbclab tune` kept in the results directory, each with its trials and the runs they
    rest on, and the files that could not be read (for the warnings, never dropped silently)."""
    found, unreadable = [], []
    for path in sorted((Path(results) / "tuning").glob("*.json")):
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            unreadable.append(f"{path}: {err}")
            continue
        if isinstance(document, dict) and isinstance(document.get("trials"), list):
            found.append({**document, "name": path.stem})
        else:
            unreadable.append(f"{path}: not a tuning's result")
    return found, unreadable


def build(results: Path, costs: Costs | None = None, baseline: Path | None = None, verdicts: bool = True) -> Report:
    """The report of a results directory; `verdicts` False leaves out each run's bottleneck verdict,
    which reads the run's series (what `sbclab compare` has no use for)."""
    runs, set_aside = read_runs(results)
    costs = costs or Costs()
    cells = group(runs)
    cell_figures = [figures(c, costs) for c in cells]
    comparisons = (speedups(cells) + storage_gains(cells) + engine_ratios(cells) + setup_ratios(cells)
                   + datanode_resources(cells))
    clusters = clusters_in(runs)
    several = len(clusters) > 1
    warnings = [set_aside_warning(results, set_aside)] if set_aside else []
    if several:
        warnings.append(f"These results come from {len(clusters)} different clusters ({'; '.join(clusters)}). "
                        "Their times are not comparable: each table keeps them apart, and speedups, gains and ratios "
                        "are computed within one cluster only. Report one cluster per results directory to avoid this.")
        scales = {round(r.scale.factor, 6) for r in runs if r.cluster.emulated}
        if len(scales) > 1:
            warnings.append(f"The emulated runs were made at {len(scales)} scale factors; nothing is computed across "
                            "them. One experiment runs all its shapes at one scale: run the worker counts, media and "
                            "boards to compare as one experiment, or give each the same cluster.scale.")
    if any(r.cluster.emulated for r in runs):
        factors = sorted({round(r.scale.factor, 3) for r in runs if r.cluster.emulated})
        warnings.append("Emulated results: the nodes were namespaces on one host, shaped to the board profiles and "
                        f"scaled by {', '.join(f'{f:g}' for f in factors)} (CPU, disk and network together). "
                        "Times are not those of real boards; ratios between cells are what emulation preserves.")
    for c in cells:
        warnings += c.warnings(several)
    warnings += power_warnings(runs, several, any(f.power_estimated for f in cell_figures))
    references = []
    for f in cell_figures:
        k = f.cell.key
        found = reference.matches(k.workload, k.engine, k.size_bytes or None, k.workers, k.board, k.storage,
                                  k.defining_parameters, f.cell.runs[0].versions if f.cell.runs else None)
        for p, sources in reference.once(found):
            references.append(ReferenceMatch(f, p, sources))
    report = Report(Path(results), runs, cells, cell_figures, comparisons, {}, references, clusters, costs, warnings,
                    datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), ["sbclab", *sys.argv[1:]],
                    set_aside=set_aside)
    if verdicts:
        report.verdicts = {r.run_id: verdict(r, report.series(r)) for r in runs}
    report.reproductions = reproduction.from_results(results, runs)
    report.tunings, unreadable = tunings(results)
    report.warnings += [f"a tuning's result could not be read, so the report leaves it out: {u}" for u in unreadable]
    if baseline is not None:
        theirs, left_out = read_summaries(baseline)
        if left_out:
            report.warnings.insert(1 if set_aside else 0, set_aside_warning(baseline, left_out))
        report.baseline = Path(baseline)
        report.against_baseline = diff.compare([s.run for s in theirs], [run_row(r) for r in runs])
    return report
