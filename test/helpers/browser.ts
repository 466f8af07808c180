// A test app served on a local port and driven in Debian's headless chromium (playwright-core), as
// the dashboard tests do: the browser's launch flags, signing in with the admin token, and where
// screenshots go. Call `useBrowser` at file level inside a describe that skips without chromium.
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { type Browser, type BrowserContextOptions, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { DatabaseEnv } from '../../src/db/client.ts';
import { WAIT_MS } from './patience.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const ARTIFACTS = 'test/artifacts';
export const hasChromium = existsSync(CHROMIUM);

/** What page.evaluate reads in the browser (the test's own types have no DOM). */
export type BrowserGlobal = { document: { documentElement: { scrollWidth: number } } };

export interface DashboardBrowser {
  origin: Promise<string>;
  /** A page at `width`, signed in with `token`, on the overview. */
  signedIn(token: string, width?: number, height?: number): Promise<Page>;
}

/** The app served on a free local port: its origin, and how to stop it. */
export async function serveLocally(app: Hono<DatabaseEnv>): Promise<{ origin: string; close(): Promise<void> }> {
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A new page whose waits (a locator, a click, a navigation) give up after WAIT_MS rather than
 * Playwright's 30 s: a page on a busy machine is slow, not broken.
 */
export async function openPage(browser: Browser, options: BrowserContextOptions = {}): Promise<Page> {
  const page = await browser.newPage(options);
  page.setDefaultTimeout(WAIT_MS);
  page.setDefaultNavigationTimeout(WAIT_MS);
  return page;
}

/** Debian's chromium, headless, with the flags every dashboard test runs it with. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
}

export function useBrowser(app: Hono<DatabaseEnv>): DashboardBrowser {
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  const origin = new Promise<string>((resolve) =>
    server.once('listening', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
  let browser: Browser | undefined;
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    origin,
    async signedIn(token, width = 1280, height = 900) {
      if (browser === undefined) throw new Error('the browser did not start');
      const page = await openPage(browser, { viewport: { width, height } });
      await page.goto(`${await origin}/admin`);
      await page.fill('#sign-in input[name="token"]', token);
      await page.click('#sign-in button');
      await page.locator('h1', { hasText: 'Overview' }).waitFor();
      return page;
    },
  };
}
