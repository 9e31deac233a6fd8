// Public entry of @nerva/core/backend: where an app's shared state lives, chosen with one call.
// `sqliteBackend` is at @nerva/core/sqlite and `redisBackend` at @nerva/core/redis.
export { composeBackend, type Backend, type BackendParts } from "./backend.js";
export { embeddedBackend } from "./embedded-backend.js";
