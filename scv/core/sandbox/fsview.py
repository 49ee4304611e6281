"""The file system as the sandbox's planning sees it (`policy.PathView`, `rules.FsView`)."""

import os
import stat


class RealFs:
    def kind(self, path: str) -> str | None:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return None
        if stat.S_ISDIR(mode):
            return "dir"
        if stat.S_ISLNK(mode):
            return "link"
        return "file" if stat.S_ISREG(mode) else "other"

    def children(self, path: str) -> list[str]:
        try:
            return os.listdir(path)
        except OSError:
            return []

    def entries(self, path: str) -> list[tuple[str, str | None]]:
        found = []
        try:
            with os.scandir(path) as listing:
                for entry in listing:
                    try:
                        kind = ("link" if entry.is_symlink() else "dir" if entry.is_dir(follow_symlinks=False)
                                else "file" if entry.is_file(follow_symlinks=False) else "other")
                    except OSError:
                        kind = None
                    found.append((entry.name, kind))
        except OSError:
            return []
        return found

    def resolve(self, path: str) -> str:
        """The path the kernel reaches (cheaper than os.path.realpath's walk); as given if gone."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return os.path.realpath(path)
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return os.path.realpath(path)
        finally:
            os.close(fd)


REAL_FS = RealFs()
