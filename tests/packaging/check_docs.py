#!/usr/bin/env python3
"""The README and docs/ stay true to the repository.

1. Every relative link in README.md, docs/ and the bindings' READMEs resolves to a file or
   folder inside the repository (a link that leaves it, like ../shared/, fails).
2. Every code example (a fenced block in C, C++, Java, Go or Rust) in README.md and docs/
   is compiled and run by a test, in one of three ways, named by a comment on the line
   before its fence:
     <!-- file: PATH -->     the block is PATH exactly (a program a test builds and runs);
     <!-- excerpt: PATH -->  the block's lines appear in PATH in the same order (blank
                             lines, and lines that are only "...", "// ..." or "/* ... */",
                             may be left out or added): an excerpt of a compiled program;
     <!-- extracted: TEST --> a test (the file TEST) extracts the block and compiles it;
                             TEST must name this document.
   A block with none of them fails, as does a marker whose file does not match.

Usage: check_docs.py REPOSITORY_ROOT
"""
import os
import re
import sys

LANGUAGES = {"c", "cpp", "java", "go", "rust"}
MARKER = re.compile(r"^<!-- (file|excerpt|extracted): (\S+) -->$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
ELLIPSIS = {"...", "// ...", "/* ... */", "# ..."}


def documents(root):
    found = [os.path.join(root, "README.md")]
    for folder in ("docs", "bindings"):
        for directory, _, names in os.walk(os.path.join(root, folder)):
            found += [os.path.join(directory, n) for n in sorted(names) if n.endswith(".md")]
    return found


def check_links(root, path, text, problems):
    in_fence = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            in_fence = not in_fence
        if in_fence:
            continue
        for target in LINK.findall(line):
            if re.match(r"^(https?:|mailto:|#)", target):
                continue
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target.split("#")[0]))
            if not resolved.startswith(os.path.normpath(root) + os.sep):
                problems.append(f"{path}:{number}: link {target} leaves the repository")
            elif not os.path.exists(resolved):
                problems.append(f"{path}:{number}: link {target} resolves to nothing ({resolved})")


def meaningful(lines):
    return [l.strip() for l in lines if l.strip() and l.strip() not in ELLIPSIS]


def is_subsequence(needle, haystack):
    position = 0
    for line in needle:
        while position < len(haystack) and haystack[position] != line:
            position += 1
        if position == len(haystack):
            return False, line
        position += 1
    return True, None


def check_examples(root, path, text, problems):
    lines = text.split("\n")
    number = 0
    while number < len(lines):
        line = lines[number]
        if not line.startswith("```"):
            number += 1
            continue
        language = line[3:].strip()
        end = number + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        block = lines[number + 1:end]
        where = f"{os.path.relpath(path, root)}:{number + 1}"
        if language in LANGUAGES:
            marker = MARKER.match(lines[number - 1]) if number > 0 else None
            if marker is None:
                problems.append(f"{where}: a {language} example without a <!-- file/excerpt/extracted: ... --> marker")
            else:
                kind, target = marker.groups()
                target_path = os.path.join(root, target)
                if not os.path.isfile(target_path):
                    problems.append(f"{where}: {kind} {target} is not a file of the repository")
                else:
                    source = open(target_path, encoding="utf-8").read()
                    if kind == "file" and source.rstrip("\n") != "\n".join(block).rstrip("\n"):
                        problems.append(f"{where}: the block is not {target} as it is")
                    elif kind == "excerpt":
                        ok, missing = is_subsequence(meaningful(block), meaningful(source.split("\n")))
                        if not ok:
                            problems.append(f"{where}: not an excerpt of {target}: {missing!r} is not there (in order)")
                    elif kind == "extracted" and os.path.basename(path) not in source:
                        problems.append(f"{where}: {target} does not name {os.path.basename(path)}")
        number = end + 1


def main():
    root = os.path.abspath(sys.argv[1])
    problems = []
    checked = 0
    for path in documents(root):
        text = open(path, encoding="utf-8").read()
        check_links(root, path, text, problems)
        if os.path.basename(path) == "README.md" and os.path.dirname(path) != root:
            continue  # the bindings' READMEs: links only
        check_examples(root, path, text, problems)
        checked += 1
    for problem in problems:
        print("FAIL:", problem)
    if problems:
        return 1
    print(f"docs: every link resolves and every example is a compiled file, in {checked} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
