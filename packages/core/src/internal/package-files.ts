import { createRequire } from "node:module";
import { moduleUrl } from "./module-url.js";

/** True when running from the TypeScript sources (tests, tsx), false from a build in dist/. */
export const fromSource = moduleUrl.endsWith(".ts");

/** The package's root folder: src/internal/ is two levels below it, dist/<format>/internal/ three. */
export const packageRoot = new URL(fromSource ? "../../" : "../../../", moduleUrl);

/** The package's own `require`, resolving from where @nerva/core is installed. */
export const requireHere = createRequire(moduleUrl);
