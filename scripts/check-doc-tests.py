#!/usr/bin/env python3
"""check-doc-tests.py — the tests the documents name exist and run.

README.md, SECURITY.md, docs/*.md and the DocC articles back their claims with test names:
`c.<suite> case, case` for the C tests (a ctest name, then cases of its
program's sd_test list; `*` globs) and `SuiteTests.method` for the Swift ones.
This check fails when a named test does not exist (renamed, deleted), and
when a C test case is not run by any ctest entry (a filter that misses it)."""
import fnmatch, glob, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
errors = []

# ctest entries: name -> (program, filter or None)
ctest = {}
cmake = open(os.path.join(ROOT, "CMakeLists.txt")).read()
ADD_TEST = re.compile(r"add_test\(NAME (c\.[\w.${}]+) COMMAND (?:unshare -rn \$<TARGET_FILE:)?(\w+)>?(?: ([\w${}]+))?\)")
loops = []  # the foreach(var values...) blocks open at this line
for line in cmake.split("\n"):
    m = re.match(r"\s*foreach\((\w+) ([^)]*)\)", line)
    if m:
        loops.append((m.group(1), m.group(2).split()))
    elif re.match(r"\s*endforeach\(", line):
        loops.pop()
    elif (m := ADD_TEST.search(line)):
        bindings = [{}]
        for var, values in loops:  # every combination of the enclosing loops
            bindings = [dict(b, **{var: v}) for b in bindings for v in values]
        for b in bindings:
            sub = lambda t: re.sub(r"\$\{(\w+)\}", lambda v: b.get(v.group(1), v.group(0)), t) if t else t
            ctest[sub(m.group(1))] = (m.group(2), sub(m.group(3)))

# each program's cases
cases = {}
for path in glob.glob(os.path.join(ROOT, "Tests", "C", "test_*.c")):
    prog = os.path.basename(path)[:-2]
    cases[prog] = re.findall(r'\{"([\w]+)", test_\w+\}', open(path).read())

run = {prog: set() for prog in cases}
for name, (prog, flt) in ctest.items():
    if prog not in cases:
        errors.append(f"CMakeLists.txt: {name} runs {prog}, which has no Tests/C/{prog}.c")
        continue
    run[prog] |= {c for c in cases[prog] if flt is None or flt in c}
for prog, names in cases.items():
    for c in names:
        if c not in run[prog]:
            errors.append(f"Tests/C/{prog}.c: case {c} is run by no ctest entry")

# Swift tests: suite name -> methods
swift = {}
for path in glob.glob(os.path.join(ROOT, "Tests", "**", "*.swift"), recursive=True):
    text = open(path).read()
    for m in re.finditer(r"(?:struct|class|final class) (\w+Tests)\b", text):
        swift.setdefault(m.group(1), set())
    # methods belong to the last suite declared above them in the file
    suite = None
    for line in text.split("\n"):
        m = re.search(r"(?:struct|class) (\w+Tests)\b", line)
        if m:
            suite = m.group(1)
        m = re.search(r"\bfunc (\w+)\(", line)
        if m and suite:
            swift[suite].add(m.group(1))

docs = [os.path.join(ROOT, p) for p in ("README.md", "SECURITY.md")] + glob.glob(os.path.join(ROOT, "docs", "*.md")) \
    + glob.glob(os.path.join(ROOT, "Sources", "SDWebImage", "SDWebImage.docc", "*.md"))
named = 0
for doc in docs:
    rel = os.path.relpath(doc, ROOT)
    text = open(doc).read()
    for m in re.finditer(r"`(c\.[\w.]+)((?: [\w*]+,?)*)`", text):
        suite, listed = m.group(1), [c.strip(",") for c in m.group(2).split()]
        entries = [n for n in ctest if n == suite or n.startswith(suite + ".")]
        named += 1
        if not entries:
            errors.append(f"{rel}: `{m.group(0)[1:-1]}`: no ctest entry {suite}")
            continue
        progs = {ctest[n][0] for n in entries}
        for c in listed:
            if not any(fnmatch.filter(run[p], c) for p in progs if p in run):
                errors.append(f"{rel}: `{m.group(0)[1:-1]}`: no case {c} run under {suite}")
    for m in re.finditer(r"`(\w+Tests)(?:\.(\w+))?`", text):
        suite, method = m.group(1), m.group(2)
        named += 1
        if suite not in swift:
            errors.append(f"{rel}: `{m.group(0)[1:-1]}`: no Swift suite {suite}")
        elif method and method not in swift[suite]:
            errors.append(f"{rel}: `{m.group(0)[1:-1]}`: {suite} has no test {method}")

for e in errors:
    print(e)
print(f"doc tests: {named} test references checked, {sum(len(v) for v in cases.values())} C cases, {len(errors)} problems")
sys.exit(1 if errors else 0)
