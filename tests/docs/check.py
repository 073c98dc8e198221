#!/usr/bin/env python3
"""Keeps the documentation honest (standard library only): README.md stays short, every
relative link and image of README.md, docs/*.md and the other READMEs resolves (files and
#anchors), every repository script a page names exists, and every `solowg <word>` a page
shows is a word the command line takes.

    tests/docs/check.py [REPO]      prints what it checked; exit 1 with each problem
"""
import os
import re
import sys

README_MAX_LINES = 250


def anchors(text):
    """GitHub's heading anchors of a markdown text."""
    out = set()
    for line in text.splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            a = m.group(1).strip().lower()
            a = re.sub(r"[^\w\- ]", "", a).replace(" ", "-")
            out.add(a)
    return out


def code_spans(text):
    """Inline code spans, and the lines of fenced blocks with shell comments cut."""
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    lines = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        lines.extend(re.sub(r"(^|\s)#.*", "", ln) for ln in block.splitlines())
    return spans, lines


def cli_words(repo):
    """The first words `solowg` takes, from its usage text."""
    src = open(os.path.join(repo, "src/cli/mod.rs")).read()
    usage = src[src.index("const USAGE"):src.index('";', src.index("const USAGE"))]
    words = set()
    for line in usage.splitlines():
        m = re.match(r"\s*(?:Usage:\s*)?solowg\s+(.*)", line)
        if m:
            for w in re.split(r"[\s|\[\]]+", m.group(1)):
                if w and not w.startswith("<") and w.isascii():
                    words.add(w)
    return words


def main(repo):
    problems, checked = [], 0
    pages = ["README.md", "bench/README.md", "luci-app/README.md", "tests/mips-system/README.md"]
    docs = os.path.join(repo, "docs")
    if os.path.isdir(docs):
        pages += sorted(f"docs/{f}" for f in os.listdir(docs) if f.endswith(".md"))
    pages = [p for p in pages if os.path.exists(os.path.join(repo, p))]

    n = len(open(os.path.join(repo, "README.md")).read().splitlines())
    if n > README_MAX_LINES:
        problems.append(f"README.md: {n} lines, more than {README_MAX_LINES}")

    words = cli_words(repo)
    script = re.compile(r"(?:^|[\s(=])(?:\./)?((?:bench|tests|openwrt|\.ci|luci-app|fuzz|files)/[\w./-]+)")
    for page in pages:
        text = open(os.path.join(repo, page)).read()
        base = os.path.dirname(os.path.join(repo, page))
        for m in re.finditer(r"!?\[[^\]]*\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"[a-z]+://|mailto:", target):
                continue
            checked += 1
            path, _, frag = target.partition("#")
            full = os.path.normpath(os.path.join(base, path)) if path else os.path.join(repo, page)
            if not os.path.exists(full):
                problems.append(f"{page}: link to {target}: no such file")
            elif frag and full.endswith(".md") and frag not in anchors(open(full).read()):
                problems.append(f"{page}: link to {target}: no such heading")
        spans, lines = code_spans(text)
        for span in spans + lines:
            for m in script.finditer(span):
                path = m.group(1).rstrip(".,:;)")
                # Results and what scripts write are named, not shipped.
                if path.startswith("bench/results/") or "*" in path or "STAMP" in path:
                    continue
                checked += 1
                # Repository-relative, or relative to the page's own directory.
                if not any(os.path.exists(os.path.join(d, path)) for d in (repo, base)):
                    problems.append(f"{page}: names {path}, which does not exist")
        # Commands in code blocks: at a line's start or after a pipe or ; or &&, past any
        # VAR=value words (`ubus call solowg status` is the ubus object, not the CLI).
        for span in lines:
            for m in re.finditer(r"(?:^|[|;&]\s*)\s*(?:[A-Z_]+=\S*\s+)*solowg\s+([a-z][\w-]*)", span):
                w = m.group(1)
                # An interface name (wg0, ...) is the daemon's own argument.
                if re.fullmatch(r"wg\d*|[a-z]+\d+", w):
                    continue
                checked += 1
                if w not in words:
                    problems.append(f"{page}: `solowg {w}`: not a word the command line takes")
    for p in problems:
        print("docs-check:", p)
    print(f"docs-check: {len(pages)} pages, {checked} links, scripts and commands checked, "
          f"README.md {n} lines, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))
