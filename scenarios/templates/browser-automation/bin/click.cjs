// click.cjs URL OUT.png: drives Debian's Chromium with playwright-core (executablePath; no browser
// download): opens URL, reads the title the page's script set, clicks the button, reads the text
// the click wrote, takes a screenshot. Prints one JSON line {title, before, after, png_bytes}.
// playwright-core is the recipe's global npm install (NODE_PATH = `npm root -g`, as run.sh sets).
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');

(async () => {
  const [url, out] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
    await page.goto(url);
    const title = await page.title();
    const before = await page.textContent('#status');
    await page.click('#go');
    const after = await page.textContent('#status');
    await page.screenshot({ path: out });
    console.log(JSON.stringify({ title, before, after, png_bytes: fs.statSync(out).size }));
  } finally {
    await browser.close();
  }
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
