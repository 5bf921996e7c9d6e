"""`pypto deps-viewer`: read a run's dfx_outputs/deps.json as text, Graphviz DOT or HTML.

    pypto deps-viewer                       # ./dfx_outputs/deps.json as text
    pypto deps-viewer run1/ -f dot -o g.dot # a directory holding deps.json or dfx_outputs/
    pypto deps-viewer deps.json -f html -o deps.html

The HTML page is self-contained (inline SVG and CSS, no scripts or external assets):
tasks are laid out in layers by longest path from the sources, edges are drawn per
kind (RAW solid, WAW orange, explicit dashed blue), and hovering a task shows its
arguments.  The graph model (`DepsGraph`) is shared by the three renderers.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

FORMATS = ("text", "dot", "html")
EDGE_STYLES = {
    "RAW": {"color": "#333333", "dash": "", "dot": 'color="#333333"'},
    "WAW": {"color": "#d9730d", "dash": "", "dot": 'color="#d9730d"'},
    "explicit": {"color": "#2f6fdd", "dash": "6,4", "dot": 'color="#2f6fdd", style=dashed'},
}
NODE_W, NODE_H, GAP_X, GAP_Y, MARGIN = 200, 44, 30, 60, 20


class DepsFileError(ValueError):
    """The input is not a readable pypto deps.json."""


@dataclass
class DepsGraph:
    """deps.json, indexed for rendering."""

    entry: str
    platform: str
    complete: bool
    tasks: list[dict]
    tensors: dict[int, dict]
    edges: list[dict]
    layer: dict[int, int] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> DepsGraph:
        """Reads and checks a deps.json file."""
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DepsFileError(f"{path}: cannot read deps.json: {exc}") from None
        if not isinstance(doc, dict) or not str(doc.get("format", "")).startswith("pypto.deps/"):
            raise DepsFileError(f"{path}: not a pypto deps.json (no 'format': 'pypto.deps/1')")
        try:
            graph = cls(doc["entry"], doc["platform"], bool(doc.get("complete", True)),
                        list(doc["tasks"]), {t["id"]: t for t in doc["tensors"]},
                        list(doc["edges"]))
        except (KeyError, TypeError) as exc:
            raise DepsFileError(f"{path}: malformed deps.json: missing {exc}") from None
        graph._layout()
        return graph

    def _layout(self) -> None:
        """Layer of a task = longest path from a source (edges run from lower ids up)."""
        preds: dict[int, list[int]] = {t["id"]: [] for t in self.tasks}
        for e in self.edges:
            preds.setdefault(e["dst"], []).append(e["src"])
        for task in sorted(self.tasks, key=lambda t: t["id"]):
            tid = task["id"]
            self.layer[tid] = 1 + max((self.layer.get(p, 0) for p in preds[tid]), default=-1)

    def tensor_name(self, tensor_id) -> str:
        t = self.tensors.get(tensor_id)
        return t["name"] if t else "?"

    def edge_label(self, e: dict) -> str:
        if e["source"] == "explicit":
            return "explicit"
        via = f" {self.tensor_name(e['tensor'])}" if e.get("tensor") is not None else ""
        return f"{e['kind']}{via}"

    def edge_style(self, e: dict) -> dict:
        return EDGE_STYLES["explicit" if e["source"] == "explicit" else e["kind"]]

    def task_title(self, task: dict) -> str:
        block = f" block {task['block'][0]}/{task['block'][1]}" if task.get("block") else ""
        return f"#{task['id']} {task['kernel']}{block}"

    def arg_text(self, arg: dict) -> str:
        if arg["kind"] != "tensor":
            return f"{arg['name']} = {arg['value']}"
        tensor = self.tensors.get(arg["tensor"])
        where = (f"{tensor['name']} ({tensor['origin']} {tensor['dtype']} {tensor['shape']})"
                 if tensor else "?")
        flag = "" if arg.get("tracked", True) else ", untracked"
        return f"{arg['direction']:<5} {arg['name']}: {where}{flag}"


def render_text(graph: DepsGraph) -> str:
    """A listing: every task with its arguments and what it waits for, then the edges."""
    waits: dict[int, list[str]] = {}
    for e in graph.edges:
        waits.setdefault(e["dst"], []).append(f"#{e['src']} ({graph.edge_label(e)})")
    state = "" if graph.complete else " (incomplete: the run stopped early)"
    counts = ", ".join(_count(len(items), noun) for items, noun in (
        (graph.tasks, "task"), (graph.tensors, "tensor"), (graph.edges, "edge")))
    lines = [f"{graph.entry} on {graph.platform}: {counts}{state}", "", "tasks:"]
    for task in graph.tasks:
        core = f"  core {task['core']}" if task.get("core") is not None else "  (not run)"
        lines.append(f"  {graph.task_title(task)}{core}")
        for arg in task["args"]:
            lines.append(f"      {graph.arg_text(arg)}")
        if task["id"] in waits:
            lines.append(f"      waits for {', '.join(waits[task['id']])}")
    lines += ["", "edges:"]
    for e in graph.edges:
        lines.append(f"  #{e['src']} -> #{e['dst']}  {e['source']:<9} {graph.edge_label(e)}")
    if not graph.edges:
        lines.append("  (none)")
    return "\n".join(lines) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _dot_quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def render_dot(graph: DepsGraph) -> str:
    """Graphviz DOT (`dot -Tsvg deps.dot`)."""
    from pypto.codegen.environment import render

    nodes = [{"id": t["id"],
              "label": _dot_quote(graph.task_title(t) + (f"\ncore {t['core']}"
                                                         if t.get("core") is not None else "")),
              "tooltip": _dot_quote("; ".join(graph.arg_text(a) for a in t["args"]))}
             for t in graph.tasks]
    edges = [{"src": e["src"], "dst": e["dst"], "label": _dot_quote(graph.edge_label(e)),
              "style": graph.edge_style(e)["dot"]} for e in graph.edges]
    return render("deps_graph.dot.j2", g=graph, nodes=nodes, edges=edges,
                  title=_dot_quote(f"{graph.entry} on {graph.platform}"))


def render_html(graph: DepsGraph) -> str:
    """A self-contained HTML page with the graph as inline SVG and a table of tasks."""
    from pypto.codegen.environment import render

    by_layer: dict[int, list[dict]] = {}
    for task in sorted(graph.tasks, key=lambda t: t["id"]):
        by_layer.setdefault(graph.layer[task["id"]], []).append(task)
    position: dict[int, tuple[int, int]] = {}
    width = 0
    for layer, tasks in by_layer.items():
        for k, task in enumerate(tasks):
            position[task["id"]] = (MARGIN + k * (NODE_W + GAP_X),
                                    MARGIN + layer * (NODE_H + GAP_Y))
        width = max(width, MARGIN * 2 + len(tasks) * (NODE_W + GAP_X) - GAP_X)
    height = MARGIN * 2 + len(by_layer) * (NODE_H + GAP_Y) - GAP_Y if by_layer else MARGIN * 2
    nodes = []
    for task in graph.tasks:
        x, y = position[task["id"]]
        core = f"core {task['core']}" if task.get("core") is not None else "not run"
        nodes.append({"x": x, "y": y, "title": graph.task_title(task), "sub": core,
                      "args": [graph.arg_text(a) for a in task["args"]]})
    edges = []
    for e in graph.edges:
        (x1, y1), (x2, y2) = position[e["src"]], position[e["dst"]]
        style = graph.edge_style(e)
        # Parallel edges of one pair (inferred + explicit) are drawn apart.
        shift = 6 if e["source"] == "explicit" else 0
        edges.append({"x1": x1 + NODE_W // 2 + shift, "y1": y1 + NODE_H,
                      "x2": x2 + NODE_W // 2 + shift, "y2": y2, "color": style["color"],
                      "dash": style["dash"], "label": graph.edge_label(e),
                      "marker": "explicit" if e["source"] == "explicit" else e["kind"],
                      "src": e["src"], "dst": e["dst"]})
    return render("deps_graph.html.j2", g=graph, nodes=nodes, edges=edges,
                  width=max(width, 400), height=height, node_w=NODE_W, node_h=NODE_H,
                  styles=EDGE_STYLES)


RENDERERS = {"text": render_text, "dot": render_dot, "html": render_html}


def find_deps_file(path: str | None) -> Path:
    """`path` itself, `path/deps.json`, `path/dfx_outputs/deps.json`; default: the work dir's."""
    if path is None:
        from pypto.runtime.dfx import dfx_dir

        candidate = dfx_dir() / "deps.json"
        if not candidate.is_file():
            raise DepsFileError(
                f"no {candidate}: run with RunConfig(enable_dep_gen=True) first, or pass the "
                "path of a deps.json"
            )
        return candidate
    p = Path(path)
    for candidate in (p, p / "deps.json", p / "dfx_outputs" / "deps.json"):
        if candidate.is_file():
            return candidate
    raise DepsFileError(f"{p}: no deps.json there (looked in {p}, {p}/deps.json, "
                        f"{p}/dfx_outputs/deps.json)")


def add_arguments(parser) -> None:
    parser.add_argument("path", nargs="?", help="deps.json, or a directory holding it "
                        "(default: <work_dir>/dfx_outputs/deps.json)")
    parser.add_argument("-f", "--format", choices=FORMATS, default="text",
                        help="text listing, Graphviz DOT, or self-contained HTML/SVG")
    parser.add_argument("-o", "--output", help="write here instead of standard output")


def run(args) -> int:
    try:
        graph = DepsGraph.load(find_deps_file(args.path))
    except DepsFileError as exc:
        print(f"pypto deps-viewer: {exc}", file=sys.stderr)
        return 1
    text = RENDERERS[args.format](graph)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
