#!/usr/bin/env python3
"""Summarize cargo-mutants results for mutants/survivors.md (issue 11).

usage: python3 mutants/summarize.py RUN_DIR [RECHECK_DIR]
       python3 mutants/summarize.py --check RUN_DIR...

RUN_DIR is a cargo-mutants output directory (holding caught.txt, missed.txt, ...). RECHECK_DIR,
if given, is an `--iterate` re-run of RUN_DIR's survivors with more tests: a survivor it caught
counts as caught. Prints per-file counts and every survivor with its reason, looked up in
mutants/reasons/*.tsv, one file per module (tab-separated: a mutant's full text, or `file<TAB>function`, then the reason).

With --check (CI's sample): exits 1 if any mutant in the RUN_DIRs was missed without being listed
as an equivalent mutant (a reason starting with "equivalent"): a new survivor is a test that got
weaker or code that lost its test. Timeouts count as caught (the mutant broke something).
"""
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def lines(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [l.rstrip("\n") for l in f if l.strip()]


def function_of(m):
    hit = re.search(r" in (\S.*)$", m)
    if hit:
        return hit.group(1)
    hit = re.match(r"[^:]+:\d+:\d+: replace (.+?)(?: -> | with )", m)
    return hit.group(1) if hit else "?"


def reasons():
    exact, by_fn = {}, {}
    d = os.path.join(HERE, "reasons")
    for name in sorted(os.listdir(d)):
        if not name.endswith(".tsv"):
            continue
        with open(os.path.join(d, name)) as f:
            for row in f:
                row = row.rstrip("\n")
                if not row or row.startswith("#"):
                    continue
                parts = row.split("\t")
                if len(parts) == 2:
                    exact[parts[0]] = parts[1]
                else:
                    by_fn[(parts[0], parts[1])] = parts[2]
    return exact, by_fn


def main():
    run = sys.argv[1]
    recheck = sys.argv[2] if len(sys.argv) > 2 else None
    out = {k: lines(run, k + ".txt") for k in ("caught", "missed", "unviable", "timeout")}
    retested = None
    if recheck:
        later = set(lines(recheck, "caught.txt"))
        retested = later | set(lines(recheck, "missed.txt")) | set(lines(recheck, "timeout.txt"))
        out["caught"] += [m for m in out["missed"] if m in later]
        out["missed"] = [m for m in out["missed"] if m not in later]
    per_file = collections.defaultdict(collections.Counter)
    for kind, ms in out.items():
        for m in ms:
            per_file[m.split(":")[0]][kind] += 1
    print("| file | caught | missed | unviable | timeout | caught / viable | (caught + timeout) / viable |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for f in sorted(per_file):
        c = per_file[f]
        viable = c["caught"] + c["missed"] + c["timeout"]
        pct = f"{100 * c['caught'] / viable:.1f}%" if viable else "n/a"
        det = f"{100 * (c['caught'] + c['timeout']) / viable:.1f}%" if viable else "n/a"
        print(f"| `{f}` | {c['caught']} | {c['missed']} | {c['unviable']} | {c['timeout']} | {pct} | {det} |")
    exact, by_fn = reasons()
    print()
    for kind in ("missed", "timeout"):
        for m in out[kind]:
            f = m.split(":")[0]
            why = exact.get(m) or by_fn.get((f, function_of(m))) or "NO REASON YET"
            note = " (not yet re-run with the wider tests)" if retested is not None and m not in retested else ""
            print(f"- {kind.upper()}{note} `{m}`: {why}")


def check(dirs):
    exact, by_fn = reasons()
    bad, total = [], 0
    for d in dirs:
        for kind in ("caught", "missed", "timeout", "unviable"):
            total += len(lines(d, kind + ".txt"))
        for m in lines(d, "missed.txt"):
            why = exact.get(m) or by_fn.get((m.split(":")[0], function_of(m))) or ""
            if not why.startswith("equivalent"):
                bad.append((m, why or "no reason listed"))
    print(f"mutants sample: {total} mutants, {len(bad)} missed without an equivalence reason")
    for m, why in bad:
        print(f"  MISSED {m}  ({why})")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        sys.exit(check(sys.argv[2:]))
    main()
