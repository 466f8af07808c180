#!/usr/bin/env node
// `npx webhook-inbox <command>`: registers tsx so the TypeScript sources run as they are (no build
// step), then hands over to the CLI.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
