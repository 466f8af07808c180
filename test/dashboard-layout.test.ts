// The dashboard's frame and overview measured in headless chromium, by geometry: the overview's eight
// figure cards never leave one card alone on a row (at 1280 px they stood 7 + 1, "Dead messages"
// alone); at 390 px the section links that do not fit are a sideways scroll away, each edge with
// more beyond it shows a shadow, and the current section's link is scrolled into sight.
// Needs a process: headless Chromium lays out the overview at each width.
import { describe, expect, it } from 'vitest';
import { buildTestApp } from './helpers/app.ts';
import { ARTIFACTS, hasChromium, useBrowser } from './helpers/browser.ts';
import { useTestDatabase } from './helpers/database.ts';

const { db } = await useTestDatabase();
const TOKEN = 'dashboard-layout-token-0123456789';
const test = await buildTestApp(db, { config: { ADMIN_TOKEN: TOKEN } });
test.setNow(Date.now());

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** How many boxes stand on each row, top to bottom (a row: the same top edge, to a pixel). */
const rowSizes = (boxes: readonly Box[]): number[] => {
  const rows = new Map<number, number>();
  for (const box of boxes) rows.set(Math.round(box.y), (rows.get(Math.round(box.y)) ?? 0) + 1);
  return [...rows.entries()].sort(([a], [b]) => a - b).map(([, count]) => count);
};

/** Every box of `locator`'s matches, in the page's own coordinates. */
const boxesOf = async (locator: { all(): Promise<Array<{ boundingBox(): Promise<Box | null> }>> }) => {
  const boxes: Box[] = [];
  for (const element of await locator.all()) {
    const box = await element.boundingBox();
    if (box === null) throw new Error('an element has no box: it is not rendered');
    boxes.push(box);
  }
  return boxes;
};

describe.skipIf(!hasChromium)('the dashboard layout in headless chromium', () => {
  const browser = useBrowser(test.app);

  it('lays the eight overview cards out 4 + 4 at 1280 px, and never one alone on a row at other widths', async () => {
    const page = await browser.signedIn(TOKEN, 1280, 900);
    const cards = page.locator('section.figures > div');
    expect(await cards.count()).toBe(8);
    expect(rowSizes(await boxesOf(cards))).toEqual([4, 4]);
    await page.screenshot({ path: `${ARTIFACTS}/overview-cards-1280.png` });
    for (const width of [1440, 1024, 900, 768, 600, 480, 390, 360]) {
      await page.setViewportSize({ width, height: 900 });
      const rows = rowSizes(await boxesOf(cards));
      expect(
        rows.reduce((sum, count) => sum + count, 0),
        `${width} px`,
      ).toBe(8);
      expect(Math.min(...rows), `${width} px: ${rows.join(' + ')}`).toBeGreaterThan(1);
    }
  });

  it('at 390 px keeps every section link reachable, shows a shadow where the links go on, and shows the current one', async () => {
    const sections = ['Overview', 'Events', 'Outbox', 'Senders', 'Destinations', 'Jobs', 'Refused'];
    for (const width of [390, 320, 1280]) {
      const page = await browser.signedIn(TOKEN, width, 800);
      const nav = page.locator('header nav');
      const links = nav.locator('a');
      expect(await links.allTextContents()).toEqual(sections);
      const navBox = await nav.boundingBox();
      if (navBox === null) throw new Error('the navigation is not rendered');
      expect(navBox.x + navBox.width, `${width} px`).toBeLessThanOrEqual(width);
      /** Whether a link lies wholly inside the navigation's visible box (not hidden by its overflow). */
      const shown = (box: Box) => box.x >= navBox.x - 0.5 && box.x + box.width <= navBox.x + navBox.width + 0.5;
      const overflows = await nav.evaluate((element) => element.scrollWidth > element.clientWidth);
      if (!overflows) {
        for (const box of await boxesOf(links)) expect(shown(box), `${width} px: ${JSON.stringify(box)}`).toBe(true);
        await page.close();
        continue;
      }
      // The cue: the top pixel row (above the glyphs) at each edge, where a shadow marks more links.
      const edge = (side: 'left' | 'right') =>
        page.screenshot({
          clip: { x: side === 'left' ? navBox.x : navBox.x + navBox.width - 8, y: navBox.y, width: 8, height: 1 },
        });
      if (width === 390)
        await page.screenshot({ path: `${ARTIFACTS}/navigation-390.png`, clip: { x: 0, y: 0, width, height: 120 } });
      const startLeft = await edge('left');
      const startRight = await edge('right');
      await nav.evaluate((element) => {
        element.scrollLeft = element.scrollWidth;
      });
      const endLeft = await edge('left');
      const endRight = await edge('right');
      // At the start nothing lies to the left (plain), more to the right (shadow); at the end the reverse.
      expect(startRight.equals(startLeft), `${width} px: a cue at the right edge before scrolling`).toBe(false);
      expect(endRight.equals(startLeft), `${width} px: no cue at the right edge once scrolled`).toBe(true);
      expect(endLeft.equals(startLeft), `${width} px: a cue at the left edge once scrolled`).toBe(false);
      // Scrolled to the end, the last sections lie inside the navigation and the viewport.
      for (const label of ['Jobs', 'Refused']) {
        const box = await links.filter({ hasText: label }).boundingBox();
        expect(box !== null && shown(box) && box.x + box.width <= width, `${width} px: ${label}`).toBe(true);
      }
      if (width === 390)
        await page.screenshot({
          path: `${ARTIFACTS}/navigation-390-scrolled.png`,
          clip: { x: 0, y: 0, width, height: 120 },
        });
      // On the Refused page its own link is brought into sight.
      await links.filter({ hasText: 'Refused' }).click();
      await page.locator('h1', { hasText: 'Refused' }).waitFor();
      const current = await page.locator('header nav a[aria-current]').boundingBox();
      expect(current !== null && shown(current), `${width} px: the current section shows`).toBe(true);
      if (width === 390) await page.screenshot({ path: `${ARTIFACTS}/navigation-390-refused.png` });
      await page.close();
    }
  });
});
