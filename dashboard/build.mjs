// Bundles the dashboard into dist/: index.html, app.js and app.css, nothing loaded from elsewhere.
import { build } from 'esbuild';
import { copyFile, mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import process from 'node:process';

const root = import.meta.dirname;
const dist = join(root, 'dist');

await rm(dist, { recursive: true, force: true });
await mkdir(dist);
await build({
  absWorkingDir: root,
  entryPoints: ['src/main.tsx'],
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  outdir: 'dist',
  entryNames: 'app',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
});
await copyFile(join(root, 'src', 'index.html'), join(dist, 'index.html'));

const sizes = await Promise.all(
  ['app.js', 'app.css', 'index.html'].map(async (name) => `${name} ${(await stat(join(dist, name))).size} B`),
);
process.stdout.write(`dashboard: ${sizes.join(', ')}\n`);
