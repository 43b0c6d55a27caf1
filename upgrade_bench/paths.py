"""Where the suite's own files are: the repository root, which holds the scripts, configs/,
models/ (staged weights) and results/; and what a path that is no regular file is, for the
line that refuses it."""
import stat
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
         (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def file_kind(mode: int) -> str:
    """What a file of `mode` (os.stat's or os.lstat's st_mode) is, in words."""
    return next((what for test, what in KINDS if test(mode)), "a regular file")
