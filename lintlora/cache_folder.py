"""The results cache's folder on disk (:mod:`lintlora.cache`): created and written without
following links, with the private key that signs its entries.

**Layout.** ``<cache>/CACHEDIR.TAG`` (https://bford.info/cachedir/), ``<cache>/v<FORMAT>/``
(:class:`CacheFolder`, the format folder), in it :data:`SECRET_NAME` (the key) and the entries
``<2 hex>/<sha256>.json`` (one *shard* folder per first two hex digits of the key).

**Never through a link.** The folder the user names (``--cache-dir``, ``$XDG_CACHE_HOME``,
``~/.cache``) is theirs: it is followed if it is a link, and its missing components are
created one by one (mode 0700), each checked with ``lstat`` to be a real folder. Everything
*inside* it is opened relative to a descriptor of its folder (``dir_fd``) with ``O_NOFOLLOW``:

- the format folder and each shard folder are opened with ``O_DIRECTORY|O_NOFOLLOW``; one that
  is a symbolic link (planted, or restored from a CI cache) is removed (the link, never what it
  points to) and created again as a real folder;
- every file is created with ``O_CREAT|O_EXCL|O_NOFOLLOW`` (mode 0600) under a random name
  (:func:`secrets.token_hex`, so it cannot be planted in advance) and then renamed into place
  (``rename`` replaces a link at the final name, it does not write through it);
- ``CACHEDIR.TAG`` is created the same way, only when no such name exists (a dangling link
  there is left alone, never written through).

Where the platform cannot open names relative to a folder (``os.supports_dir_fd``: Windows),
paths are used, each checked with ``lstat`` just before use: the same rules, with a race
window against a concurrent local writer.

**The key** (:data:`SECRET_BYTES` random bytes from :mod:`secrets`) is read only when it is a
regular file (``fstat`` on a descriptor opened with ``O_NOFOLLOW``) owned by this user with
mode 0600 and of the right size. Otherwise (a link, a key readable by others as a git checkout
or a copy leaves files, another user's key, a truncated one) it is **replaced**: a new key is
created under a random name (``O_EXCL|O_NOFOLLOW``, 0600) and linked (``link``, which fails if a
concurrent run created one first) or renamed over the bad one; every entry signed with the old
key is then a miss and is rewritten. Only when no valid key can be installed (the name is a
folder, the format folder is not writable) is the cache turned off for the run. Replacing,
rather than refusing, keeps the cache working after a restore that loses modes, and trusts
nothing the bad key signed.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["SECRET_NAME", "SECRET_BYTES", "CacheFolder"]

SECRET_NAME = "hmac.key"
"""The key file's name in the format folder."""

SECRET_BYTES = 32
"""Length of the key: 256 bits, SHA-256's block-sized security level (RFC 2104, section 3:
keys shorter than the hash output are discouraged)."""

FILE_MODE = 0o600
FOLDER_MODE = 0o700

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_TAG = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
        b"# This file marks a cache folder of lintlora (safe to delete).\n")

_DIR_FD = (bool(_NOFOLLOW and _DIRECTORY)
           and all(f in os.supports_dir_fd for f in (os.open, os.mkdir, os.unlink, os.rename,
                                                      os.stat)))
"""Whether names are opened relative to a folder's descriptor (POSIX)."""

_LINK = _DIR_FD and os.link in os.supports_dir_fd and os.link in os.supports_follow_symlinks


def _temporary_name(name: str) -> str:
    import secrets

    return f".{name}.{secrets.token_hex(8)}.tmp"


