#!/usr/bin/env python3
"""Checks the sizes and the layering seam keeps (STYLE 1, 2, 11; docs/contributing.md).

  README.md under 150 lines; every source file (.cc .h .cu .cuh) at most 600 lines;
  every file under tools/ under 200 lines; every function (tests included) at most
  120 lines; the include lines run one way (ALLOWED); no issue numbers or dates in
  code comments.
Prints one line per breach and exits 1 if there is any; 0 otherwise.
Usage: tools/check_structure.py [--functions N]   (--functions: list the N longest)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = (".cc", ".h", ".cu", ".cuh")
MAX_FILE, MAX_TOOLS_FILE, MAX_README, MAX_FUNCTION = 600, 200, 150, 120
# Which of seam's folders each folder's code may include (sim/ none of the others).
ALLOWED = {
    "sim": {"sim"},
    "backend": {"sim", "backend"},
    "properties": {"sim", "properties"},
    "mutants": {"sim", "properties", "mutants"},
    "reports": {"sim", "properties", "mutants", "reports"},
    "recordings": {"sim", "reports", "recordings"},
}
CONTROL = {"if", "for", "while", "switch", "catch"}
SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b|^\s*extern\s*$")
FUNCTION_TAIL = re.compile(r"\)\s*(const|noexcept|override|final|mutable|volatile|&|\s)*"
                           r"(->[^{;]*)?$")
# Our own history; an engine's issue cited by its tracker ("sglang issue #123") is a source.
HISTORY = re.compile(r"(?<!sglang )\bissues? #?\d+\b|\bissue \"|\b20\d\d-\d\d-\d\d\b|\bstop \d+\b",
                     re.I)


def tracked():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [p for p in out.stdout.splitlines() if os.path.isfile(os.path.join(ROOT, p))]


def strip(text):
    """Comments, string and char literals and preprocessor lines blanked; newlines kept.
    Returns (code, comments) where comments holds (line, text) of every comment."""
    code, comments, i, n, line = [], [], 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i) + 2
            end = n if end < (1 if text[i + 1] == "/" else 2) else end
            comments.append((line, text[i:end]))
            blank = re.sub(r"[^\n]", " ", text[i:end])
        elif c in "\"'":
            if c == '"' and re.search(r"R$", text[max(0, i - 3):i]):
                delim = text[i + 1:text.find("(", i)]
                end = text.find(")" + delim + '"', i) + len(delim) + 2
            else:
                end = i + 1
                while end < n and text[end] != c:
                    end += 2 if text[end] == "\\" else 1
                end += 1
            blank = c + re.sub(r"[^\n]", " ", text[i + 1:end - 1]) + c
        elif c == "#" and text[text.rfind("\n", 0, i) + 1:i].strip() == "":
            end = i
            while end < n and (text[end] != "\n" or text[end - 1] == "\\"):
                end += 1
            blank = re.sub(r"[^\n]", " ", text[i:end])
        else:
            end, blank = i + 1, c
        code.append(blank)
        line += blank.count("\n")
        i = end
    return "".join(code), comments


def functions(code):
    """(first line, last line) of every function body outside another function."""
    found, stack, head_start = [], [], 0
    for i, c in enumerate(code):
        if c in ";{}" and not (stack and stack[-1][0] != "scope"):
            head = code[head_start:i]
        if c == "{":
            if stack and stack[-1][0] != "scope":
                stack.append(("inner", i))
                continue
            words = re.findall(r"[A-Za-z_]\w*", head.split("(")[0])
            before = code[max(0, i - 200):i].rstrip()
            if FUNCTION_TAIL.search(head.rstrip()) or head.strip() == "" and before.endswith("}"):
                kind = "inner" if words and words[-1] in CONTROL else "function"
                if re.search(r"=\s*$", head):
                    kind = "inner"
            elif SCOPE.search(head.split("(")[0]):
                kind = "scope"
            else:
                kind = "inner"
            start = i - len(head) + (len(head) - len(head.lstrip()))
            stack.append((kind, start))
            head_start = i + 1
        elif c == "}":
            kind, start = stack.pop() if stack else ("scope", i)
            if kind == "function" and not (stack and stack[-1][0] != "scope"):
                found.append((code.count("\n", 0, start) + 1, code.count("\n", 0, i) + 1))
            if not stack or stack[-1][0] == "scope":
                head_start = i + 1
        elif c == ";" and (not stack or stack[-1][0] == "scope"):
            head_start = i + 1
    return found


def main():
    list_n = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] == "--functions" else 0
    breaches, lengths = [], []
    for path in tracked():
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n")
        top = path.split("/")[0]
        if path == "README.md" and lines >= MAX_README:
            breaches.append(f"README.md: {lines} lines (under {MAX_README})")
        if top == "tools" and lines >= MAX_TOOLS_FILE:
            breaches.append(f"{path}: {lines} lines (files under tools/ stay under {MAX_TOOLS_FILE})")
        if path.endswith((".sh", ".py", ".txt")) or os.path.basename(path) == "CMakeLists.txt":
            for number, line in enumerate(text.splitlines(), 1):
                if line.lstrip().startswith("#") and HISTORY.search(line):
                    breaches.append(f"{path}:{number}: history in a comment: {HISTORY.search(line)[0]!r}")
        if not path.endswith(SOURCE):
            continue
        if lines > MAX_FILE:
            breaches.append(f"{path}: {lines} lines (at most {MAX_FILE})")
        code, comments = strip(text)
        for first, last in functions(code):
            lengths.append((last - first + 1, f"{path}:{first}"))
            if last - first + 1 > MAX_FUNCTION:
                breaches.append(f"{path}:{first}: a function of {last - first + 1} lines "
                                f"(at most {MAX_FUNCTION})")
        for line, comment in comments:
            if HISTORY.search(comment):
                breaches.append(f"{path}:{line}: history in a comment: {HISTORY.search(comment)[0]!r}")
        if top in ALLOWED:
            for m in re.finditer(r'#include\s+"seam/(\w+)/', text):
                if m[1] not in ALLOWED[top]:
                    line = text.count("\n", 0, m.start()) + 1
                    breaches.append(f"{path}:{line}: {top}/ includes seam/{m[1]}/ (allowed: "
                                    f"{', '.join(sorted(ALLOWED[top]))})")
    for length, where in sorted(lengths, reverse=True)[:list_n]:
        print(f"{length:5d} {where}")
    for b in breaches:
        print(b)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
