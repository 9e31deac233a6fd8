// The CommonJS build's module-url.ts (see there): the same URL, from __filename.
// A CommonJS file under verbatimModuleSyntax imports with import-require.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import url = require("node:url");

export = { moduleUrl: url.pathToFileURL(__filename).href };
