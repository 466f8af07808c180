// What zod's `locales` namespace is in the Worker bundle: English only, the locale zod registers by
// default. wrangler.toml's [alias] puts this module where zod's two `export * as locales` import
// `../locales/index.js`, because @hono/zod-openapi hands the whole `z` namespace to
// extendZodWithOpenApi, so no bundler can drop the other locales (about 39 KB gzipped).
// docs/decisions/0016-tracing-in-the-worker-bundle.md.
export { default as en } from 'zod/v4/locales/en.js';
