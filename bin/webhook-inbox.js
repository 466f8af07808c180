#!/usr/bin/env node
// `npx webhook-inbox <command>`: the operator CLI as `npm run build` bundled it.
import { runBuilt } from './built.js';

await runBuilt('cli/main.mjs');
