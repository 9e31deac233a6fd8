// Public entry of @nerva/cli: the command, callable in-process (tests, wrappers).
export { main, type CliIo } from "./cli.js";
export { startDashboard, type Dashboard, type DashboardOptions } from "./dashboard/server.js";
