"""Output files that are whole or absent: written to temporary names beside their final
ones and renamed into place together, once every one of them is written.

A report folder is several files that belong together (report.md, its PNGs, points.csv);
a disk that fills up half way, or an error in the last figure, must leave the earlier report
whole rather than a new CSV cut mid-row beside an old page. os.replace is atomic within a
file system, and the temporary names live in the same folder, so each rename is too.
"""
import os
from contextlib import contextmanager


class Staged:
    def __init__(self):
        self.pending = []  # (temporary path, final path), in writing order

    @contextmanager
    def open(self, path: str, mode: str = "w", **kwargs):
        """A file object for `path`, written under a temporary name until commit()."""
        tmp = f"{path}.tmp-{os.getpid()}-{len(self.pending)}"
        try:
            with open(tmp, mode, **kwargs) as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            _remove(tmp)
            raise
        self.pending.append((tmp, path))

    def commit(self) -> None:
        """Every file into place; nothing is left under a temporary name."""
        for tmp, path in self.pending:
            os.replace(tmp, path)
        self.pending = []

    def discard(self) -> None:
        for tmp, _path in self.pending:
            _remove(tmp)
        self.pending = []


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def write_text(path: str, text: str) -> None:
    """One file, whole or not at all."""
    stage = Staged()
    try:
        with stage.open(path, "w", encoding="utf-8") as f:
            f.write(text)
        stage.commit()
    except BaseException:
        stage.discard()
        raise
