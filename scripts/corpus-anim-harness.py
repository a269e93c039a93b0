#!/usr/bin/env python3
"""Runs `sdimage decode FILE --frames --raw -` over every row of
../shared/corpus-anim/MANIFEST.tsv, the way that corpus's README says a
harness consumes a decoder: frames concatenated on stdout, `frame N WxH D
raw=R` and `loop N` on stderr, exit status. Usage:
  corpus-anim-harness.py SDIMAGE CORPUS_DIR FORMAT[,FORMAT...]"""
import hashlib, re, resource, subprocess, sys

def limit():  # the README's 4 GiB address-space limit
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

def main():
    binary, corpus, formats = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    bad = rows = 0
    for line in open(f"{corpus}/MANIFEST.tsv"):
        cols = line.rstrip("\n").split("\t")
        if cols[0] == "file" or cols[1] not in formats:
            continue
        rows += 1
        name, canvas, loop, expected, raw = cols[0], cols[2], cols[4], cols[5], cols[6]
        try:
            p = subprocess.run([binary, "decode", f"{corpus}/{name}", "--frames", "--raw", "-", "--keep-source-colors"],
                               capture_output=True, timeout=60, preexec_fn=limit)
        except subprocess.TimeoutExpired:
            print(f"{name}: hang (60 s)"); bad += 1; continue
        err = p.stderr.decode(errors="replace")
        if p.returncode < 0:
            print(f"{name}: killed by signal {-p.returncode}"); bad += 1; continue
        frames = [tuple(int(x) for x in m) for m in re.findall(r"^frame (\d+) (\d+)x(\d+) (\d+) raw=(\d+)$", err, re.M)]
        loops = re.findall(r"^loop (\d+)$", err, re.M)
        # split stdout by the announced sizes
        shas, at = [], 0
        for (_, w, h, _, _) in frames:
            shas.append(hashlib.sha256(p.stdout[at:at + w * h * 4]).hexdigest()); at += w * h * 4
        if at != len(p.stdout):
            print(f"{name}: {len(p.stdout)} bytes on stdout for frames of {at}"); bad += 1; continue
        if expected == "error":
            if p.returncode == 0 or frames:
                print(f"{name}: decoded {len(frames)} frames, the row says error"); bad += 1
            continue
        if expected == "no-crash":
            continue
        partial = expected.startswith("partial-ok ")
        want = [t.split(":") for t in expected.split()[1 if partial else 0:]]
        raws = [int(x) for x in raw.split()] if raw != "-" else []
        W, H = (int(x) for x in canvas.split("x"))
        if not partial and (p.returncode != 0 or len(frames) != len(want)):
            print(f"{name}: exit {p.returncode}, {len(frames)} frames, want {len(want)}: {err.strip()[-200:]}"); bad += 1; continue
        if partial and not (len(want) <= len(frames) <= len(want) + 1):
            print(f"{name}: {len(frames)} frames, want at least {len(want)}"); bad += 1; continue
        for i, (d, sha) in enumerate(want):
            n, w, h, dur, r = frames[i]
            if (n, w, h, dur, r, shas[i]) != (i, W, H, int(d), raws[i], sha):
                print(f"{name}: frame {i} {w}x{h} {dur}/{r} ms {shas[i][:12]}, want {W}x{H} {d}/{raws[i]} ms {sha[:12]}")
                bad += 1; break
        else:
            if (not partial or loops) and loops != [loop]:
                print(f"{name}: loop {loops}, want {loop}"); bad += 1
    print(f"corpus-anim via sdimage decode --frames ({','.join(formats)}): {rows - bad} of {rows} rows ok")
    return 1 if bad or rows == 0 else 0

sys.exit(main())
