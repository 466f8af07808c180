#!/usr/bin/env node
// `npx webhook-inbox <command>`: the operator CLI as `npm run build` bundled it. V8's compile cache
// (Node 22.1 and later; in the system's temporary folder) keeps the compiled bundle and packages
// between runs: a CLI process is short and pays for its compiling each time otherwise.
import module from 'node:module';
import { runBuilt } from './built.js';

module.enableCompileCache?.();
await runBuilt('cli/main.mjs');
