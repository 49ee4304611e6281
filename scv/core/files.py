"""Files SCV writes for itself: private folders, and the one atomic write (a temporary file in the
same folder, flushed, renamed), used for state, markers, imported credentials and batch results."""

import os
from pathlib import Path


def ensure_folder(path: Path) -> None:
    """`path` as a 0700 folder; any folder created on the way (such as `state/`) is 0700 too."""
    missing = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:     # another SCV process made it meanwhile
            pass
    os.chmod(path, 0o700)


def write_atomic(path: Path, data: bytes, *, private_folder: bool = True) -> None:
    """Writes `data` to `path` through a temporary file in the same folder (mode 0600), flushed to
    disk and renamed over `path`: a reader sees the old file or the new one, never a part. With
    `private_folder` (SCV's own state) the folder is made 0700 first; a user's folder is left as
    it is and must exist."""
    if private_folder:
        ensure_folder(path.parent)
    import tempfile     # a first write: tempfile loads random and shutil (its compression modules)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
