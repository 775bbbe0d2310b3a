#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-arch.py: the architecture rules of HACKING.md, checked on the source tree.

  scripts/check-arch.py [--root DIR] [--allow FILE] [--graph]

Builds the file-level graph of src/ from #include lines and calls (a call in file A to a function
defined, not static, in file B is an edge A -> B; an #include of X.h is an edge to X.c where it
exists, a file and its own header being one node) and reports:

  circle        files that reach each other (a strongly connected component of two or more);
  layer         an #include of a layer that is not below the including one (order: HACKING.md;
                core/err.h, the one error type, may be included from every layer);
  sim-hw        an #include "hw/..." in src/sim (the simulator knows nothing of backends);
  sqlite        'sqlite3' in a file outside src/store/ (persistence has one home);
  monotonic     CLOCK_MONOTONIC in more than one file of src/ (one clock; burn.cu aside);
  long-function a function of src/cli/ over 100 lines (cli/ parses and prints, nothing else);
  unused        a function exported from src/ that nothing in src/, tests/ or bench/ uses;
  prefix        a function exported from src/ whose name does not start with pfi_ (libpfi is
                linked into other programs: its names must not clash with theirs).

Every violation is printed; the check fails on any that scripts/arch-allow.txt does not list.
An allowlist line that matches nothing fails too, so the list shrinks as the code is fixed.
The parser is a tokenizer, not a compiler: it relies on the project's style (one definition
per top-level brace block; macros that expand to calls are not seen, except .def tables). """

import argparse
import os
import re
import sys

MAX_CLI_LINES = 100
SRC_EXT = (".c", ".h", ".def")
# Exported on purpose to code pfi does not build: the NVML ABI (the fake library is loaded by
# dlopen) and the SPANK plugin's entry points (loaded by slurmd).
ABI_DIRS = ("fakenvml", "slurm")
# The one error type: every layer returns a pfi_code, util/ included.
BASE_HEADERS = {"core/err.h"}
# Folders outside the layer order, with the layers each may include.
SIDE_LAYERS = {
    "fakenvml": {"util", "core", "sim", "hw", "fakenvml"},
    "slurm": {"slurm"},
    "burn": {"burn"},
}

IDENT = re.compile(r"[A-Za-z_]\w*")
CALL_PAREN = re.compile(r"\s*\(")
MEMBER = re.compile(r"(\.|->)\s*$")
KEYWORDS = set("""if for while switch return sizeof do else case default goto break continue
typedef struct union enum static extern inline const volatile register signed unsigned void
char short int long float double _Bool _Static_assert _Alignof _Generic""".split())


def strip_code(text):
    """Comments, string and character literals blanked, newlines kept (so lines still count)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_preproc(code):
    """(code with preprocessor lines blanked, [(line, directive text)])."""
    lines, directives, cont = code.split("\n"), [], False
    for k, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            directives.append((k + 1, line))
            cont = line.rstrip().endswith("\\")
            lines[k] = ""
    return "\n".join(lines), directives


class Unit:
    """What one source file defines and uses."""

    def __init__(self, path, rel):
        self.path, self.rel = path, rel
        with open(path, encoding="utf-8", errors="replace") as f:
            self.raw = f.read()
        code = strip_code(self.raw)
        self.code, directives = split_preproc(code)
        self.includes = []  # (line, "dir/x.h")
        for line, d in directives:
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', self.raw.split("\n")[line - 1])
            if m:
                self.includes.append((line, m.group(1)))
        self.defs = {}  # name -> (static, first line, last line)
        self.uses = {}  # identifier -> first line used in a body or an initializer
        self.calls = {}  # identifier -> first line called: `name (`
        self.use_ranges = []  # (start offset, end offset) of bodies and initializers
        self._scan()

    def _line(self, off):
        return self.code.count("\n", 0, off) + 1

    def _scan(self):
        code, depth, stmt, i = self.code, 0, 0, 0
        body_start, in_init, init_start = None, False, None
        while i < len(code):
            c = code[i]
            if c == "{":
                if depth == 0 and not in_init:
                    head = code[stmt:i]
                    fn = self._function_name(head)
                    if fn:
                        name, name_off = fn[0], stmt + fn[1]
                        static = re.search(r"\bstatic\b", head) is not None
                        body_start = (name, static, name_off, i)
                    else:
                        body_start = None
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0 and body_start is not None:
                    name, static, name_off, start = body_start
                    self.defs[name] = (static, self._line(name_off), self._line(i))
                    self.use_ranges.append((start, i + 1))
                    body_start, stmt = None, i + 1
                elif depth == 0 and not in_init:
                    stmt = i + 1  # end of a struct/enum body: its declaration ends at ';'
            elif c == "=" and depth == 0 and not in_init and code[i + 1:i + 2] != "=":
                in_init, init_start = True, i + 1
            elif c == ";" and depth == 0:
                if in_init:
                    self.use_ranges.append((init_start, i))
                in_init, stmt = False, i + 1
            i += 1
        for a, b in self.use_ranges:
            for m in IDENT.finditer(code, a, b):
                w = m.group(0)
                if MEMBER.search(code, max(0, m.start() - 64), m.start()):
                    continue  # s.f or p->f: a field (maybe a function pointer), not a function
                if w not in KEYWORDS and w not in self.uses:
                    self.uses[w] = self._line(m.start())
                if w not in KEYWORDS and w not in self.calls and CALL_PAREN.match(code, m.end()):
                    self.calls[w] = self._line(m.start())
        # A table of X-macros (commands.def) included inside a body or an initializer is used.
        for line, inc in self.includes:
            if inc.endswith(".def") and self._inside_use(line):
                self.def_includes = getattr(self, "def_includes", []) + [(line, inc)]

    def _inside_use(self, line):
        off = sum(len(x) + 1 for x in self.code.split("\n")[:line - 1])
        return any(a <= off < b for a, b in self.use_ranges)

    @staticmethod
    def _function_name(head):
        """The name defined when `head {` opens a function body, else None."""
        h = head.rstrip()
        if not h.endswith(")") or re.match(r"\s*(typedef|struct|union|enum)\b", head):
            return None
        depth, k = 0, len(h) - 1
        while k >= 0:  # back to the parenthesis that opens the parameter list
            if h[k] == ")":
                depth += 1
            elif h[k] == "(":
                depth -= 1
                if depth == 0:
                    break
            k -= 1
        m = re.search(r"([A-Za-z_]\w*)\s*$", h[:k])
        if not m or m.group(1) in KEYWORDS:
            return None
        return m.group(1), m.start(1)


