// Runs the AG-UI 1.0 reference encodings (@ag-ui/encoder, @ag-ui/proto 1.0.0 and the
// @ag-ui/client transport parsers) over standard input, for the Rust interop tests.
//
//   node encoding.mjs encode sse|proto          JSON Lines events in, the reference
//                                               EventEncoder's SSE or protobuf frames out
//   node encoding.mjs decode sse|proto [CHUNK]  a stream in (fed to the client's
//                                               parseSSEStream / parseProtoStream in
//                                               CHUNK-byte pieces, default: whole), the
//                                               events it yields out as JSON Lines
//
// A stream the reference rejects exits with status 1 and its message on stderr, after
// the events it yielded before the failure.
import { EventEncoder } from "@ag-ui/encoder";
import * as proto from "@ag-ui/proto";
import { parseSSEStream, parseProtoStream } from "@ag-ui/client";
import { Subject } from "rxjs";

process.env.SUPPRESS_TRANSFORMATION_WARNINGS = "1";

// The client's HttpEventType values (a TypeScript enum the package does not export).
const HEADERS = "headers";
const DATA = "data";

const readStdin = async () => {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks);
};

const [, , command, format, chunkArg] = process.argv;
const input = await readStdin();

if (command === "encode") {
  const encoder = new EventEncoder(format === "proto" ? { accept: proto.AGUI_MEDIA_TYPE } : {});
  const out = [];
  for (const line of input.toString("utf8").split("\n")) {
    if (line.trim() === "") continue;
    const event = JSON.parse(line);
    out.push(
      format === "proto"
        ? Buffer.from(encoder.encodeProtobuf(event))
        : Buffer.from(encoder.encodeSSE(event), "utf8"),
    );
  }
  process.stdout.write(Buffer.concat(out));
} else if (command === "decode") {
  const chunk = chunkArg ? Number(chunkArg) : input.length || 1;
  const source = new Subject();
  const parse = format === "proto" ? parseProtoStream : parseSSEStream;
  const lines = [];
  const done = new Promise((resolve) => {
    parse(source).subscribe({
      next: (event) => lines.push(JSON.stringify(event)),
      error: (err) => {
        process.stderr.write(`${err && err.message ? err.message : String(err)}\n`);
        resolve(1);
      },
      complete: () => resolve(0),
    });
  });
  source.next({ type: HEADERS, status: 200, headers: new Headers() });
  for (let i = 0; i < input.length; i += chunk) {
    source.next({ type: DATA, data: new Uint8Array(input.subarray(i, i + chunk)) });
  }
  source.complete();
  const status = await done;
  process.stdout.write(lines.map((l) => l + "\n").join(""));
  process.exitCode = status;
} else {
  process.stderr.write("usage: node encoding.mjs encode|decode sse|proto [CHUNK]\n");
  process.exitCode = 2;
}
