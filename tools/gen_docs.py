#!/usr/bin/env python3
"""Build the documentation site (`make docs`): docs/ copied to OUT/src, the pages made from
the code's own declarations added (the parameter reference from `tessera params --json`,
a page per registered unit from `tessera units --json`, the problem files from their
header comments), then `sphinx-build -W` into OUT/html. Exits non-zero on any Sphinx
warning, if a parameter `tessera params` lists or a problem file is missing from the
built pages, or if the map in docs/DESIGN.md (the hook table and the unit list between
the `units-map` markers) is not what `tessera units --markdown` prints now; `--write-map`
(what `make docs` passes) writes it there first.

    .venv/bin/python tools/gen_docs.py [--exe build/bin/tessera] [--out build/docs] [--write-map]
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cell(text):
    """A Markdown table cell: pipes escaped, no newlines."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def param_table(rows):
    out = ["| name | type | default | range | description |", "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| `{cell(r['key'])}` | {cell(r['type'])} | `{cell(r['default'])}` | "
                   f"{cell(r['range'])} | {cell(r['doc'])} |")
    return "\n".join(out)


def parameters_page(params):
    sections = {}
    for r in params:
        sections.setdefault(r["section"], []).append(r)
    out = ["# Parameters", "",
           "Every runtime parameter, generated from the code's own declarations "
           "(`build/bin/tessera params --json`): name, type, default, range and the one-line "
           "doc declared next to the code that reads it. A problem file sets them by section "
           "(`[hydro]` then `cfl = 0.8`); the command line as `hydro.cfl=0.8`. An unknown key "
           "is an error naming the file, the line and the closest known key.", ""]
    for sec in sorted(sections):
        out += [f"## [{sec}]", "", param_table(sections[sec]), ""]
    return "\n".join(out)


def unit_page(u, params):
    out = [f"# {u['name']}", "", f"{u['doc']} ({u['role']}).", ""]
    req = u["requires"]
    items = [f"after `{a}`" for a in req["after"]] + [f"not with `{x}`" for x in req["excludes"]]
    if req["alone"]:
        items.append("runs alone")
    if items:
        out += ["**Requires:** " + ", ".join(items) + ".", ""]
    if u["provides"]:
        out += ["**Provides:** " + ", ".join(f"`{s}`" for s in u["provides"]) + ".", ""]
    if u["needs"]:
        out += ["**Needs:** " + "; ".join(
            f"`{n['service']}`{' (optional)' if n['optional'] else ''}: {n['why']}"
            for n in u["needs"]) + ".", ""]
    if u.get("not_made"):
        out += [f"Its variables depend on its parameters: {u['not_made']}.", ""]
    if u["variables"]:
        out += ["## Variables", "", "| name | role | kind | guard fill | plotted | prolongation |",
                "|---|---|---|---|---|---|"]
        for v in u["variables"]:
            out.append(f"| `{v['name']}` | {v['role']} | {v['kind']} | "
                       f"{'yes' if v['guard_fill'] else 'no'} | {'yes' if v['plotted'] else 'no'} "
                       f"| {v['prolong']} |")
        out.append("")
    if u["derived"]:
        out += ["**Derived outputs:** " + ", ".join(f"`{d}`" for d in u["derived"]) + ".", ""]
    if u["totals"]:
        out += ["**Conserved totals:** " + ", ".join(f"`{t}`" for t in u["totals"]) + ".", ""]
    if u["history"]:
        out += ["**history.csv columns:** " + ", ".join(f"`{t}`" for t in u["history"]) + ".", ""]
    out += ["**Hooks:** " + (", ".join(f"`{h}`" for h in u["hooks"]) or "none") + ".", ""]
    mine = [r for r in params if r["section"] == u["name"]]
    if mine:
        out += ["## Parameters", "", param_table(mine), ""]
    out += ["The equations, verification and limits of the physics are in "
            "[Physics units](../physics.md); how a unit is written in "
            "[Writing a unit](../writing-a-unit.md).", ""]
    return "\n".join(out)