def node_of(rel, files):
    """A .c file and its own header are one node, named by the .c file; a header without a .c
    file (types, an internal header) is no node: including it includes what it includes."""
    if rel.endswith(".h"):
        return rel[:-2] + ".c" if rel[:-2] + ".c" in files else None
    return rel


def layer_of(rel):
    return rel.split("/")[0] if "/" in rel else ""


def read_layers(hacking):
    """The layer order: the `folder/` names of the HACKING.md line that says 'Layer order',
    lowest first; names joined by ',' share a level."""
    with open(hacking, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"Layer order[^:]*:(.*?)\.(\s|$)", text, re.S)
    if not m:
        sys.exit(f"check-arch: no 'Layer order ...:' sentence in {hacking}")
    order = {}
    for level, part in enumerate(re.sub(r"\([^)]*\)", "", m.group(1)).split("<")):
        for name in re.findall(r"`(\w+)/`", part):
            order[name] = level
    if len(set(order.values())) < 2:
        sys.exit(f"check-arch: cannot read the layer order in {hacking}")
    return order


def load_tree(root, sub):
    units = {}
    top = os.path.join(root, sub)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d != "fixtures")
        for fn in sorted(filenames):
            if fn.endswith(SRC_EXT):
                path = os.path.join(dirpath, fn)
                units[os.path.relpath(path, top)] = Unit(path, os.path.relpath(path, top))
    return units


def resolve_include(inc, rel, files):
    if inc in files:
        return inc
    local = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
    return local if local in files else None


def build_graph(units):
    """{node: {node: [reason, ...]}} over src/, and the exported functions {name: file}."""
    files = set(units)
    exported = {}
    for rel, u in units.items():
        for name, (static, _, _) in u.defs.items():
            if not static and rel.endswith(".c"):
                exported.setdefault(name, rel)
    graph = {node_of(r, files): {} for r in files if node_of(r, files)}

    def edge(a, b, why):
        if a != b:
            graph[a].setdefault(b, []).append(why)

    def reach(rel, inc, seen):
        """The nodes an #include reaches, through headers that are no node."""
        tgt = resolve_include(inc, rel, files)
        if not tgt or tgt in seen or tgt.endswith(".def"):
            return []
        seen.add(tgt)
        if node_of(tgt, files):
            return [node_of(tgt, files)]
        return [n for _, i2 in units[tgt].includes for n in reach(tgt, i2, seen)]

    for rel, u in units.items():
        a = node_of(rel, files)
        if a is None:
            continue
        for line, inc in u.includes:
            for b in reach(rel, inc, {rel}):
                edge(a, b, f"{rel}:{line} includes {inc}")
        for w, line in u.calls.items():
            if w in exported and w not in u.defs:
                edge(a, node_of(exported[w], files), f"{rel}:{line} calls {w}()")
    return graph, exported


def _uses_all(self):
    return {m.group(0) for m in IDENT.finditer(self.code)} - KEYWORDS


Unit.uses_all = _uses_all


