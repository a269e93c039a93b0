#!/usr/bin/env python3
"""Every Swift target imports only the modules its Package.swift entry names.

This is SwiftPM's `--explicit-target-dependency-import-check error`, done
from the sources and more strictly: SwiftPM's lets a target import what its
dependencies depend on (SDWebImageTests imported SDCoders undeclared), and
reads an index store, which builds of one product leave out (the Makefile's
SWIFT_INDEX). An import of a module the build made (a
target of this package or of a dependency) that the importing target does
not depend on works only because the build happened to order things so, and
breaks for whoever builds one product alone: it is an error here.

A target's allowed modules: the targets it names (by name or `.target`), the
targets of the products it names (looked up in the dependency's own
manifest), and itself. Conditions (traits, platforms) are ignored: an import
under `#if` is checked like any other. Modules the build did not make
(Foundation, Glibc, Dispatch, Testing, …) are the toolchain's and free.

Run after `swift build`; exit 1 with one line per undeclared import.
"""
import json
import os
import re
import subprocess
import sys

root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def swift(*args, cwd=root):
    return subprocess.run(["swift", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def main():
    bin_dir = sys.argv[1] if len(sys.argv) > 1 else swift("build", "--show-bin-path").strip()
    modules = set()  # every module the build made
    mod_dir = os.path.join(bin_dir, "Modules")
    if not os.path.isdir(mod_dir):
        sys.exit(f"check-imports: build first (swift build): no {mod_dir}")
    for n in os.listdir(mod_dir):
        if n.endswith(".swiftmodule"):
            modules.add(n[: -len(".swiftmodule")])
    for n in os.listdir(bin_dir):
        if n.endswith(".build"):
            modules.add(n[: -len(".build")])

    # <scratch>/<triple>/debug -> <scratch>/checkouts
    checkouts = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(bin_dir))), "checkouts")
    pkg = json.loads(swift("package", "dump-package"))
    deps = json.loads(swift("package", "show-dependencies", "--format", "json"))
    paths = {}

    def walk(d):
        for x in d.get("dependencies", []):
            paths[x["identity"]] = x["path"]
            walk(x)

    walk(deps)
    products = {}  # (package identity, product) -> its targets

    def product_targets(package, name):
        key = (package.lower(), name)
        if key not in products:
            path = paths.get(package.lower())
            if path is None:  # a trait's dependency: show-dependencies leaves it out
                path = os.path.join(checkouts, package.lower())
            if not os.path.isfile(os.path.join(path, "Package.swift")):
                sys.exit(f"check-imports: package {package} not checked out (build with the Serve trait first)")
            manifest = json.loads(swift("package", "dump-package", "--package-path", path))
            for p in manifest["products"]:
                products[(package.lower(), p["name"])] = set(p["targets"])
            products.setdefault(key, set())
        return products[key]

    imp = re.compile(
        r"^[ \t]*(?:@[\w]+(?:\([^)]*\))?[ \t]+)*(?:(?:public|package|internal|private|fileprivate)[ \t]+)?"
        r"import[ \t]+(?:(?:struct|class|enum|protocol|func|var|let|typealias)[ \t]+)?([A-Za-z_]\w*)",
        re.M)
    bad = 0
    checked = 0
    for t in pkg["targets"]:
        if t["type"] in ("system", "binary", "plugin", "macro"):
            continue
        allowed = {t["name"]}
        for d in t.get("dependencies", []):
            kind, v = next(iter(d.items()))
            if kind in ("byName", "target"):  # byName of a product: the module of its name
                allowed.add(v[0])
            elif kind == "product":
                allowed |= product_targets(v[1], v[0])
                allowed.add(v[0])
        base = "Tests" if t["type"] == "test" else "Sources"
        src = os.path.join(root, t.get("path") or os.path.join(base, t["name"]))
        tops = [os.path.join(src, x) for x in t.get("sources") or []] or [src]
        excluded = tuple(os.path.join(src, x) for x in t.get("exclude") or [])
        files = []
        for top in tops:
            if os.path.isfile(top):
                files.append(top)
            for dirpath, _, names in os.walk(top):
                files += [os.path.join(dirpath, n) for n in names]
        for p in sorted(files):
            if not p.endswith(".swift") or p.startswith(excluded):
                continue
            with open(p, encoding="utf-8") as fh:
                text = fh.read()
            for m in imp.finditer(text):
                checked += 1
                name = m.group(1)
                if name in modules and name not in allowed:
                    line = text.count("\n", 0, m.start()) + 1
                    print(f"{os.path.relpath(p, root)}:{line}: target {t['name']} imports {name}, "
                          f"which it does not depend on in Package.swift")
                    bad += 1
    if checked == 0:
        sys.exit("check-imports: no import found: the scan is broken")
    print(f"check-imports: {checked} imports in {len(pkg['targets'])} targets, {bad} undeclared")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
