// The CommonJS build's module-url.ts (see there): the same URL, from __filename.
import url = require("node:url");

export = { moduleUrl: url.pathToFileURL(__filename).href, load: require };