class _Folder:
    """A folder of the cache: a descriptor (POSIX) or a path (elsewhere), and the operations the
    cache needs on names in it, none of which follows a link at that name."""

    def __init__(self, path: str, fd: int | None) -> None:
        self.path = path
        self.fd = fd

    def _at(self, name: str) -> tuple[str, dict]:
        if self.fd is not None:
            return name, {"dir_fd": self.fd}
        return os.path.join(self.path, name), {}

    def lstat(self, name: str) -> os.stat_result:
        where, at = self._at(name)
        return os.stat(where, follow_symlinks=False, **at)

    def unlink(self, name: str) -> None:
        where, at = self._at(name)
        os.unlink(where, **at)

    def create(self, name: str, mode: int = FILE_MODE) -> int:
        """A new file ``name`` opened for writing; ``FileExistsError`` when the name exists (a
        dangling link included)."""
        where, at = self._at(name)
        if self.fd is None and os.path.lexists(where):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), where)
        return os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
                       | _BINARY, mode, **at)

    def open_read(self, name: str) -> int:
        where, at = self._at(name)
        if self.fd is None and os.path.islink(where):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), where)
        return os.open(where, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC | _BINARY, **at)

    def rename(self, source: str, target: str) -> None:
        """Atomically put ``source`` at ``target`` (a link at ``target`` is replaced itself)."""
        if self.fd is not None:
            os.rename(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        else:
            os.replace(os.path.join(self.path, source), os.path.join(self.path, target))

    def link(self, source: str, target: str) -> None:
        """Give ``source`` the name ``target`` too; ``FileExistsError`` when ``target`` exists."""
        if _LINK and self.fd is not None:
            os.link(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
            return
        where = os.path.join(self.path, target)
        if os.path.lexists(where):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), where)
        self.rename(source, target)

    def write_new(self, name: str, data: bytes) -> None:
        """Write ``data`` as the file ``name``: under a random name first, then renamed into
        place, so a reader sees the old file or the whole new one and a link planted at either
        name is never written through.

        Raises:
            OSError: it could not be written (nothing is left behind).
        """
        temporary = _temporary_name(name)
        fd = self.create(temporary)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            self.rename(temporary, name)
        except OSError:
            try:
                self.unlink(temporary)
            except OSError:
                pass
            raise

    def subfolder(self, name: str, create: bool = True) -> "_Folder":
        """The folder ``name`` in this one, created when missing; a symbolic link there is
        removed and replaced by a real folder.

        Raises:
            OSError: it cannot be created or opened, or ``name`` is something else than a folder.
        """
        for attempt in range(2):
            if create:
                where, at = self._at(name)
                try:
                    os.mkdir(where, FOLDER_MODE, **at)
                except FileExistsError:
                    pass
            try:
                return self._open_folder(name)
            except OSError as exc:
                if attempt or exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                info = self.lstat(name)
                if not stat.S_ISLNK(info.st_mode):
                    raise
                self.unlink(name)  # the link only, never what it points to
        raise OSError(errno.ELOOP, "a symbolic link keeps reappearing", name)  # pragma: no cover

    def _open_folder(self, name: str) -> "_Folder":
        where, at = self._at(name)
        path = os.path.join(self.path, name)
        if self.fd is None:
            info = os.lstat(where)
            if stat.S_ISLNK(info.st_mode):
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), where)
            if not stat.S_ISDIR(info.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), where)
            return _Folder(path, None)
        fd = os.open(where, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, **at)
        return _Folder(path, fd)

    def close(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            try:
                os.close(fd)
            except OSError:
                pass


def _make_folders(path: str) -> None:
    """Create ``path`` and the folders above it that are missing (mode 0700), each checked to be
    a real folder once created. Folders that exist are the user's and followed if links.

    Raises:
        OSError: a component exists and is not a folder, or cannot be created.
    """
    missing = []
    current = path
    for _ in range(4096):  # bounded: a path has far fewer components
        if os.path.isdir(current):
            break
        if os.path.lexists(current):
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", current)
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, FOLDER_MODE)
        except FileExistsError:
            pass
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", folder)


