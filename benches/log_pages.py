#!/usr/bin/env python3
"""Which tables and indexes the log's pages belong to, commit by commit.

    python3 benches/log_pages.py <copy of the database file> <copy of its -wal file> [rows]

Copy both files while the coordinator writes (the -wal file first: the writer starts the log
over from its beginning after each checkpoint, so a copy holds the commits since the last
start). Every frame of the log is one page a commit wrote; this reads the frames of the
log's current generation, takes the last 200 commits, and names each page's b-tree from the
database file (SQLite's `dbstat`). Pages the file did not have at its last checkpoint are
counted apart. Only the Python standard library is used.
"""

import collections
import sqlite3
import struct
import sys

LAST = 200


def commits_of(wal):
    """The page numbers of each commit in the log's current generation, oldest first."""
    data = open(wal, "rb").read()
    _, _, page_size, _, salt1, salt2, _, _ = struct.unpack(">8I", data[:32])
    commits, current, offset = [], [], 32
    while offset + 24 + page_size <= len(data):
        page, size_after, s1, s2 = struct.unpack(">4I", data[offset : offset + 16])
        if (s1, s2) != (salt1, salt2):
            break  # a frame of an earlier generation: the log was started over before it
        current.append(page)
        if size_after:  # a commit's last frame
            commits.append(current)
            current = []
        offset += 24 + page_size
    return commits


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    db, wal = sys.argv[1], sys.argv[2]
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    commits = commits_of(wal)[-LAST:]
    if not commits:
        sys.exit("no commit in this log's current generation")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    owner = {page: name for name, page in con.execute("SELECT name, pageno FROM dbstat")}
    pages = collections.Counter(
        owner.get(page, "(pages new since the last checkpoint)") for c in commits for page in c
    )
    n = len(commits)
    print(f"{n} commits, {sum(pages.values()) / n:.1f} pages a commit")
    for name, count in pages.most_common(rows):
        print(f"{count / n:6.1f}  {name}")


if __name__ == "__main__":
    main()
