#!/usr/bin/env python3
"""check-header-docs.py — every SD_API function in include/sdcore has a
comment right above it (one comment may cover a group of declarations), and
that comment has a "Returns" line unless the function returns void.
Ownership and callback lifetimes are written in those comments; this check
makes sure none is missing."""
import pathlib, re, sys

root = pathlib.Path(__file__).resolve().parent.parent
bad = []
count = 0
for h in sorted((root / "include" / "sdcore").glob("*.h")):
    text = h.read_text()
    # declarations: "SD_API <type> name(...);" possibly over several lines
    for m in re.finditer(r"SD_API\s+([^;{]*?)\b(sd_[a-z0-9_]+)\s*\(([^;]*?)\)\s*;", text, re.S):
        count += 1
        ret, name = m.group(1).strip(), m.group(2)
        # the comment above: skip back over other declarations of the group
        before = text[: m.start()]
        lines = before.rstrip().split("\n")
        i = len(lines) - 1
        while i >= 0 and (lines[i].strip().startswith(("SD_API", "#define")) or (lines[i].strip() and not lines[i].strip().endswith("*/")
                          and not lines[i].strip().startswith(("/*", "*", "#", "}", "typedef")))):
            i -= 1
        if i < 0 or not lines[i].strip().endswith("*/"):
            bad.append(f"{h.name}: {name}: no comment above")
            continue
        j = i
        while j >= 0 and "/*" not in lines[j]:
            j -= 1
        comment = "\n".join(lines[j : i + 1])
        if ret != "void" and not re.search(r"\bReturns?\b", comment):
            bad.append(f"{h.name}: {name}: comment has no Returns line")
for b in bad:
    print(b)
print(f"header docs: {count} functions, {len(bad)} without what they need")
sys.exit(1 if bad or count == 0 else 0)
