#!/usr/bin/env python3
"""Checks graft's layering (../shared/DESIGN.md section 2) from the source tree.

Reads every #include "..." in include/, src/, backends/ and tools/, maps each
file to its component, and fails on:
  - a wrong-way include: a component including a header of a component that
    is not below it in the layer order (peers of one level may include each
    other only where ALLOWED_PEER_EDGES says so);
  - a backend including anything but public headers (include/graft/...) and
    its own files;
  - an op-identity string comparison outside frontend/ (op_type() == "...",
    schema().name == "...", is_op(..., "...")): past the importer, ops are
    compared by OpId.

Run: python3 scripts/check_layers.py [--root DIR] [--dot FILE]
Exit status 0 when clean, 1 with one line per violation otherwise. CI runs it
(ctest -R check_layers) and the build runs it before compiling libgraft.
"""
import argparse
import os
import re
import sys

# Lowest first. Components on one line share a level.
LAYERS = [
    ["core"],
    ["ir"],
    ["ops"],
    ["passes", "partition", "fusion", "codegen", "autodiff"],
    ["backend"],
    ["compiler"],
    ["runtime"],
    ["frontend", "zoo", "training", "tools", "python"],
    ["capi"],
]
# Edges between peers of one level, each one way only, so that the component
# graph stays acyclic: fusion builds on codegen's op expressions, passes run
# the fusion pass and partition's convexity utility.
ALLOWED_PEER_EDGES = {
    ("fusion", "codegen"),
    ("passes", "fusion"),
    ("passes", "codegen"),
    ("fusion", "partition"),
    ("passes", "partition"),
    ("zoo", "frontend"),
    ("tools", "frontend"),
    ("tools", "zoo"),
    ("training", "frontend"),
    ("tools", "training"),
    ("python", "frontend"),
}
LEVEL = {c: i for i, level in enumerate(LAYERS) for c in level}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def op_string_compare_pattern(root):
    """A comparison with an op's name: op_type() == "...", x == "Conv",
    "Relu" != y, is_op(..., "Add"), starts_with("Sequence")."""
    names = []
    with open(os.path.join(root, "include/graft/ir/ops.def"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"GRAFT_OP\((\w+),", line)
            if m:
                names.append(m.group(1))
    quoted = '"(?:' + "|".join(sorted(names, key=len, reverse=True)) + ')"'
    return re.compile(
        r'op_type\(\)\s*[!=]=|[!=]=\s*' + quoted + r'|' + quoted + r'\s*[!=]=|\bis_op\([^()]*,\s*"|'
        r'starts_with\("(?:Sequence|Optional|Random)')


def component_of(path):
    """(kind, component) of a repository-relative path, or None."""
    parts = path.split("/")
    if parts[0] == "include" and len(parts) > 3 and parts[1] == "graft":
        if parts[2] == "backends":
            return ("public", "backend")
        return ("public", parts[2])
    if parts[0] == "src" and len(parts) > 2:
        return ("private", parts[1])
    if parts[0] == "backends" and len(parts) > 2:
        return ("backend_impl", parts[1])
    if parts[0] == "tools":
        return ("private", "tools")
    if parts[0] == "python":
        return ("private", "python")
    return None


def resolve(root, including_file, spelled):
    """Repository-relative path of an #include "..." (None if outside the tree)."""
    local = os.path.normpath(os.path.join(os.path.dirname(including_file), spelled))
    if os.path.exists(os.path.join(root, local)):
        return local
    public = os.path.join("include", spelled)
    if os.path.exists(os.path.join(root, public)):
        return public
    return None


def may_include(src, dst):
    if src == dst:
        return True
    if src not in LEVEL or dst not in LEVEL:
        return False
    if LEVEL[dst] < LEVEL[src]:
        return True
    return LEVEL[dst] == LEVEL[src] and (src, dst) in ALLOWED_PEER_EDGES


def source_files(root):
    for top in ("include", "src", "backends", "tools", "python"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith((".h", ".cc", ".cpp", ".def")):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--dot", help="write the component include graph as DOT to this file")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    op_string_compare = op_string_compare_pattern(root)

    violations = []
    edges = {}
    string_compares = 0
    for path in sorted(source_files(root)):
        owner = component_of(path)
        if owner is None:
            continue
        kind, comp = owner
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for number, line in enumerate(lines, 1):
            where = f"{path}:{number}"
            if comp != "frontend" and op_string_compare.search(line):
                string_compares += 1
                violations.append(f"{where}: op compared by string (compare OpIds): {line.strip()}")
            m = INCLUDE.match(line)
            if not m:
                continue
            target = resolve(root, path, m.group(1))
            if target is None:
                continue  # generated or third-party header
            target_owner = component_of(target)
            if target_owner is None:
                violations.append(f"{where}: includes {m.group(1)}, outside the layered tree")
                continue
            target_kind, target_comp = target_owner
            if kind == "backend_impl":
                if target_kind == "backend_impl" and target_comp == comp:
                    continue
                if target_kind != "public":
                    violations.append(f"{where}: backend '{comp}' includes {target}, not a public header")
                    continue
                src_comp = "backends"
                ok = LEVEL[target_comp] <= LEVEL["backend"]
            else:
                src_comp = comp
                if target_kind == "backend_impl":
                    violations.append(f"{where}: {comp} includes backend file {target}")
                    continue
                ok = may_include(comp, target_comp)
            if src_comp != target_comp:
                edges.setdefault((src_comp, target_comp), where)
            if not ok:
                violations.append(f"{where}: {src_comp} includes {target} ({target_comp} is not below {src_comp})")

    if args.dot:
        with open(args.dot, "w", encoding="utf-8") as f:
            f.write("// graft's components and their includes (scripts/check_layers.py --dot)\n")
            f.write("digraph layers {\n  rankdir=BT;\n  node [shape=box];\n")
            for i, level in enumerate(LAYERS):
                f.write("  { rank=same; " + " ".join(f'"{c}";' for c in level) + " }\n")
            f.write('  "backends";\n')
            for (a, b) in sorted(edges):
                f.write(f'  "{a}" -> "{b}";\n')
            f.write("}\n")

    for v in violations:
        print(v)
    print(f"check_layers: {len(violations)} violations ({string_compares} op string comparisons)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
