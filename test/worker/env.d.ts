// wrangler 4.86's `wrangler types` does not declare the main module; tests reach the Worker through
// `exports.default`, typed from the entry itself.
declare namespace Cloudflare {
  interface GlobalProps {
    mainModule: typeof import('../../src/entry/worker.ts');
  }
}
