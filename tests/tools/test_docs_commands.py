#!/usr/bin/env python3
"""Every seam command line the docs show names a subcommand and options that exist.

Reads README.md and docs/**/*.md, takes every `seam ...` and `seam-gpu ...` command
line (in fenced blocks: lines that start with `$ seam`, `seam`, `build/tools/seam` or a
YAML `- ` item of one; in inline code: spans that start so), and checks that
`seam <sub> --help` exits 0 and lists every `--option` the line uses (`seam db import`:
the nested subcommand's help). A line whose subcommand is written `a|b` is checked for
each. seam-gpu lines are checked only when the seam-gpu binary exists (CUDA builds).

A line that is wrong on purpose (an error shown) is marked on its page, on a line of
its own, with
    <!-- docs-test: wrong: TEXT -->
which exempts the page's command lines that start with TEXT; a marker that exempts
nothing fails (docs/contributing.md). Environment: SEAM_BIN (required), SEAM_GPU_BIN
(default: seam-gpu beside SEAM_BIN), SEAM_DOCS_ROOT (default: this checkout).
Every relative link of those pages must name a file, and a heading there when it
has an anchor (the glossary's terms are linked so).
Run: SEAM_BIN=build/tools/seam python3 -m unittest tests/tools/test_docs_commands.py
"""
import glob
import os
import re
import subprocess
import unittest

ROOT = os.environ.get("SEAM_DOCS_ROOT") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FENCE = re.compile(r"^\s*(```|~~~)")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*wrong:\s*(.*?)\s*-->\s*$")
# A command line's start: an optional prompt, YAML item or build path, then the binary.
START = re.compile(r"^(?:\$\s+|-\s+)?(?:[^\s=]*/)?(seam(?:-gpu)?)(?=\s|$)(.*)$")
INLINE = re.compile(r"`([^`]+)`")
OPTION = re.compile(r"(?<![\w-])(--[A-Za-z0-9][\w-]*)")
WORD = re.compile(r"^[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*$")
# Where a shell line stops being seam's arguments.
SHELL_TAIL = re.compile(r"\s(\|\||&&|;|>>?|2>|#)\s.*$|\s(\||>)\s*\S*$")
HELP_OPTION = re.compile(r"^\s+((?:-\w,)?--[\w-]+(?:,--[\w-]+)*)")


class Command:
    def __init__(self, page, line, text, binary, rest):
        self.page, self.line, self.text, self.binary = page, line, text, binary
        self.rest = SHELL_TAIL.sub("", rest)

    def where(self):
        return f"{os.path.relpath(self.page, ROOT)}:{self.line}: {self.text}"


def pages():
    found = [os.path.join(ROOT, "README.md")]
    found += sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return found


def commandsOf(page):
    """(commands, markers) of one page; markers: [TEXT, uses]."""
    with open(page, encoding="utf-8") as f:
        lines = f.read().split("\n")
    commands, markers, fenced, prose = [], [], False, []

    def take(number, text):
        text = " ".join(text.split())
        m = START.match(text)
        if m:
            commands.append(Command(page, number, text, m.group(1), m.group(2)))

    def flushProse():
        # Inline code may run over a line break, never over a blank line.
        if not prose:
            return
        joined = "\n".join(t for _, t in prose)
        for m in INLINE.finditer(joined):
            number = prose[0][0] + joined.count("\n", 0, m.start())
            take(number, m.group(1).replace("\\|", "|"))  # a table cell's escaped pipe
        prose.clear()

    pending = ""
    for number, raw in enumerate(lines, 1):
        for m in MARKER.finditer(raw):
            markers.append([m.group(1), 0])
        if FENCE.match(raw):
            flushProse()
            fenced = not fenced
            continue
        if fenced:
            # A line ending in a backslash continues on the next one.
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            take(number, (pending + raw).strip())
            pending = ""
        elif raw.strip():
            prose.append((number, raw))
        else:
            flushProse()
    flushProse()
    return commands, markers


class Helps:
    """`--help` of each (binary, subcommand path), asked once."""

    def __init__(self, binaries):
        self.binaries, self.cache = binaries, {}

    def get(self, binary, path):
        key = (binary, tuple(path))
        if key not in self.cache:
            run = subprocess.run([self.binaries[binary], *path, "--help"], capture_output=True,
                                 text=True, timeout=60)
            self.cache[key] = (run.returncode, run.stdout + run.stderr)
        return self.cache[key]

    def options(self, binary, path):
        code, text = self.get(binary, path)
        found = set()
        for line in text.split("\n"):
            m = HELP_OPTION.match(line)
            if m:
                found.update(o.strip() for o in m.group(1).split(",") if o.startswith("--"))
        return found

    def subcommands(self, binary, path):
        code, text = self.get(binary, path)
        if "Subcommands:" not in text:
            return set()
        tail = text.split("Subcommands:", 1)[1]
        return {m.group(1) for m in re.finditer(r"^\s+([a-z][\w-]*)\s", tail, re.M)}


