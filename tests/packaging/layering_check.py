#!/usr/bin/env python3
"""The core's layering, from the folders' own declarations (core/CMakeLists.txt writes
them to <build>/layers/declared.txt as "folder: layer ..."):

1. every folder's include tree (<build>/layers/<folder>/core) holds exactly the folder and
   everything its declared layers reach, so nothing undeclared can compile;
2. every file of core/<folder> includes, by itself, only its own folder and the layers the
   folder declares: a skip-level include (a folder reaching a layer that only one of its
   layers builds on) fails here even though the transitive tree would compile it;
3. the check of (2) catches a skip-level include: core/input including core/gloo/ (which
   input reaches only through strategy and backend) is reported.

Usage: layering_check.py BUILD_DIR SOURCE_DIR
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"core/(\w+)/')


def declared_layers(build):
    layers = {}
    for line in open(os.path.join(build, "layers", "declared.txt"), encoding="utf-8"):
        folder, _, below = line.partition(":")
        if folder.strip():
            layers[folder.strip()] = below.split()
    return layers


def reach(layers, folder):
    seen = {folder}
    stack = list(layers[folder])
    while stack:
        below = stack.pop()
        if below not in seen:
            seen.add(below)
            stack.extend(layers.get(below, []))
    return seen


def undeclared_includes(layers, folder, path, lines):
    allowed = {folder, *layers[folder]}
    found = []
    for number, line in enumerate(lines, 1):
        match = INCLUDE.match(line)
        if match and match.group(1) in layers and match.group(1) not in allowed:
            found.append(f"{path}:{number}: core/{folder} includes core/{match.group(1)}, which it does not declare")
    return found


def main():
    build, source = sys.argv[1], sys.argv[2]
    layers = declared_layers(build)
    problems = []
    for folder in layers:
        tree = os.path.join(build, "layers", folder, "core")
        have = set(os.listdir(tree)) if os.path.isdir(tree) else set()
        want = reach(layers, folder)
        if have != want:
            problems.append(f"core/{folder} sees {sorted(have)}, its declarations reach {sorted(want)}")
        directory = os.path.join(source, "core", folder)
        for name in sorted(os.listdir(directory)):
            if name.endswith((".h", ".cc")):
                path = os.path.join(directory, name)
                problems += undeclared_includes(layers, folder, os.path.relpath(path, source),
                                                open(path, encoding="utf-8").read().split("\n"))
    # The check itself catches a skip-level include.
    if "input" in layers and "gloo" in reach(layers, "input") and "gloo" not in layers["input"]:
        probe = undeclared_includes(layers, "input", "probe.cc", ['#include "core/gloo/gloo_transport.h"'])
        if not probe:
            problems.append("a skip-level include (core/input -> core/gloo) was not reported")
    else:
        problems.append("the probe's premise changed: input should reach gloo only through its layers")
    for problem in problems:
        print("FAIL:", problem)
    if problems:
        return 1
    print(f"layering: {len(layers)} folders; each sees what its declarations reach and includes only what it declares")
    return 0


if __name__ == "__main__":
    sys.exit(main())