def _valid_secret(fd: int) -> bytes | None:
    """The key read from ``fd`` when the file is one this user made private, else ``None``."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size != SECRET_BYTES:
        return None
    if hasattr(os, "geteuid"):  # POSIX: ownership and permissions mean something
        if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) != FILE_MODE:
            return None
    data = os.read(fd, SECRET_BYTES + 1)
    return data if len(data) == SECRET_BYTES else None


class CacheFolder:
    """The format folder of a cache, opened for the run.

    Args:
        directory: the cache folder (absolute); created when missing.
        name: the format folder's name (``v3``).

    Attributes:
        path: the format folder's path (entries are read by path: see :meth:`entry_path`).
        secret: the key that signs entries (:data:`SECRET_BYTES` bytes).

    Raises:
        OSError: the folder cannot be created, opened or written, or no valid key can be
            installed; ``strerror`` or the message says why.
    """

    def __init__(self, directory: str, name: str) -> None:
        _make_folders(directory)
        top_fd = os.open(directory, os.O_RDONLY | _DIRECTORY | _CLOEXEC) if _DIR_FD else None
        top = _Folder(directory, top_fd)
        try:
            self._root = top.subfolder(name)
            try:
                if not os.access(self._root.path, os.W_OK):
                    raise PermissionError(errno.EACCES, "not writable", self._root.path)
                self.secret = self._load_secret()
            except BaseException:
                self._root.close()
                raise
            self._tag(top)
        finally:
            top.close()
        self.path = self._root.path

    @staticmethod
    def _tag(top: _Folder) -> None:
        try:
            fd = top.create("CACHEDIR.TAG", 0o644)
        except OSError:  # exists (a link included: left alone), or not writable
            return
        try:
            os.write(fd, _TAG)
        except OSError:
            pass
        finally:
            os.close(fd)

    def _load_secret(self) -> bytes:
        """The key, installed or replaced first when needed (see the module docstring).

        Raises:
            OSError: no private key can be read or installed (``strerror`` says why).
        """
        for _ in range(4):  # bounded: concurrent runs replacing bad keys settle at once
            try:
                fd = self._root.open_read(SECRET_NAME)
            except FileNotFoundError:
                self._install_secret(replace=False)
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EISDIR):
                    raise
                self._install_secret(replace=True)  # a link (or a socket): replaced
                continue
            try:
                secret = _valid_secret(fd)
            finally:
                os.close(fd)
            if secret is not None:
                return secret
            self._install_secret(replace=True)
        raise OSError(errno.EPERM, f"its key file {SECRET_NAME} cannot be made private")

    def _install_secret(self, *, replace: bool) -> None:
        try:
            self._write_secret(replace)
        except OSError as exc:
            what = "replaced" if replace else "created"
            raise OSError(exc.errno, f"its key file {SECRET_NAME} cannot be {what}: "
                                     f"{exc.strerror or exc}") from None

    def _write_secret(self, replace: bool) -> None:
        temporary = _temporary_name(SECRET_NAME)
        fd = self._root.create(temporary)
        try:
            try:
                if hasattr(os, "fchmod"):
                    os.fchmod(fd, FILE_MODE)  # whatever the umask
                import secrets

                os.write(fd, secrets.token_bytes(SECRET_BYTES))
            finally:
                os.close(fd)
            if replace:
                self._root.rename(temporary, SECRET_NAME)
                return
            try:
                self._root.link(temporary, SECRET_NAME)
            except FileExistsError:
                pass  # a concurrent run installed one first: that one is read
        except OSError:
            self._unlink_quietly(temporary)
            raise
        self._unlink_quietly(temporary)

    def _unlink_quietly(self, name: str) -> None:
        try:
            self._root.unlink(name)
        except OSError:
            pass

    def entry_path(self, shard: str, name: str) -> str:
        """Where entry ``name`` of ``shard`` is read from (with ``O_NOFOLLOW`` on the entry;
        a linked shard folder can only lead to files the key does not sign)."""
        return os.path.join(self.path, shard, name)

    def write(self, shard: str, name: str, data: bytes) -> bool:
        """Write entry ``name`` into ``shard`` (see the module docstring); ``False`` when it
        cannot be written."""
        try:
            folder = self._root.subfolder(shard)
        except OSError:
            return False
        try:
            folder.write_new(name, data)
        except OSError:
            return False
        finally:
            folder.close()
        return True

    def close(self) -> None:
        """Close the format folder's descriptor (idempotent)."""
        self._root.close()
