// Bundle src/index.js into one minified ES module for anywidget: `node build.mjs OUTFILE`.
// Uses esbuild's JS API, which works whether or not npm ran esbuild's install script.
import * as esbuild from "esbuild";

const outfile = process.argv[2];
if (!outfile) {
  console.error("usage: node build.mjs OUTFILE");
  process.exit(2);
}
await esbuild.build({
  entryPoints: [new URL("./src/index.js", import.meta.url).pathname],
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  legalComments: "eof",
  outfile,
  logLevel: "warning",
});