def sccs(graph):
    """Tarjan's strongly connected components, iteratively."""
    index, low, onstack, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        onstack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    onstack.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                elif w in onstack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def check(root, hacking):
    """[(kind, subject, detail lines)] for the tree at root."""
    src = load_tree(root, "src")
    found = []
    graph, exported = build_graph(src)

    for comp in sccs(graph):
        inside = set(comp)
        detail = [f"{a} -> {b}: {why[0]}" + (f" (+{len(why) - 1} more)" if len(why) > 1 else "")
                  for a in comp for b, why in sorted(graph[a].items()) if b in inside]
        found.append(("circle", " ".join(comp), detail))

    order = read_layers(hacking)
    for rel, u in sorted(src.items()):
        la = layer_of(rel)
        for line, inc in u.includes:
            lb = layer_of(inc) if "/" in inc else la
            if lb == la or inc in BASE_HEADERS or lb not in order and lb not in SIDE_LAYERS:
                continue
            if la in SIDE_LAYERS:
                ok = lb in SIDE_LAYERS[la]
            elif la in order and lb in order:
                ok = order[lb] < order[la]
            else:
                ok = False
            if not ok:
                found.append(("layer", f"{rel} -> {inc}",
                              [f"{rel}:{line}: {la}/ includes {lb}/, which is not below it"]))
        if la == "sim":
            for line, inc in u.includes:
                if inc.startswith("hw/"):
                    found.append(("sim-hw", rel, [f"{rel}:{line}: #include \"{inc}\""]))
        if la != "store" and "sqlite3" in u.raw:
            line = u.raw[:u.raw.find("sqlite3")].count("\n") + 1
            found.append(("sqlite", rel, [f"{rel}:{line}: sqlite3 outside src/store/"]))
        if la == "cli":
            for name, (_, first, last) in sorted(src[rel].defs.items()):
                if last - first + 1 > MAX_CLI_LINES:
                    found.append(("long-function", f"{rel}:{name}",
                                  [f"{rel}:{first}: {name} is {last - first + 1} lines "
                                   f"(at most {MAX_CLI_LINES} in cli/)"]))

    mono = []
    for dirpath, _, filenames in os.walk(os.path.join(root, "src")):
        for fn in sorted(filenames):
            p = os.path.join(dirpath, fn)
            rel = os.path.relpath(p, os.path.join(root, "src"))
            if rel == "burn/burn.cu":
                continue
            with open(p, encoding="utf-8", errors="replace") as f:
                if "CLOCK_MONOTONIC" in f.read():
                    mono.append(rel)
    if len(mono) > 1:
        for rel in sorted(mono):
            found.append(("monotonic", rel, [f"{rel}: CLOCK_MONOTONIC (in {len(mono)} files)"]))

    used = set()
    for sub in ("src", "tests", "bench"):
        units = src if sub == "src" else load_tree(root, sub) if os.path.isdir(
            os.path.join(root, sub)) else {}
        for rel, u in units.items():
            ws = u.uses_all() if rel.endswith(".def") else set(u.uses)
            for line, inc in getattr(u, "def_includes", []):
                tgt = resolve_include(inc, rel, set(src))
                if tgt:
                    ws |= src[tgt].uses_all()
            used |= ws
    for name, rel in sorted(exported.items(), key=lambda x: (x[1], x[0])):
        if layer_of(rel) in ABI_DIRS or name == "main":
            continue
        line = src[rel].defs[name][1]
        if name not in used:
            found.append(("unused", name, [f"{rel}:{line}: {name} is exported but never used"]))
        if not name.startswith("pfi_"):
            found.append(("prefix", name, [f"{rel}:{line}: {name} is exported without the pfi_ "
                                           "prefix (make it static, or name it pfi_...)"]))
    return found, graph


def read_allow(path):
    allow = {}
    if not os.path.exists(path):
        return allow
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            entry, _, reason = line.partition(" -- ")
            parts = entry.split(None, 1)
            if len(parts) != 2 or not reason.strip():
                sys.exit(f"check-arch: {path}:{n}: expected 'KIND SUBJECT -- reason'")
            allow[(parts[0], " ".join(parts[1].split()))] = n
    return allow


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(here), help="the project (default: ..)")
    ap.add_argument("--allow", help="allowlist (default ROOT/scripts/arch-allow.txt)")
    ap.add_argument("--hacking", help="where the layer order is (default ROOT/HACKING.md)")
    ap.add_argument("--graph", action="store_true", help="print every edge of the graph too")
    a = ap.parse_args()
    allow_path = a.allow or os.path.join(a.root, "scripts", "arch-allow.txt")
    found, graph = check(a.root, a.hacking or os.path.join(a.root, "HACKING.md"))
    if a.graph:
        for x in sorted(graph):
            for y, why in sorted(graph[x].items()):
                print(f"edge {x} -> {y}: {why[0]}")
    allow = read_allow(allow_path)
    bad, allowed, seen = 0, 0, set()
    for kind, subject, detail in found:
        key = (kind, subject)
        tag = "allowed" if key in allow else "VIOLATION"
        if key in allow:
            seen.add(key)
            allowed += 1
        else:
            bad += 1
        print(f"{tag} {kind} {subject}")
        for d in detail:
            print(f"    {d}")
    shown = os.path.relpath(allow_path, a.root)
    shown = allow_path if shown.startswith("..") else shown
    for key, n in sorted(allow.items(), key=lambda x: x[1]):
        if key not in seen:
            bad += 1
            print(f"STALE {shown}:{n}: '{key[0]} {key[1]}' matches nothing: remove it")
    n_edges = sum(len(v) for v in graph.values())
    print(f"check-arch: {len(graph)} files, {n_edges} edges; {bad} violation(s), "
          f"{allowed} allowed by {shown}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
