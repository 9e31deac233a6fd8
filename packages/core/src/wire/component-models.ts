// HandlerCandidate, ToolSpec and Channel of Nerva's published spec, as wire schemas with their
// converters to and from this implementation's RouteCandidate, ToolInfo and ChannelSpec.
import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import { checkUntrustedJson } from "../internal/json-limits.js";
import type { ChannelSpec } from "../responder/types.js";
import type { RouteCandidate } from "../router/types.js";
import type { JsonSchema, ToolInfo } from "../tools/types.js";
import { JsonValueSchema } from "../types/agent.js";

const name = z.string().min(1).max(256);

/** Wire schema of HandlerCandidate: a handler a router proposes, with its score. */
export const HandlerCandidateSchema = z
  .object({
    name: name.describe("Handler name, as registered on the runtime."),
    score: z
      .number()
      .min(0)
      .max(1)
      .describe("How well the handler fits the message, from 0 (not at all) to 1 (perfectly)."),
    reason: z.string().optional().describe("Why the router proposed it, for observability."),
  })
  .meta({ id: "HandlerCandidate", description: "A handler a router proposes for a message." });
export type HandlerCandidateWire = z.output<typeof HandlerCandidateSchema>;

/**
 * A router's candidate on the wire (`reason` always written).
 *
 * @example
 * const { candidates } = await router.classify("book a flight", ctx);
 * const wire = candidates.map(handlerCandidateToWire);
 */
export function handlerCandidateToWire(candidate: RouteCandidate): HandlerCandidateWire {
  return parseOrThrow(
    HandlerCandidateSchema,
    { name: candidate.name, score: candidate.score, reason: candidate.reason },
    ErrorCode.INVALID_INPUT,
    "candidate",
    "A candidate needs a non-empty name and a score in [0, 1].",
  );
}

/**
 * Reads a HandlerCandidate into a {@link RouteCandidate}; a missing `reason` reads as `""`.
 * Throws `NervaError` INVALID_INPUT naming the bad field.
 *
 * @example
 * const candidate = handlerCandidateFromWire({ name: "flight_agent", score: 0.92 });
 */
export function handlerCandidateFromWire(wire: unknown): RouteCandidate {
  const c = parseOrThrow(
    HandlerCandidateSchema,
    wire,
    ErrorCode.INVALID_INPUT,
    "candidate",
    "Send { name: string, score: number in [0, 1], reason?: string }.",
  );
  return { name: c.name, score: c.score, reason: c.reason ?? "" };
}

/**
 * Wire schema of ToolSpec: a tool as discovery lists it. Strict: an unknown field is refused, as
 * for Permissions, because ignoring a misspelt `required_permissions` would lift a restriction.
 */
export const ToolSpecSchema = z
  .object({
    name: name.describe("Unique tool name."),
    description: z.string().describe("What the tool does, for a model choosing among tools."),
    parameters: z
      .record(z.string(), JsonValueSchema)
      .optional()
      .describe("JSON Schema of the tool's arguments; absent or {} when it takes none."),
    required_permissions: z
      .array(name)
      .optional()
      .describe("Roles a caller must hold to use the tool; absent or [] for none."),
  })
  .strict()
  .meta({ id: "ToolSpec", description: "A tool that can be discovered and called." });
export type ToolSpecWire = z.output<typeof ToolSpecSchema>;

/**
 * A {@link ToolInfo} as read from the wire: `requiredPermissions` is present only when the
 * ToolSpec named roles (this implementation's tools restrict by `canUseTool` instead).
 */
export type ToolSpecInfo = ToolInfo & { readonly requiredPermissions?: readonly string[] };

const NO_PARAMETERS: JsonSchema = Object.freeze({ type: "object", properties: Object.freeze({}) });

/**
 * A discovered tool on the wire. `required_permissions` is written only when non-empty.
 *
 * @example
 * const wire = (await tools.discover(ctx)).map((t) => toolSpecToWire(t));
 */
export function toolSpecToWire(tool: ToolSpecInfo): ToolSpecWire {
  const roles = tool.requiredPermissions ?? [];
  const wire = {
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    ...(roles.length > 0 ? { required_permissions: [...roles] } : {}),
  };
  const fix = "A tool needs a non-empty name, a description and JSON parameters.";
  checkUntrustedJson(wire.parameters, "tool.parameters", fix);
  return parseOrThrow(ToolSpecSchema, wire, ErrorCode.INVALID_INPUT, "tool", fix);
}

