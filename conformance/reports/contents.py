"""What a package or a report folder holds, read as untrusted: every member within a stated
limit (how many, how large before and while inflating), nothing kept in memory but the few
documents `verify` parses, and every name a reader could be fooled by named as a problem: a
name twice (readers differ on which one they show), a name that leaves the folder (`..`, an
absolute path, a drive, a backslash), a link, a folder or a special file.

Over a limit is unreadable (exit 2, one line): no package the checker writes comes near one.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

MAX_MEMBERS = 32
"""A package holds eight files at most."""
MAX_FILE_BYTES = 512 * 1024 * 1024
"""Any other member, inflated: hashed as it is read, never held whole."""
MAX_TOTAL_BYTES = 1024 * 1024 * 1024
CHUNK = 1024 * 1024
# Windows drive letters and UNC roots: a name no folder-relative path starts with.
DRIVE = re.compile(r"^[A-Za-z]:")


class Unreadable(Exception):
    """Past a limit, or not readable at all; the message is one line."""


@dataclass
class Member:
    sha256: str
    data: bytes | None = None  # kept for the documents only
    damaged: bool = False  # its zip checksum or compression shows it was changed


@dataclass
class Contents:
    """The members by name, and the names that are refused (with why)."""

    members: dict[str, Member] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    refused: set[str] = field(default_factory=set)  # names there but not read (said why)
    total: int = 0

    def data(self, name: str) -> bytes | None:
        member = self.members.get(name)
        return None if member is None or member.damaged else member.data


def name_problem(name: str) -> str | None:
    """Why a member name is refused; None for a plain file name inside the folder."""
    if "\\" in name:
        return f"{name} has a backslash in its name (a folder separator on Windows)"
    if name.startswith("/") or DRIVE.match(name):
        return f"{name} is an absolute path"
    if ".." in name.split("/"):
        return f"{name} leaves the folder (..)"
    if "/" in name:
        return f"{name} is inside a folder, where a package holds none"
    if not name or name == ".":
        return "a member has no name"
    return None


def read_stream(name: str, stream, limit: int, keep: bool, contents: Contents) -> Member:
    """Hash `stream` chunk by chunk, stopping past `limit` (or the total's)."""
    hasher, parts, size = hashlib.sha256(), [], 0
    while chunk := stream.read(CHUNK):
        size += len(chunk)
        contents.total += len(chunk)
        if size > limit:
            raise Unreadable(f"{name} is larger than {limit} bytes, the limit for it")
        if contents.total > MAX_TOTAL_BYTES:
            raise Unreadable(f"the files are larger than {MAX_TOTAL_BYTES} bytes in all")
        hasher.update(chunk)
        if keep:
            parts.append(chunk)
    return Member(hasher.hexdigest(), b"".join(parts) if keep else None)


def zip_kind_problem(info: zipfile.ZipInfo) -> str | None:
    """A link, a folder or a special file, by the Unix mode a zip may carry."""
    mode = info.external_attr >> 16
    if info.is_dir():
        return f"{info.filename} is a folder"
    if stat.S_ISLNK(mode):
        return f"{info.filename} is a symbolic link"
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        return f"{info.filename} is a special file"
    return None


def read_package(path: Path, documents: dict[str, int]) -> Contents:
    """Every member of the zip, hashed; the bytes of those named in `documents` (each with
    its own limit: they are parsed, so held whole)."""
    contents = Contents()
    if path.exists() and not path.is_file():  # a FIFO would block, a device never end
        raise Unreadable(f"{path.name} is not a file")
    refuse_a_long_directory(path)
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        if len(infos) > MAX_MEMBERS:
            raise Unreadable(f"{path.name} holds {len(infos)} members, past {MAX_MEMBERS}")
        names = [info.filename for info in infos]
        for twice in sorted({name for name in names if names.count(name) > 1}):
            contents.problems.append(f"{twice} appears {names.count(twice)} times")
        for info in infos:
            refused = name_problem(info.filename) or zip_kind_problem(info)
            if refused or names.count(info.filename) > 1:
                contents.problems += [refused] if refused else []
                contents.refused.add(info.filename)
                continue
            contents.members[info.filename] = read_member(archive, info, documents, contents)
    return contents


def refuse_a_long_directory(path: Path) -> None:
    """Count the members from the zip's end record before zipfile reads its directory: a
    directory of a million entries is hundreds of MB of ZipInfo. (zipfile's reader of that
    record has been there, unchanged in use, since zip64; it handles zip64's too.)"""
    with path.open("rb") as handle:
        end = zipfile._EndRecData(handle)
    if end is None:
        raise zipfile.BadZipFile("not a zip file")
    entries, size = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]
    if entries > MAX_MEMBERS or size > MAX_MEMBERS * 1024:
        raise Unreadable(f"{path.name} holds {entries} members, past {MAX_MEMBERS}")


def read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, documents: dict[str, int], contents: Contents
) -> Member:
    keep = info.filename in documents
    limit = documents.get(info.filename, MAX_FILE_BYTES)
    if info.file_size > limit:  # said before inflating; the reading checks it again
        raise Unreadable(f"{info.filename} would inflate to {info.file_size} bytes, past {limit}")
    try:
        with archive.open(info) as stream:
            return read_stream(info.filename, stream, limit, keep, contents)
    except (zipfile.BadZipFile, zlib.error, EOFError):
        return Member("", damaged=True)
    except (NotImplementedError, RuntimeError):  # another compression, or encrypted
        raise Unreadable(
            f"{info.filename} is compressed or encrypted in a way not read here"
        ) from None


def read_folder(path: Path, documents: dict[str, int], ignored: set[str]) -> Contents:
    """Every file of the folder (not below it), hashed, links and special files refused;
    the folders named in `ignored` (the run's own working folders) left aside."""
    contents = Contents()
    with os.scandir(path) as listing:
        entries = list(itertools.islice(listing, MAX_MEMBERS + 1))  # never a million held
    if len(entries) > MAX_MEMBERS:
        raise Unreadable(f"{path} holds more than {MAX_MEMBERS} entries")
    for entry in sorted(entries, key=lambda entry: entry.name):
        if entry.is_symlink():
            contents.problems.append(f"{entry.name} is a symbolic link")
        elif entry.is_dir(follow_symlinks=False):
            if entry.name not in ignored:
                contents.problems.append(f"{entry.name} is a folder the evidence does not hold")
        elif not entry.is_file(follow_symlinks=False):
            contents.problems.append(f"{entry.name} is a special file")
        else:
            contents.members[entry.name] = read_file(Path(entry.path), documents, contents)
    return contents


def read_file(path: Path, documents: dict[str, int], contents: Contents) -> Member:
    keep = path.name in documents
    limit = documents.get(path.name, MAX_FILE_BYTES)
    # O_NOFOLLOW: a file swapped for a link since it was listed is not followed.
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(descriptor, "rb") as stream:
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            raise Unreadable(f"{path.name} is not a regular file")
        return read_stream(path.name, stream, limit, keep, contents)
