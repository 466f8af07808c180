#!/usr/bin/env node
// `npm start`: runs the Node entry as `npm run build` bundled it. Nothing is compiled or written
// here, so the service starts from a read-only image.
import { runBuilt } from './built.js';

await runBuilt('entry/node.mjs');