def problems(command, helps):
    """What is wrong with one command line, as sentences (empty: it is true)."""
    words = command.rest.split()
    if not words or words[0].startswith("-"):
        return [f"{command.binary} has no option {o}" for o in OPTION.findall(command.rest)
                if o not in helps.options(command.binary, [])]
    if not WORD.match(words[0]):
        return []  # a placeholder (`seam <sub>`, `seam ...`), not a command line
    found = []
    for sub in words[0].split("|"):
        path = [sub]
        code, _ = helps.get(command.binary, path)
        if code != 0:
            found.append(f"`{command.binary} {sub} --help` exits {code}: no such subcommand")
            continue
        nested = helps.subcommands(command.binary, path)
        if nested and len(words) > 1:
            for inner in words[1].split("|"):
                if inner not in nested:
                    found.append(f"`{command.binary} {sub}` has no subcommand {inner}")
                    continue
                found += missingOptions(command, helps, path + [inner])
        else:
            found += missingOptions(command, helps, path)
    return found


def missingOptions(command, helps, path):
    known = helps.options(command.binary, path)
    name = " ".join([command.binary] + path)
    return [f"`{name} --help` does not list {o}" for o in OPTION.findall(command.rest)
            if o not in known]


def slug(heading):
    """A heading's anchor as GitHub makes it (lower case, punctuation dropped)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchorsOf(page):
    found, fenced = set(), False
    with open(page, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
            m = None if fenced else re.match(r"^#+\s+(.*)$", line)
            if m:
                base, n = slug(m.group(1)), 1
                name = base
                while name in found:
                    name, n = f"{base}-{n}", n + 1
                found.add(name)
    return found


def brokenLinks(page):
    """Relative links of a page whose file or heading does not exist."""
    with open(page, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    broken = []
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            continue  # a URL
        name, _, anchor = target.partition("#")
        path = os.path.normpath(os.path.join(os.path.dirname(page), name)) if name else page
        if not os.path.exists(path):
            broken.append(f"{os.path.relpath(page, ROOT)}: {target}: no such file")
        elif anchor and path.endswith(".md") and anchor not in anchorsOf(path):
            broken.append(f"{os.path.relpath(page, ROOT)}: {target}: no such heading")
    return broken


def binaries():
    seam = os.environ.get("SEAM_BIN", "")
    gpu = os.environ.get("SEAM_GPU_BIN") or os.path.join(os.path.dirname(seam), "seam-gpu")
    return seam, gpu


class DocsCommands(unittest.TestCase):
    def test_every_documented_command_line_names_a_subcommand_and_options_that_exist(self):
        seam, gpu = binaries()
        self.assertTrue(os.access(seam, os.X_OK), f"SEAM_BIN is not an executable: {seam!r}")
        have_gpu = os.access(gpu, os.X_OK)
        helps = Helps({"seam": seam, "seam-gpu": gpu})
        failures, checked, skipped_gpu, stale = [], 0, 0, []
        for page in pages():
            commands, markers = commandsOf(page)
            for command in commands:
                marked = [m for m in markers if command.text.startswith(m[0])]
                for m in marked:
                    m[1] += 1
                if marked:
                    continue
                if command.binary == "seam-gpu" and not have_gpu:
                    skipped_gpu += 1
                    continue
                checked += 1
                failures += [f"{command.where()}\n    {p}" for p in problems(command, helps)]
            stale += [f"{os.path.relpath(page, ROOT)}: marker `{m[0]}` marks no command line"
                      for m in markers if m[1] == 0]
        if skipped_gpu:
            print(f"note: {skipped_gpu} seam-gpu command lines not checked: no seam-gpu at {gpu}")
        print(f"checked {checked} documented command lines")
        self.assertGreater(checked, 0, "no command line found in the docs")
        self.assertEqual(failures + stale, [], "\ndocumented command lines the tool refuses:\n" +
                         "\n".join(failures + stale))

    def test_every_relative_link_names_a_file_and_heading_that_exist(self):
        broken = [b for page in pages() for b in brokenLinks(page)]
        self.assertEqual(broken, [], "\n" + "\n".join(broken))


if __name__ == "__main__":
    unittest.main()
