// A tiny static server for dist/, loopback only.
//   node serve.mjs [--port 5173] [--host 127.0.0.1]
// It is also imported by the browser test, which starts it on a free port.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { dirname, extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".eot": "application/vnd.ms-fontobject",
  ".map": "application/json",
};

export const distDir = join(dirname(fileURLToPath(import.meta.url)), "dist");

/** Starts serving `dir`; resolves to the listening http.Server. */
export function serveStatic({ dir = distDir, host = "127.0.0.1", port = 0 } = {}) {
  const server = createServer(async (req, res) => {
    try {
      const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
      const rel = normalize(path === "/" ? "/index.html" : path);
      const file = join(dir, rel);
      if (!file.startsWith(dir + sep)) {
        res.writeHead(403).end();
        return;
      }
      const body = await readFile(file);
      res.writeHead(200, {
        "content-type": TYPES[extname(file)] ?? "application/octet-stream",
        "cache-control": "no-store",
      });
      res.end(body);
    } catch {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === normalize(process.argv[1])) {
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(name);
    return i > 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
  };
  const host = arg("--host", "127.0.0.1");
  const port = Number(arg("--port", process.env.PORT ?? "5173"));
  const server = await serveStatic({ host, port });
  const { port: bound } = server.address();
  console.log(`serving dist/ on http://${host}:${bound}/`);
  console.log(
    `open http://${host}:${bound}/?runtimeUrl=http://127.0.0.1:8000/copilotkit&agent=agentic_chat`,
  );
}
