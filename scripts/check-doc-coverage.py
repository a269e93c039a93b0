#!/usr/bin/env python3
"""check-doc-coverage.py — every public Swift symbol has a doc comment, from
the symbol graphs of the library modules, extracted here from the debug
build's modules (swift-symbolgraph-extract, public and up; 2 s, where `swift
package dump-symbol-graph` takes 18 s for every module of every dependency).
A protocol requirement's comment also documents the implementations that
have none (DocC shows it on them); anything else undocumented fails the
check. Run after `swift build`."""
import collections, glob, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(ROOT)
# the library modules, and the arguments that load them, as the API check has them
library = lambda *a: subprocess.run(["bash", "scripts/swift-library.sh", *a], capture_output=True, text=True,
                                    check=True).stdout.split("\n")[:-1]
MODULES = tuple(library("modules"))
bin_dir = subprocess.run(["swift", "build", "--show-bin-path"], capture_output=True, text=True).stdout.strip()
if not os.path.isdir(os.path.join(bin_dir, "Modules")):
    sys.exit("doc coverage: build first (swift build)")
out = tempfile.mkdtemp(prefix="sd-symbols-")
args = library("args", bin_dir)
for m in MODULES:
    r = subprocess.run(["swift-symbolgraph-extract", "-module-name", m, *args,
                        "-minimum-access-level", "public", "-output-dir", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"doc coverage: swift-symbolgraph-extract {m} failed:\n{r.stderr}")
graphs = glob.glob(os.path.join(out, "*.symbols.json"))
if not any(os.path.basename(g) == m + ".symbols.json" for g in graphs for m in MODULES):
    sys.exit("doc coverage: no symbol graphs extracted")
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

for k in sorted(missing):
    print(f"undocumented: {k}")
done = total - sum(missing.values())
print(f"doc coverage: {done} of {total} public symbols documented")
for g in graphs:
    os.remove(g)
os.rmdir(out)
sys.exit(1 if missing else 0)
