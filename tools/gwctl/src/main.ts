#!/usr/bin/env node
import { run } from './program';

// Wiring only: the real process environment and streams. process.exitCode (not process.exit) lets
// stdout drain when it is a pipe.
void run(process.argv.slice(2), {
  output: { stdout: (text) => process.stdout.write(text), stderr: (text) => process.stderr.write(text) },
  env: process.env,
  cwd: process.cwd(),
  exitCode: 0,
}).then((exitCode) => {
  process.exitCode = exitCode;
});
