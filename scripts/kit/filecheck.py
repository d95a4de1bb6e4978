#!/usr/bin/env python3
"""FileCheck's core for machines without LLVM (the GPU kit, docs/GPU.md).

  filecheck.py CHECK_FILE [--check-prefix P] < INPUT

Reads the check lines of a lit test (`// P:`, `// P-NEXT:`, `// P-NOT:`)
and matches INPUT as FileCheck does for those directives: patterns are
literal text with `{{regex}}` and `[[VAR:regex]]` definitions / `[[VAR]]`
uses, matched in order; P-NEXT on the line after the previous match; P-NOT
must not match between the previous match and the next one (or the end).
Exits 1 with the failing directive and the input position otherwise. Only
what the kit's runtime tests use is supported; anything else is an error.
"""
import argparse
import re
import sys

UNSUPPORTED = {"-DAG", "-SAME", "-LABEL", "-EMPTY"}
TOKEN = re.compile(r"\{\{(.*?)\}\}|\[\[([A-Za-z_][A-Za-z0-9_]*)(?::(.*?))?\]\]")


def compile_pattern(text, variables):
    """The directive's regex and the variables it defines, in group order."""
    out, defined, pos = [], [], 0
    for m in TOKEN.finditer(text):
        out.append(re.escape(text[pos:m.start()]))
        regex, name, definition = m.groups()
        if regex is not None:
            out.append("(?:%s)" % regex)
        elif definition is not None:
            out.append("(?P<%s>%s)" % (name, definition))
            defined.append(name)
        elif name in variables:
            out.append(re.escape(variables[name]))
        else:
            raise ValueError("undefined variable [[%s]]" % name)
        pos = m.end()
    out.append(re.escape(text[pos:]))
    return re.compile("".join(out)), defined


def directives(path, prefix):
    kinds = {"": "CHECK", "-NEXT": "NEXT", "-NOT": "NOT"}
    line_re = re.compile(r"(?://|#)\s*%s(-[A-Z]+(?:-[0-9]+)?)?:(.*)$"
                         % re.escape(prefix))
    result = []
    with open(path) as f:
        for number, text in enumerate(f, 1):
            m = line_re.search(text)
            if not m:
                continue
            suffix = m.group(1) or ""
            if suffix in UNSUPPORTED or suffix.startswith("-COUNT-"):
                raise ValueError("%s:%d: %s%s is not supported" %
                                 (path, number, prefix, suffix))
            if suffix not in kinds:
                continue  # another prefix that starts with this one
            result.append((kinds[suffix], m.group(2).strip(), number))
    if not result:
        raise ValueError("%s: no %s: lines" % (path, prefix))
    return result


def check(lines, checks):
    variables, cursor, pending_not = {}, 0, []
    last_match_line = None

    def search(kind, text, start, end):
        pattern, _ = compile_pattern(text, variables)
        for i in range(start, end):
            m = pattern.search(lines[i])
            if m:
                return i, m
        return None, None

    for kind, text, number in checks:
        if kind == "NOT":
            pending_not.append((text, number))
            continue
        if kind == "NEXT":
            if last_match_line is None:
                return "line %d: NEXT without a previous match" % number
            found, m = search(kind, text, last_match_line + 1,
                              min(last_match_line + 2, len(lines)))
        else:
            found, m = search(kind, text, cursor, len(lines))
        if found is None:
            return "line %d: no match for '%s' after input line %d" % (
                number, text, cursor + 1)
        for not_text, not_number in pending_not:
            hit, _ = search("NOT", not_text, cursor, found)
            if hit is not None:
                return "line %d: '%s' matched input line %d: %s" % (
                    not_number, not_text, hit + 1, lines[hit])
        pending_not = []
        variables.update({k: v for k, v in m.groupdict().items()})
        last_match_line, cursor = found, found + 1
    for not_text, not_number in pending_not:
        hit, _ = search("NOT", not_text, cursor, len(lines))
        if hit is not None:
            return "line %d: '%s' matched input line %d: %s" % (
                not_number, not_text, hit + 1, lines[hit])
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("check_file")
    p.add_argument("--check-prefix", default="CHECK")
    args = p.parse_args()
    try:
        checks = directives(args.check_file, args.check_prefix)
        error = check(sys.stdin.read().splitlines(), checks)
    except (ValueError, re.error) as e:
        print("filecheck.py: error: %s" % e)
        return 2
    if error:
        print("filecheck.py: %s (%s, prefix %s)" % (error, args.check_file,
                                                    args.check_prefix))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
