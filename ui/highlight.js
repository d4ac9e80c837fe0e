// Syntax highlighting of the Reader's and the answers' code blocks, offline: highlight.js
// 11.12 (BSD-3-Clause, ui/vendor/highlight/LICENSE), vendored from the npm package
// @highlightjs/cdn-assets with the grammars runbooks use. A block is highlighted only when
// its language is named and known; the grammars register their usual aliases (sh, yml,
// toml, html, js, ps1, …).
import hljs from "./vendor/highlight/core.min.js";
import bash from "./vendor/highlight/languages/bash.min.js";
import diff from "./vendor/highlight/languages/diff.min.js";
import dockerfile from "./vendor/highlight/languages/dockerfile.min.js";
import go from "./vendor/highlight/languages/go.min.js";
import ini from "./vendor/highlight/languages/ini.min.js";
import javascript from "./vendor/highlight/languages/javascript.min.js";
import json from "./vendor/highlight/languages/json.min.js";
import nginx from "./vendor/highlight/languages/nginx.min.js";
import plaintext from "./vendor/highlight/languages/plaintext.min.js";
import powershell from "./vendor/highlight/languages/powershell.min.js";
import python from "./vendor/highlight/languages/python.min.js";
import rust from "./vendor/highlight/languages/rust.min.js";
import shell from "./vendor/highlight/languages/shell.min.js";
import sql from "./vendor/highlight/languages/sql.min.js";
import xml from "./vendor/highlight/languages/xml.min.js";
import yaml from "./vendor/highlight/languages/yaml.min.js";

const GRAMMARS = { bash, diff, dockerfile, go, ini, javascript, json, nginx, plaintext, powershell, python, rust, shell, sql, xml, yaml };
for (const [name, grammar] of Object.entries(GRAMMARS)) hljs.registerLanguage(name, grammar);

/** Highlights every `pre > code.language-X` under `root` whose language is known. */
export function highlightCode(root) {
  for (const code of root.querySelectorAll("pre > code[class*='language-']")) {
    if (code.dataset.highlighted) continue;
    const lang = /language-(\S+)/.exec(code.className)?.[1];
    if (lang && hljs.getLanguage(lang)) hljs.highlightElement(code);
  }
}
