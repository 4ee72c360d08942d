#!/usr/bin/env python3
"""Every public C function says who may call it when: the doc comment that documents it
(the one right above it, or the comment opening its Doxygen member group) has a
"Thread-safety:" line (STYLE: each function's thread-safety is part of its contract).

Usage: check_thread_safety.py INCLUDE_DIR (the folder holding distribute/*.h)
"""
import glob
import os
import re
import sys

DECLARATION = re.compile(r"DIST_API[^;{]*?\b(dist_\w+)\s*\(")
GROUP_MARKER = re.compile(r"^/\*\*\s*(@\{|@\}|@name\b[^*]*)\s*$")


def documenting_comment(text, position):
    """The doc comment that documents the declaration at `position`, skipping group markers
    and the declarations of its member group."""
    before = text[:position]
    while True:
        end = before.rfind("*/")
        start = before.rfind("/**", 0, end)
        if start < 0:
            return ""
        comment = before[start:end].strip()
        if GROUP_MARKER.match(comment):
            before = before[:start]
            continue
        # A declaration between the comment and this one: inside a member group, the
        # comment documents the run of declarations that follows it, this one included,
        # unless a group end lies between.
        between = before[end:]
        if "@}" in between:
            return ""
        return comment


def main():
    include = sys.argv[1]
    missing = []
    count = 0
    paths = glob.glob(os.path.join(include, "distribute", "*.h")) + glob.glob(os.path.join(include, "distribute", "*.h.in"))
    for path in sorted(paths):
        text = open(path, encoding="utf-8").read()
        for match in DECLARATION.finditer(text):
            count += 1
            if "Thread-safety" not in documenting_comment(text, match.start()):
                missing.append(f"{os.path.basename(path)}: {match.group(1)}")
    for name in missing:
        print("FAIL: no Thread-safety line documents", name)
    if missing:
        return 1
    print(f"thread-safety: every one of the {count} public functions has its line")
    return 0


if __name__ == "__main__":
    sys.exit(main())
