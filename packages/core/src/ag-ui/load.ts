// @ag-ui/core (the RunAgentInput schema) and @ag-ui/encoder (the SSE encoding) are optional
// peer dependencies: loaded on first use, MISSING_DEPENDENCY naming the package when absent.
import { importOptional } from "../internal/optional-dependency.js";

const CORE = "@ag-ui/core";
const ENCODER = "@ag-ui/encoder";

// What Nerva uses of the two packages, declared here so that its types do not need them installed.
interface SchemasModule {
  readonly RunAgentInputSchema: unknown;
}
/** The encoder of one stream (SSE: the media type HttpAgent asks for). */
export interface AgUiEncoder {
  encodeSSE(event: unknown): string;
}
interface EncoderModule {
  readonly EventEncoder: new () => AgUiEncoder;
}

let schemas: Promise<SchemasModule> | null = null;
let encoderModule: Promise<EncoderModule> | null = null;

/** @ag-ui/core's zod schemas (`RunAgentInputSchema`, `EventSchemas`…). */
export function loadSchemas(): Promise<SchemasModule> {
  schemas ??= importOptional(
    CORE,
    () => import(`${CORE}/schemas`) as Promise<SchemasModule>,
    "The AG-UI route (reading a RunAgentInput)",
    `${CORE}@^1`,
  );
  // A failed load is tried again by the next call (the package may be installed meanwhile).
  void schemas.catch(() => (schemas = null));
  return schemas;
}

/** A new SSE `EventEncoder` of @ag-ui/encoder. */
export async function loadEncoder(): Promise<AgUiEncoder> {
  encoderModule ??= importOptional(
    ENCODER,
    () => import(ENCODER) as Promise<EncoderModule>,
    "writeAgUiStream (encoding AG-UI events)",
    `${ENCODER}@^1`,
  );
  void encoderModule.catch(() => (encoderModule = null));
  const { EventEncoder } = await encoderModule;
  return new EventEncoder();
}
