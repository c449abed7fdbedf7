// Builds the dashboard's browser side into ../static: app.js (the page's one script, with
// Preact, htm and uPlot bundled) and app.css. Run by `make dashboard-assets` after `npm ci`.
import { build } from "esbuild";

await build({
  entryPoints: { app: "src/main.js" },
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  outdir: "../static",
  legalComments: "eof",
  logLevel: "info",
});
