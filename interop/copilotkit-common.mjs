// What the CopilotKit interop scripts share: the clients CopilotKit pages use, each with
// its own schemas, and the check of events against them.
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);

/** @ag-ui/client 0.0.48 (CopilotKit 1.54) and 0.0.59 (CopilotKit 1.74), which declare no
 * protocolVersion, and 1.0.0, which declares one. */
export const clients = {
  "0.0.48": { client: require("ag-ui-client-0048"), core: require("ag-ui-core-0048"), declares: undefined },
  "0.0.59": { client: require("ag-ui-client-0059"), core: require("ag-ui-core-0059"), declares: undefined },
  "1.0.0": { client: require("@ag-ui/client"), core: require("@ag-ui/core/schemas"), declares: "1.0.0" },
};

/** Each event `core`'s zod schemas refuse, as `WHERE event I (TYPE): path: message`. */
export function schemaErrors(core, events, where) {
  const out = [];
  events.forEach((e, i) => {
    const r = core.EventSchemas.safeParse(e);
    if (!r.success) out.push(`${where} event ${i} (${e.type}): ${r.error.issues.map((x) => `${x.path.join(".")}: ${x.message}`).join("; ")}`);
  });
  return out;
}
