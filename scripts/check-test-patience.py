#!/usr/bin/env python3
"""Every test is patient unless it tests a timeout (DEVELOPERS.md, issue 61).

A downloader, request, loop request, Redis cache or fleet loader that a test
builds with the library's default timeouts fails on a starved machine: the
default 15 s idle timeout once ended a loopback transfer of a 64x48 JPEG
under load 8. The tests build them through the suite's one patient
configuration instead:

  Swift  Tests/Support/Patience.swift (`Patience`, `DownloadRequest.patient`),
         Tests/SupportWebImage (`patientDownloader`, `.patient()`),
         the Redis tests' `patient()` / `patientFleet()`
  C      sd_test_request_new (Tests/C/sd_test_util.c)

A line that builds one directly is refused unless it says why on the same
line with `// patience: <why>` (C: `/* patience: <why> */`): a test of a
timeout, a test of the defaults that transfers nothing, or the helper itself.

Usage: check-test-patience.py [FILE...]   (default: every test source)
       check-test-patience.py --self-test (each rule refuses its pattern)
Exit 1 with one line per finding.
"""
import glob
import os
import re
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SWIFT_RULES = [
    (re.compile(r"\bSDWebImageDownloader\s*\("), "a downloader with default timeouts: use patientDownloader(config)"),
    (re.compile(r"\bSDWebImageDownloader\.shared\b"), "the shared downloader has default timeouts: use patientDownloader()"),
    (re.compile(r"\bSDWebImageManager\.shared\b"), "the shared manager's downloader has default timeouts"),
    (re.compile(r"\bDownloadRequest\s*\("), "a request with default timeouts: use DownloadRequest.patient(url)"),
    (re.compile(r"\bSDRedisDiskCache\.Options\s*\(|\bSDRedisFleetLoader\.Options\s*\("),
     "Redis options with default timeouts: use patient() / patientFleet()"),
]
C_RULES = [
    (re.compile(r"\bsd_request_new\s*\("), "a loop request with default timeouts: use sd_test_request_new"),
]
MARK = re.compile(r"(//|/\*)\s*patience:\s*\S")


def test_sources():
    swift = glob.glob(os.path.join(ROOT, "Tests", "**", "*.swift"), recursive=True)
    c = [p for p in glob.glob(os.path.join(ROOT, "Tests", "C", "*.c"))]
    return sorted(swift + c)


def check(path):
    rules = SWIFT_RULES if path.endswith(".swift") else C_RULES
    found = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            code = line.split("//", 1)[0] if path.endswith(".swift") else line
            if MARK.search(line):
                continue
            for rule, why in rules:
                if rule.search(code):
                    found.append(f"{os.path.relpath(path, ROOT)}:{n}: {why} (or say `patience: <why>` on the line)")
    return found


def self_test():
    """Each rule refuses its pattern, and a marked line passes."""
    cases = [
        (".swift", "let d = SDWebImageDownloader()\n", 1),
        (".swift", "let d = SDWebImageDownloader(config: c)\n", 1),
        (".swift", "SDWebImageDownloader.shared.load(u)\n", 1),
        (".swift", "SDWebImageManager.shared.loadImage(with: u)\n", 1),
        (".swift", "var r = DownloadRequest(url: u)\n", 1),
        (".swift", "var o = SDRedisFleetLoader.Options()\n", 1),
        (".swift", "let d = SDWebImageDownloader(config: c)  // patience: the timeout under test\n", 0),
        (".swift", "let d = patientDownloader(c)\n", 0),
        (".c", "ASSERT_OK(sd_request_new(u, &r));\n", 1),
        (".c", "ASSERT_OK(sd_request_new(u, &r)); /* patience: refused before any transfer */\n", 0),
        (".c", "ASSERT_OK(sd_test_request_new(u, &r));\n", 0),
    ]
    bad = 0
    for ext, text, want in cases:
        with tempfile.NamedTemporaryFile("w", suffix=ext, delete=False) as t:
            t.write(text)
        got = len(check(t.name))
        os.unlink(t.name)
        if got != want:
            print(f"self-test: {text.strip()!r}: {got} findings, expected {want}")
            bad = 1
    return bad


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    paths = argv[1:] or test_sources()
    found = [f for p in paths for f in check(p)]
    for f in found:
        print("impatient test:", f)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
