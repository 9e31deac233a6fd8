// Test suites the example apps share (needs vitest): the routes every app serves, and its entry
// point run as a real process. Kept apart from the main entry so the apps never load vitest.
export {
  describeExampleApp,
  describeExampleMain,
  type ExampleAppSuiteOptions,
  type ExampleMainSuiteOptions,
  type StartedExampleApp,
} from "./example-app-suite.js";
