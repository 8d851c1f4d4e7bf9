// Parses Mermaid charts with the real `mermaid` package (its flowchart parser and database),
// for tests/render/test_mermaid_parse.py. Usage: MERMAID_PREFIX=DIR node tests/e2e/mermaid_parse.mjs
//   DIR is where tests/e2e/install_mermaid.sh put mermaid and jsdom (mermaid's sanitizer needs
//   a DOM). Reads a JSON list of chart texts on stdin; prints a JSON list, one object per
//   chart: {"error": message} or what the parser made of it (type, direction, vertices, edges,
//   subgraphs, classes, tooltips).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const prefix = process.env.MERMAID_PREFIX ?? ".";
const load = (name, entry) => import(pathToFileURL(join(prefix, "node_modules", name, entry)).href);
const { JSDOM } = await load("jsdom", "lib/api.js");
const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await load("mermaid", "dist/mermaid.core.mjs");
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

const charts = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const chart of charts) {
  try {
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(chart);
    const db = diagram.db;
    out.push({
      type: diagram.type,
      direction: db.getDirection?.() ?? null,
      vertices: [...db.getVertices().values()].map((v) => ({
        id: v.id,
        text: v.text,
        type: v.type ?? null,
        link: v.link ?? null,
        classes: v.classes ?? [],
        styles: v.styles ?? [],
      })),
      edges: db.getEdges().map((e) => ({ start: e.start, end: e.end, text: e.text ?? "" })),
      subgraphs: db.getSubGraphs().map((s) => ({ id: s.id, title: s.title, nodes: s.nodes })),
      classes: [...db.getClasses().keys()],
      tooltips: Object.fromEntries(db.tooltips ?? new Map()),
    });
  } catch (error) {
    out.push({ error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(out));
