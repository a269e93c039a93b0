#!/usr/bin/env python3
"""check-doc-coverage.py [--update] — public Swift symbols without a doc
comment, from the symbol graphs `swift package dump-symbol-graph` wrote.

docs/undocumented-symbols.txt lists the ones still undocumented (the debt,
one line each): a public symbol without documentation that is not on the
list fails the check, and so does a listed one that has been documented
since (take it off: the list only shrinks). --update rewrites the list."""
import collections, glob, json, os, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ("SDWebImage", "SDCoders", "SDDownloader", "SDCache")
LIST = os.path.join(ROOT, "docs", "undocumented-symbols.txt")

graphs = glob.glob(os.path.join(ROOT, ".build", "*", "symbolgraph", "*.symbols.json"))
if not graphs:
    sys.exit("doc coverage: no symbol graphs (run swift package dump-symbol-graph --minimum-access-level public)")
total = 0
missing = collections.Counter()
for path in sorted(graphs):
    g = json.load(open(path))
    if g["module"]["name"] not in MODULES:
        continue
    for s in g["symbols"]:
        if s.get("accessLevel") not in ("public", "open"):
            continue
        if "::SYNTHESIZED::" in s["identifier"]["precise"]:
            continue  # a protocol extension's member shown on a type: documented where it is written
        total += 1
        if not s.get("docComment"):
            missing[f'{g["module"]["name"]} {s["kind"]["identifier"]} {".".join(s["pathComponents"])}'] += 1

if sys.argv[1:] == ["--update"]:
    with open(LIST, "w") as f:
        f.write("# Public symbols without a doc comment (scripts/check-doc-coverage.py --update).\n")
        for k in sorted(missing):
            f.write((k + "\n") * missing[k])
    print(f"doc coverage: {sum(missing.values())} of {total} public symbols listed as undocumented")
    sys.exit(0)

known = collections.Counter(l.strip() for l in open(LIST) if l.strip() and not l.startswith("#"))
new = missing - known
stale = known - missing
for k in sorted(new):
    print(f"undocumented: {k}")
for k in sorted(stale):
    print(f"documented now, take it off {os.path.relpath(LIST, ROOT)}: {k}")
done = total - sum(missing.values())
print(f"doc coverage: {done} of {total} public symbols documented; {sum(missing.values())} on the list")
sys.exit(1 if new or stale else 0)
