// Bundles src/main.jsx (with CopilotKit's stylesheet) into dist/ and copies
// the HTML page beside it. `node build.mjs --dev` keeps React's development
// build and skips minification.
import { build } from "esbuild";
import { copyFile, mkdir, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));
const outdir = join(root, "dist");
const dev = process.argv.includes("--dev");

await rm(outdir, { recursive: true, force: true });
await mkdir(outdir, { recursive: true });

const result = await build({
  absWorkingDir: root,
  entryPoints: { main: "src/main.jsx" },
  outdir,
  bundle: true,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  assetNames: "assets/[name]-[hash]",
  format: "esm",
  platform: "browser",
  target: ["es2022"],
  jsx: "automatic",
  minify: !dev,
  sourcemap: dev ? "linked" : false,
  define: {
    "process.env.NODE_ENV": JSON.stringify(dev ? "development" : "production"),
  },
  loader: {
    ".woff": "file",
    ".woff2": "file",
    ".ttf": "file",
    ".eot": "file",
    ".svg": "file",
    ".png": "file",
  },
  logLevel: "warning",
  metafile: true,
});

await copyFile(join(root, "src", "index.html"), join(outdir, "index.html"));

let total = 0;
for (const file of Object.keys(result.metafile.outputs)) {
  total += (await stat(join(root, file))).size;
}
console.log(`built dist/ (${(total / 1024 / 1024).toFixed(1)} MiB${dev ? ", development" : ""})`);
