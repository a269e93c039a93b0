#!/usr/bin/env python3
"""readme-example.py LANG: print the README's example in LANG (swift or c),
the code block right after its `<!-- readme-example: LANG ... -->` marker, so
make test builds and runs exactly what a reader copies."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
lang = sys.argv[1]
text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
m = re.search(r"<!-- readme-example: %s\b[^>]*-->\s*```%s\n(.*?)\n```" % (lang, lang), text, re.S)
if not m:
    sys.exit("readme-example: no %s example in README.md" % lang)
print(m.group(1))
