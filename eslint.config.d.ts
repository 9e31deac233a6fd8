// Types of what eslint.config.js exports besides the config, for the tests that read them.
import type { Linter } from "eslint";

/** The floors of packages/core/src, lowest first (folder or top-level file names). */
export declare const coreFloors: readonly (readonly string[])[];
/** The import-x/no-restricted-paths zones built from {@link coreFloors}. */
export declare const coreFloorZones: readonly {
  target: string;
  from: string[];
  message: string;
}[];
/** The floors inside packages/core/src/graph, lowest first (folder names). */
export declare const graphFloors: readonly string[];
/** The zones built from {@link graphFloors}. */
export declare const graphFloorZones: readonly {
  target: string;
  from: string[];
  message: string;
}[];
export declare const coreFloorRules: Linter.RulesRecord;
export declare const packageBoundaryRules: Linter.RulesRecord;
declare const config: Linter.Config[];
export default config;