/**
 * Reads a ToolSpec into a {@link ToolSpecInfo}. Missing or empty `parameters` read as the
 * schema of a tool without arguments (`{ type: "object", properties: {} }`), since a ToolInfo's
 * parameters are always an object schema. Throws `NervaError` INVALID_INPUT naming the bad
 * field, before any recursive work on a value nested too deep or too large.
 *
 * @example
 * const tool = toolSpecFromWire({ name: "search", description: "Search the web" });
 */
export function toolSpecFromWire(wire: unknown): ToolSpecInfo {
  const fix =
    "Send { name: string, description: string, parameters?: JSON Schema object, required_permissions?: string[] }.";
  checkUntrustedJson(wire, "tool", fix);
  const t = parseOrThrow(ToolSpecSchema, wire, ErrorCode.INVALID_INPUT, "tool", fix);
  const empty = t.parameters === undefined || Object.keys(t.parameters).length === 0;
  const roles = t.required_permissions ?? [];
  return {
    name: t.name,
    description: t.description,
    parameters: empty ? NO_PARAMETERS : (t.parameters as JsonSchema),
    ...(roles.length > 0 ? { requiredPermissions: roles } : {}),
  };
}

/** Wire schema of Channel: where a response goes and what it can render. */
export const ChannelSchema = z
  .object({
    name: name.describe('Channel name, e.g. "slack", "api", "sms".'),
    supports_markdown: z.boolean().default(true).describe("Whether the channel renders markdown."),
    supports_media: z
      .boolean()
      .default(false)
      .describe("Whether the channel can show images and files."),
    max_length: z
      .number()
      .int()
      .min(0)
      .max(2_147_483_647)
      .default(0)
      .describe("Longest response in characters; 0 means no limit."),
  })
  .meta({ id: "Channel", description: "The target channel of a response and what it supports." });
export type ChannelWire = z.output<typeof ChannelSchema>;

/**
 * A channel with its name, as the wire carries it: `spec` is what {@link ChannelSpec} a
 * responder formats for (`responder.format(result, channel.spec, ctx)`), `supportsMedia` is kept
 * for callers that attach media (this implementation's responders produce text only).
 */
export interface NamedChannel {
  readonly name: string;
  readonly spec: ChannelSpec;
  readonly supportsMedia: boolean;
}

/**
 * A channel on the wire: `format: "markdown"` is `supports_markdown: true`, a `maxLength` of
 * `null` (no limit) is `max_length: 0`.
 *
 * @example
 * const wire = channelToWire({ name: "sms", spec: { format: "plain", maxLength: 160 }, supportsMedia: false });
 */
export function channelToWire(channel: NamedChannel): ChannelWire {
  return parseOrThrow(
    ChannelSchema,
    {
      name: channel.name,
      supports_markdown: channel.spec.format === "markdown",
      supports_media: channel.supportsMedia,
      max_length: channel.spec.maxLength ?? 0,
    },
    ErrorCode.INVALID_INPUT,
    "channel",
    "A channel needs a non-empty name and a maxLength that is null or a non-negative integer.",
  );
}

/**
 * Reads a Channel into a {@link NamedChannel}, with the published defaults: markdown unless
 * `supports_markdown` is false, no media, no length limit (`max_length` 0 or absent). Throws
 * `NervaError` INVALID_INPUT naming the bad field.
 *
 * @example
 * const channel = channelFromWire({ name: "slack", max_length: 4000 });
 * const response = await responder.format(result, channel.spec, ctx);
 */
export function channelFromWire(wire: unknown): NamedChannel {
  const c = parseOrThrow(
    ChannelSchema,
    wire,
    ErrorCode.INVALID_INPUT,
    "channel",
    "Send { name: string, supports_markdown?: boolean, supports_media?: boolean, max_length?: integer >= 0 }.",
  );
  return {
    name: c.name,
    spec: {
      format: c.supports_markdown ? "markdown" : "plain",
      maxLength: c.max_length === 0 ? null : c.max_length,
    },
    supportsMedia: c.supports_media,
  };
}
