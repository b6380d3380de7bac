#!/usr/bin/env python3
"""The longest functions of the Rust sources: lines from a function's `fn` line to its closing
brace (signature, body, comments and blank lines inside it all count; a closure counts in the
function that holds it). Test modules (`#[cfg(test)]` files and `mod tests`) count too unless
`--no-tests`.

    python3 benches/longest_fn.py [--top N] [--no-tests] [DIR ...]   (default: src)

Prints `lines  path:line  name`, longest first."""

import os
import re
import sys

FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def code_only(text):
    """`text` with comments, strings and char literals blanked (newlines kept), so that braces
    and `fn` are found in code alone."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i : j + 1]))
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path, no_tests):
    text = open(path, encoding="utf-8").read()
    code = code_only(text)
    if no_tests:
        if re.search(r"#!\[cfg\(test\)\]", code) or path.endswith("/tests.rs"):
            return
    line_of = [0] * (len(code) + 1)
    line = 1
    for i, ch in enumerate(code):
        line_of[i] = line
        if ch == "\n":
            line += 1
    test_ranges = []
    if no_tests:
        for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", code):
            end = match_brace(code, m.end() - 1)
            test_ranges.append((m.start(), end))
    for m in FN.finditer(code):
        if any(a <= m.start() < b for a, b in test_ranges):
            continue
        # The body's opening brace: the first `{` after the signature, unless a `;` comes
        # first (a declaration without a body, as in a trait).
        j = m.end()
        depth = 0
        while j < len(code):
            ch = code[j]
            if ch in "([<":
                depth += 1
            elif ch in ")]>":
                depth -= 1
            elif ch == ";" and depth <= 0:
                j = -1
                break
            elif ch == "{" and depth <= 0:
                break
            j += 1
        if j < 0 or j >= len(code):
            continue
        end = match_brace(code, j)
        yield line_of[end] - line_of[m.start()] + 1, line_of[m.start()], m.group(1)


def match_brace(code, open_at):
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def main(argv):
    top, no_tests, dirs = 10, False, []
    args = iter(argv)
    for a in args:
        if a == "--top":
            top = int(next(args))
        elif a == "--no-tests":
            no_tests = True
        else:
            dirs.append(a)
    rows = []
    for d in dirs or ["src"]:
        for root, _, files in os.walk(d):
            for f in files:
                if f.endswith(".rs"):
                    p = os.path.join(root, f)
                    rows += [(n, f"{p}:{line}", name) for n, line, name in functions(p, no_tests)]
    rows.sort(key=lambda r: -r[0])
    for n, where, name in rows[:top]:
        print(f"{n:6}  {where}  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
