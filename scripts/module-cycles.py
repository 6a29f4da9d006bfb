#!/usr/bin/env python3
"""Import circles among the modules of each crate (a module = one source file).

An edge A -> B means file A names an item that file B defines (through `crate::`, `super::` or
`self::` paths, `use` lists included). A facade's `pub use` re-exports are followed to the file
that defines the item, so a re-export is not an edge of its own; `mod x;` declarations are not
edges. Test modules (`#[cfg(test)] mod tests { ... }` blocks and `tests.rs` files) are left out:
a test may reach into whatever it tests.

Usage: python3 scripts/module-cycles.py [--quiet] [crate dirs...]   (default: crates/*)
Prints every strongly connected component of more than one file, and exits with 1 when there
is any (0 when there is none).
"""
import os
import re
import sys

ITEM_RE = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+fn|async\s+fn|unsafe\s+fn|fn|struct|enum|trait|type|"
    r"const|static|union|mod|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)
USE_RE = re.compile(r"\buse\s+([^;]+);", re.S)
PATH_RE = re.compile(r"\b(crate|super|self)((?:\s*::\s*(?:[A-Za-z_][A-Za-z0-9_]*|\{))+)")


def strip(src):
    """Drop comments, string literals and #[cfg(test)] modules."""
    src = re.sub(r"//[^\n]*", "", src)
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    src = re.sub(r'r#*"(?:.|\n)*?"#*', '""', src)
    src = re.sub(r'"(?:\\.|[^"\\])*"', '""', src)
    out = []
    i = 0
    pat = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*(\{|;)")
    while True:
        m = pat.search(src, i)
        if not m:
            out.append(src[i:])
            break
        out.append(src[i:m.start()])
        if m.group(1) == ";":
            i = m.end()
            continue
        depth = 1
        j = m.end()
        while j < len(src) and depth:
            if src[j] == "{":
                depth += 1
            elif src[j] == "}":
                depth -= 1
            j += 1
        i = j
    return "".join(out)


def modules(crate):
    """Map module path tuple -> file for a crate's src/."""
    src = os.path.join(crate, "src")
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            p = os.path.relpath(os.path.join(root, f), src)
            parts = p[:-3].split(os.sep)
            if parts == ["lib"] or parts == ["main"]:
                key = ()
                if parts == ["main"] and os.path.exists(os.path.join(src, "lib.rs")):
                    continue
            elif parts[-1] == "mod":
                key = tuple(parts[:-1])
            else:
                key = tuple(parts)
            if key and key[-1] in ("tests", "fuzz_tests"):
                continue
            mods[key] = os.path.join(root, f)
    return mods


def expand_use(tree):
    """Expand `a::{b, c::{d}}` into lists of segments."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def go(prefix, s):
        # split top-level commas
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        for part in parts:
            if "{" in part:
                head, rest = part.split("{", 1)
                rest = rest[: rest.rfind("}")]
                go(prefix + [x for x in head.split("::") if x], rest)
            else:
                seg = part.split(" as ")[0]
                seg = re.sub(r"as\w+$", "", seg) if False else seg
                out.append(prefix + [x for x in seg.split("::") if x])

    go([], tree)
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quiet = "--quiet" in sys.argv
    crates = args or sorted(
        os.path.join("crates", d) for d in os.listdir("crates") if os.path.isdir(os.path.join("crates", d, "src"))
    )
    total = 0
    for crate in crates:
        mods = modules(crate)
        text = {k: strip(open(f, encoding="utf-8").read()) for k, f in mods.items()}
        items = {k: set(ITEM_RE.findall(t)) for k, t in text.items()}
        # re-exports: module -> name -> absolute segments
        reexports = {k: {} for k in mods}
        uses = {k: [] for k in mods}
        for k, t in text.items():
            for m in USE_RE.finditer(t):
                stmt_start = t.rfind("\n", 0, m.start()) + 1
                is_pub = t[stmt_start:m.start()].strip().startswith("pub")
                for segs in expand_use(m.group(1)):
                    segs = [s for s in segs if s]
                    if not segs or segs[0] not in ("crate", "super", "self"):
                        continue
                    ab = absolute(k, segs)
                    if ab is None:
                        continue
                    if is_pub:
                        name = segs[-1].split(" as ")[-1]
                        if " as " in segs[-1] or "as" in segs[-1]:
                            pass
                        reexports[k][segs[-1]] = ab
                    uses[k].append((ab, is_pub))
            children = [c[-1] for c in mods if len(c) == len(k) + 1 and c[: len(k)] == k]
            no_pub_use = re.sub(r"\bpub(?:\([^)]*\))?\s+use\s+[^;]+;", "", t)
            for c in children:
                for m in re.finditer(r"(?<![\w:])" + c + r"((?:\s*::\s*(?:[A-Za-z_][A-Za-z0-9_]*|\{))+)", no_pub_use):
                    segs = [s for s in re.split(r"\s*::\s*", c + m.group(1)) if s and s != "{"]
                    uses[k].append((list(k) + segs, False))
                for m in USE_RE.finditer(t):
                    stmt_start = t.rfind("\n", 0, m.start()) + 1
                    if not t[stmt_start:m.start()].strip().startswith("pub"):
                        continue
                    for segs in expand_use(m.group(1)):
                        if segs and segs[0] == c:
                            reexports[k][segs[-1]] = list(k) + segs
            for m in PATH_RE.finditer(t):
                whole = m.group(1) + m.group(2)
                segs = [s for s in re.split(r"\s*::\s*", whole) if s and s != "{"]
                ab = absolute(k, segs)
                if ab is not None:
                    uses[k].append((ab, False))
        edges = {k: set() for k in mods}
        for k in mods:
            for ab, is_pub in uses[k]:
                if is_pub:
                    continue  # a facade's re-export
                tgt = resolve(ab, mods, items, reexports)
                if tgt is not None and tgt != k and not is_ancestor_decl(k, tgt, ab):
                    edges[k].add(tgt)
        sccs = tarjan(edges)
        bad = [c for c in sccs if len(c) > 1]
        for c in bad:
            total += 1
            names = sorted(os.path.relpath(mods[m], crate) for m in c)
            print(f"{os.path.basename(crate)}: circle of {len(c)}: {', '.join(names)}")
            if not quiet:
                for m in sorted(c):
                    for t in sorted(edges[m]):
                        if t in c:
                            print(f"    {os.path.relpath(mods[m], crate)} -> {os.path.relpath(mods[t], crate)}")
    print(f"{total} circle(s)")
    sys.exit(1 if total else 0)


def absolute(k, segs):
    if segs[0] == "crate":
        return segs[1:]
    cur = list(k)
    i = 0
    while i < len(segs) and segs[i] in ("super", "self"):
        if segs[i] == "super":
            if not cur:
                return None
            cur.pop()
        i += 1
    return cur + segs[i:]


def resolve(ab, mods, items, reexports, depth=0):
    """The file that defines the item named by absolute path `ab` (longest module prefix)."""
    if depth > 8:
        return None
    best = ()
    for n in range(len(ab), -1, -1):
        if tuple(ab[:n]) in mods:
            best = tuple(ab[:n])
            break
    rest = ab[len(best):]
    if rest:
        name = rest[0]
        if name in reexports.get(best, {}) and name not in items.get(best, set()):
            return resolve(reexports[best][name] + rest[1:], mods, items, reexports, depth + 1)
    elif best == ():
        return None  # `use crate;` or a bare module path to the root
    return best


def is_ancestor_decl(k, tgt, ab):
    # `use super::*`-like naming of the parent module itself (no item) is not an edge
    return False


def tarjan(edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in edges:
        if v not in index:
            strong(v)
    return out


if __name__ == "__main__":
    main()
