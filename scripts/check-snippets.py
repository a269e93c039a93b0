#!/usr/bin/env python3
"""check-snippets.py — every Swift and C code block in the docs compiles.

Reads README.md, SECURITY.md, docs/*.md and the DocC articles
(Sources/SDWebImage/SDWebImage.docc/*.md). A block fenced as ```swift or ```c
is compiled; one fenced as ```swift partial or ```c partial (deliberately a
fragment) is skipped and counted. Other languages (sh, cmake) are not code
this checks.

Swift blocks are type-checked with swiftc against the modules `swift build`
made (.build/debug): each block becomes the body of its own
`func snippet() throws` (`async throws` when it awaits), after a prelude that declares the few names
the docs use without declaring them (`url`, `data`, …); `import` lines are
hoisted. A block with top-level declarations only a file can hold (`@main`,
`extension`) is compiled as a file of its own. C blocks are compiled with
-Wall -Wextra -Werror against include/: a block with `main` as it is, any
other as the body of a function after a small prelude.

Exit 1 with each failure's document and line when any block does not compile.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md", "SECURITY.md"] + sorted(glob.glob("docs/*.md", root_dir=ROOT)) + \
    sorted(glob.glob("Sources/SDWebImage/SDWebImage.docc/*.md", root_dir=ROOT))

SWIFT_PRELUDE = """import Foundation
import SDCoders
import SDWebImage
// Names the docs use without declaring them.
let url = URL(string: "http://127.0.0.1:8080/a.jpg")!
let nextPage: [URL] = [url]
let data = Data()
let bytes: [UInt8] = []
let chunk: [UInt8] = []
let placeholder: SDImage? = nil
let key = "https://example.com/a.jpg"
let image = SDImage(bitmap: try! Bitmap(width: 1, height: 1) { _ in })
func show(_ image: SDImage) {}
let myCoder: any SDImageCoder = SDImageCodersManager()
func redraw() {}
var texture: SDImage?
let ui = SDCallbackQueue(dispatchQueue: .main)
"""

C_PRELUDE = """#include <sdcore.h>
#include <stdio.h>
#include <unistd.h>
/* names the docs use without declaring them */
extern const unsigned char *data;
extern size_t length;
extern int fd;
extern unsigned char buf[65536];
extern void *user;
void on_complete(sd_transfer_id id, sd_result *r, void *user);
"""


def blocks(path):
    """(language, partial, first line number, code) of each fenced block."""
    out, lang, start, code = [], None, 0, []
    for i, line in enumerate(open(os.path.join(ROOT, path), encoding="utf-8"), 1):
        m = re.match(r"^\s*```\s*([\w+-]*)\s*(.*)$", line.rstrip("\n"))
        if lang is None and m and m.group(1):
            lang, partial, start, code = m.group(1), "partial" in m.group(2).split(), i + 1, []
        elif lang is not None and re.match(r"^\s*```\s*$", line):
            out.append((lang, partial, start, "".join(code)))
            lang = None
        elif lang is not None:
            code.append(line)
    return out


def build_dir():
    d = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if not d or not os.path.isdir(os.path.join(d, "Modules")):
        sys.exit("check-snippets: build first (swift build): no modules in " + repr(d))
    return d


def check_swift(snippets, work):
    d = build_dir()
    files = [os.path.join(work, "prelude.swift")]
    open(files[0], "w").write(SWIFT_PRELUDE)
    where = {}
    for k, (doc, line, code) in enumerate(snippets):
        imports = [l for l in code.splitlines() if re.match(r"^\s*import \w+\s*$", l)]
        body = "\n".join(l for l in code.splitlines() if l not in imports)
        whole_file = re.search(r"^(@main|extension )", code, re.M) is not None
        name = os.path.join(work, f"snippet{k}.swift")
        head = "\n".join(["import Foundation", "import SDWebImage"] + imports) + "\n"
        if whole_file:
            src = head + f"// {doc}:{line}\n" + body + "\n"
            offset = head.count("\n") + 2  # the comment line, then the first line of the block
        else:
            effects = "async throws" if re.search(r"\bawait\b", body) else "throws"  # overloads differ in async code
            src = head + f"// {doc}:{line}\nfunc snippet{k}() {effects} {{\n" + body + "\n}\n"
            offset = head.count("\n") + 3  # the comment and the func lines first
        open(name, "w").write(src)
        files.append(name)
        where[name] = (doc, line, offset)
    cmd = ["swiftc", "-typecheck", "-I", os.path.join(d, "Modules"), "-Xcc", "-I", "-Xcc", os.path.join(ROOT, "include"),
           "-Xcc", "-fmodule-map-file=" + os.path.join(d, "CSDSystem.build", "module.modulemap"),
           "-Xcc", "-fmodule-map-file=" + os.path.join(ROOT, "Sources", "CHiredis", "module.modulemap")] + files
    r = subprocess.run(cmd, capture_output=True, text=True)
    errors = []
    for m in re.finditer(r"^(/[^:\s]+\.swift):(\d+):\d+: error: (.*)$", r.stderr, re.M):
        f, n, msg = m.group(1), int(m.group(2)), m.group(3)
        if f in where:
            doc, line, offset = where[f]
            errors.append(f"{doc}:{line + n - offset}: {msg}")
        else:
            errors.append(f"{f}:{n}: {msg}")
    if r.returncode != 0 and not errors:
        errors.append("swiftc failed:\n" + r.stderr[-2000:])
    return errors


def check_c(snippets, work):
    errors = []
    for k, (doc, line, code) in enumerate(snippets):
        name = os.path.join(work, f"snippet{k}.c")
        if re.search(r"\bint\s+main\s*\(", code):
            src, offset = f"#line {line} \"{doc}\"\n" + code, 0
        else:
            includes = [l for l in code.splitlines() if l.startswith("#include")]
            body = "\n".join(l for l in code.splitlines() if not l.startswith("#include"))
            src = C_PRELUDE + "\n".join(includes) + f"\nvoid snippet{k}(void);\nvoid snippet{k}(void)\n{{\n" \
                + "ssize_t n;\n" + f"#line {line} \"{doc}\"\n" + body + "\n}\n"
        open(name, "w").write(src)
        r = subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                            "-Wno-unused-variable", "-Wno-unused-but-set-variable",
                            "-I", os.path.join(ROOT, "include"), name], capture_output=True, text=True)
        if r.returncode != 0:
            errors.append(f"{doc}:{line}: C block does not compile:\n" + r.stderr[-1500:])
    return errors


def main():
    swift, c, skipped = [], [], 0
    for doc in DOCS:
        for lang, partial, line, code in blocks(doc):
            if lang not in ("swift", "c"):
                continue
            if partial:
                skipped += 1
            elif lang == "swift":
                swift.append((doc, line, code))
            else:
                c.append((doc, line, code))
    with tempfile.TemporaryDirectory() as work:
        errors = (check_swift(swift, work) if swift else []) + (check_c(c, work) if c else [])
    # the check proves itself: the README's first Swift and C blocks, each
    # broken on purpose (a call to a function that does not exist), must fail
    proofs = 0
    for lang, check, blocks_ in (("swift", check_swift, swift), ("c", check_c, c)):
        first = next((b for b in blocks_ if b[0] == "README.md"), None)
        if first is None:
            errors.append(f"no {lang} block in README.md to prove the check on")
            continue
        doc, line, code = first
        broken = code.replace("\n", "\nnoSuchFunction_sdcheck();\n", 1) if lang == "c" \
            else code + "\nnoSuchFunction_sdcheck()\n"
        if lang == "c" and "int main" in code:
            broken = code.replace("{", "{\n    noSuchFunction_sdcheck();", 1)
        with tempfile.TemporaryDirectory() as work:
            if not check([(doc, line, broken)], work):
                errors.append(f"{doc}:{line}: a {lang} block broken on purpose was not reported")
            else:
                proofs += 1
    for e in errors:
        print("snippet:", e)
    print(f"snippets: {len(swift)} Swift and {len(c)} C blocks compiled, {skipped} partial skipped, "
          f"{proofs} broken on purpose and caught, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
