#!/usr/bin/env python3
"""readme-example.py NAME: print the README's example NAME (swift, c, or
manifest: the Package.swift that depends on the package by URL), the code
block right after its `<!-- readme-example: NAME ... -->` marker, so make
test builds and runs exactly what a reader copies."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
lang = sys.argv[1]
text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
m = re.search(r"<!-- readme-example: %s\b[^>]*-->\s*```[a-z]+[^\n]*\n(.*?)\n```" % lang, text, re.S)
if not m:
    sys.exit("readme-example: no %s example in README.md" % lang)
print(m.group(1))
