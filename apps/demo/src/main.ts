// The README's main command: shows the foundation of Nerva in one run.
import { runDemo } from "./demo.js";

const report = await runDemo();
console.log(report.lines.join("\n"));
