"""What an ingest run did, counted from its batches' results, and said in a few lines."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from warehouse.run.worker import BatchResult


@dataclass
class IngestSummary:
    run_id: str
    root: str = ""  # the --root given: the hints name it
    committed: bool = False
    files_seen: int = 0
    files_unchanged: int = 0
    files_ingested: int = 0
    files_unrecognised: int = 0
    files_unreadable: int = 0
    files_not_records: int = 0  # files a format knows hold no records (sources.reason says why)
    files_removed: int = 0
    files_gone: int = 0  # catalogued under the given paths, no longer on disk, kept (no --prune)
    records_ingested: int = 0
    records_quarantined: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def add(self, r: BatchResult) -> None:
        """Count what one batch did."""
        self.records_ingested += r.records_ingested
        self.records_quarantined += r.records_quarantined
        self.bytes_read += r.bytes_read
        self.files_unchanged += len(r.unchanged)
        self.files_seen -= r.ignored
        for row in r.sources:
            if row["status"] in ("ingested", "empty"):
                self.files_ingested += 1
            elif row["status"] == "not_records":
                self.files_not_records += 1
            elif row["status"] == "unrecognised":
                self.files_unrecognised += 1
            else:
                self.files_unreadable += 1

    def text(self) -> str:
        mb = self.bytes_read / 1e6
        rate = mb / self.seconds if self.seconds > 0 else 0.0
        parts = [
            f"{self.files_seen} files: {self.files_ingested} ingested, {self.files_unchanged} unchanged",
        ]
        if self.files_not_records:
            parts.append(f"{self.files_not_records} not records")
        if self.files_unrecognised:
            parts.append(f"{self.files_unrecognised} unrecognised")
        if self.files_unreadable:
            parts.append(f"{self.files_unreadable} unreadable")
        if self.files_removed:
            parts.append(f"{self.files_removed} removed")
        line = ", ".join(parts)
        line += (
            f"; {self.records_ingested} records ingested, {self.records_quarantined} quarantined"
            f"; {mb:.1f} MB in {self.seconds:.2f}s ({rate:.1f} MB/s)"
        )
        out = [line]
        if self.records_quarantined:
            out.append("see them with: warehouse sql \"SELECT source_path, locator, stage, error FROM quarantine\" "
                       f"--root {shlex.quote(self.root or '...')}")
        if self.files_gone:
            out.append(
                f"{self.files_gone} catalogued files under these paths no longer exist; "
                "their rows are kept: run again with --prune to remove them"
            )
        out += self.notes
        return "\n".join(out)