def problems_page():
    out = ["# Problems", "",
           "Every problem file of `problems/`, with the description its header comment "
           "gives (`build/bin/tessera run problems/NAME.toml --dir runs/NAME`).", ""]
    for f in sorted((ROOT / "problems").glob("*.toml")):
        head = []
        for line in f.read_text().splitlines():
            if not line.startswith("#"):
                break
            head.append(line.lstrip("#").strip())
        text = " ".join(head) or "(no description in the file)"
        out += [f"## {f.stem}", "", f"`problems/{f.name}`: {text}", ""]
    return "\n".join(out)


BEGIN = "<!-- units-map: begin (written by `make docs` from `tessera units --markdown`) -->"
END = "<!-- units-map: end -->"


def units_map(exe, write):
    """Compare (or, with `write`, replace) the map of docs/DESIGN.md with the code's."""
    md = subprocess.run([exe, "units", "--markdown"], check=True, capture_output=True,
                        text=True).stdout
    path = ROOT / "docs" / "DESIGN.md"
    text = path.read_text()
    if BEGIN not in text or END not in text:
        print(f"make docs: docs/DESIGN.md has no units-map markers ({BEGIN} ... {END})")
        return False
    head, rest = text.split(BEGIN, 1)
    now, tail = rest.split(END, 1)
    want = "\n" + md
    if now == want:
        return True
    if write:
        path.write_text(head + BEGIN + want + END + tail)
        print("docs/DESIGN.md: the units map written from `tessera units --markdown`")
        return True
    print("make docs: the hook table and unit list in docs/DESIGN.md differ from "
          "`tessera units --markdown` (run `make docs` to write them):")
    import difflib
    print("".join(difflib.unified_diff(now.splitlines(True), want.splitlines(True),
                                       "docs/DESIGN.md", "tessera units --markdown")))
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default=str(ROOT / "build" / "bin" / "tessera"))
    ap.add_argument("--out", default=str(ROOT / "build" / "docs"))
    ap.add_argument("--write-map", action="store_true",
                    help="write the units map of docs/DESIGN.md (else: check it)")
    a = ap.parse_args()
    if not units_map(a.exe, a.write_map):
        return 1
    out = Path(a.out)
    src = out / "src"
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(ROOT / "docs", src)
    params = json.loads(subprocess.run([a.exe, "params", "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    units = json.loads(subprocess.run([a.exe, "units", "--json"], check=True,
                                      capture_output=True, text=True).stdout)
    (src / "parameters.md").write_text(parameters_page(params))
    (src / "problems.md").write_text(problems_page())
    (src / "units").mkdir()
    toc = ["# Units", "", "Every registered unit, generated from `tessera units --json` "
           "(variables with their roles and flags, requirements, hooks, parameters).", "",
           "```{toctree}", ":maxdepth: 1", ""] + [u["name"] for u in units] + ["```", ""]
    (src / "units" / "index.md").write_text("\n".join(toc))
    for u in units:
        (src / "units" / f"{u['name']}.md").write_text(unit_page(u, params))
    html = out / "html"
    p = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        str(src), str(html)], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout[-4000:] + p.stderr[-4000:])
        print("make docs: Sphinx reported warnings or errors (above)")
        return 1
    # Every parameter and every problem file is on the built site.
    text = (html / "parameters.html").read_text()
    missing = [r["key"] for r in params if r["key"] not in text]
    ptext = (html / "problems.html").read_text()
    missing += [f.name for f in (ROOT / "problems").glob("*.toml") if f.name not in ptext]
    if missing:
        print(f"make docs: missing from the site: {missing}")
        return 1
    print(f"docs: {html / 'index.html'} ({len(params)} parameters, {len(units)} units, "
          f"{len(list((ROOT / 'problems').glob('*.toml')))} problems)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
