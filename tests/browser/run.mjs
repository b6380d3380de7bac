// The web app of `age2048 serve` as a person uses it, in a real headless Chromium (Debian's
// `chromium`, driven by playwright-core, which downloads no browser):
//   - Play: a seeded 3x3 game played by keys shows the four q-values `best` prints, a zero
//     regret for optimal moves and the regret of a worse one, and undo takes it back;
//   - Analyse: a pasted board shows the numbers `best --format json` prints, for every
//     variant, and a malformed board the CLI's one line;
//   - SQL: an example query runs, a forbidden statement is refused on the page;
//   - Figures: the missing report is rendered, its steps shown, then the page shows it.
// It solves 3x3 and 2x3 into DATA (default WORK/data; reused once solved), serves them on a
// free port of loopback, and saves screenshots of Play and Analyse into SCREENSHOTS.
//
//   AGE2048_BIN=target/debug/age2048 node tests/browser/run.mjs
//   env: CHROMIUM (default /usr/bin/chromium), WORK (default $TMPDIR/age2048-browser),
//        DATA (default WORK/data), SCREENSHOTS (default WORK/screenshots)
import { chromium } from 'playwright-core';
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const bin = process.env.AGE2048_BIN;
if (!bin) throw new Error('set AGE2048_BIN to the age2048 binary');
const work = process.env.WORK || join(tmpdir(), 'age2048-browser');
const data = process.env.DATA || join(work, 'data');
const shots = process.env.SCREENSHOTS || join(work, 'screenshots');
mkdirSync(shots, { recursive: true });

let failures = 0;
async function check(name, f) {
  const t = Date.now();
  try {
    await f();
    console.log(`ok - ${name} (${Date.now() - t} ms)`);
  } catch (e) {
    failures += 1;
    console.log(`not ok - ${name}: ${e.stack || e}`);
  }
}

function assert(cond, message) {
  if (!cond) throw new Error(message);
}

function eq(a, b, message) {
  assert(a === b, `${message}: ${JSON.stringify(a)} !== ${JSON.stringify(b)}`);
}

function best(board, variant, text) {
  const out = execFileSync(bin, ['best', '--data', data, '--board', board, '--variant', variant, '--format', 'json', text]);
  return JSON.parse(out.toString())[0];
}

function cliError(args) {
  try {
    execFileSync(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    return e.stderr.toString().trim().replace(/^age2048: error: /, '');
  }
  throw new Error(`${args.join(' ')} did not fail`);
}

// The solves (a finished solve is reused, so a second run starts at once).
for (const [board, variants] of [['3x3', 'expectation'], ['2x3', 'expectation,goal-128']]) {
  execFileSync(bin, ['solve', '--board', board, '--variant', variants, '--data', data, '--quiet'], { stdio: 'inherit' });
}

// A report folder of its own, rendered afresh by the Figures tab.
const reports = join(work, 'reports');
rmSync(reports, { recursive: true, force: true });
const server = spawn(bin, ['serve', '--data', data, '--port', '0', '--reports', reports], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise((resolve, reject) => {
  const lines = createInterface({ input: server.stdout });
  lines.once('line', (l) => resolve(l.replace(/^age2048 serve: /, '').replace(/\/$/, '')));
  server.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
});

const profile = mkdtempSync(join(tmpdir(), 'age2048-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1100, height: 760 },
});
const page = context.pages()[0] || await context.newPage();
page.on('pageerror', (e) => { failures += 1; console.log(`not ok - page error: ${e}`); });

async function open(hash) {
  const t = Date.now();
  await page.goto(`${url}/${hash}`);
  await page.waitForSelector('body[data-ready="true"]');
  return Date.now() - t;
}

// The board shown, as board text.
async function gridText(selector) {
  return page.$eval(selector, (g) => {
    const cols = getComputedStyle(g).gridTemplateColumns.split(' ').length;
    const cells = [...g.children].map((c) => c.textContent || '.');
    const rows = [];
    for (let i = 0; i < cells.length; i += cols) rows.push(cells.slice(i, i + cols).join(' '));
    return rows.join('/');
  });
}

async function qValues() {
  return page.$$eval('#play-q td', (tds) => Object.fromEntries(tds.map((td) => [td.id.slice(2), td.dataset.value === '' ? null : Number(td.dataset.value)])));
}

await check('Play: a seeded 3x3 game played by keys shows the q-values and zero regret for optimal moves', async () => {
  const ms = await open('#play?board=3x3&variant=expectation&seed=7');
  console.log(`# page usable ${ms} ms after load`);
  assert(ms < 3000, `the page took ${ms} ms`);
  const keys = { L: ['ArrowLeft', 'a'], R: ['ArrowRight', 'd'], U: ['ArrowUp', 'w'], D: ['ArrowDown', 's'] };
  for (let i = 1; i <= 12; i += 1) {
    const board = await gridText('#play-grid');
    const q = await qValues();
    const cli = best('3x3', 'expectation', board);
    for (const d of 'LRUD') eq(q[d], cli[d], `q(${d}) of ${board}`);
    const bestCell = await page.$eval('#play-q td.best', (td) => td.id.slice(2));
    eq(bestCell, cli.best, `highlighted move of ${board}`);
    await page.keyboard.press(keys[cli.best][i % 2]);
    await page.waitForFunction((n) => document.getElementById('play-moves').textContent === String(n), i);
    eq(await page.$eval('#play-regret', (e) => e.dataset.value), '0', `regret of move ${i}`);
    eq(await page.textContent('#play-regret'), '0.000000', `regret shown for move ${i}`);
  }
  eq(await page.$eval('#play-total-regret', (e) => e.dataset.value), '0', 'total regret');
  assert(/seed=7/.test(page.url()) && /moves=[LRUD]{12}/.test(page.url()), `the URL holds the game: ${page.url()}`);
  // A worse move: its regret is the best q minus its q; undo takes it back.
  const q = await qValues();
  const valid = 'LRUD'.split('').filter((d) => q[d] !== null);
  const worst = valid.reduce((a, b) => (q[a] <= q[b] ? a : b));
  const top = Math.max(...valid.map((d) => q[d]));
  // Optimal within query::play's tolerance (a billionth of the best q): marked only beyond it.
  if (top - q[worst] > 1e-9 * Math.max(Math.abs(top), 1)) {
    await page.keyboard.press(keys[worst][0]);
    await page.waitForFunction(() => document.getElementById('play-moves').textContent === '13');
    const regret = Number(await page.$eval('#play-regret', (e) => e.dataset.value));
    assert(Math.abs(regret - (top - q[worst])) < 1e-9, `regret ${regret}, expected ${top - q[worst]}`);
    assert(await page.$eval('#play-regret', (e) => e.classList.contains('regret')), 'the regret is marked');
    await page.keyboard.press('u');
    await page.waitForFunction(() => document.getElementById('play-moves').textContent === '12');
    eq(await page.$eval('#play-total-regret', (e) => e.dataset.value), '0', 'total regret after undo');
  }
  // The same URL in a fresh page replays the same game.
  const board = await gridText('#play-grid');
  const again = await context.newPage();
  await again.goto(page.url());
  await again.waitForSelector('body[data-ready="true"]');
  await again.waitForFunction(() => document.getElementById('play-moves').textContent === '12');
  eq(await again.$eval('#play-grid', (g) => [...g.children].map((c) => c.textContent || '.').join(' ')),
    board.replaceAll('/', ' '), 'the shared URL\'s board');
  await again.close();
  await page.click('#play-hint');
  await page.screenshot({ path: join(shots, 'play.png') });
});

await check('Analyse: a pasted board shows the numbers best prints, a malformed one the CLI\'s line', async () => {
  await open('#analyse?board=2x3');
  const text = '2 4 8/0 0 2';
  await page.fill('#an-text', text);
  await page.press('#an-text', 'Enter');
  await page.waitForSelector('#an-table:not([hidden]) tr[data-variant]');
  for (const variant of ['expectation', 'goal-128']) {
    const cli = best('2x3', variant, text);
    const row = await page.$$eval(`#an-table tr[data-variant="${variant}"] td[data-value]`,
      (tds) => tds.map((td) => (td.dataset.value === '' ? null : Number(td.dataset.value))));
    eq(JSON.stringify(row), JSON.stringify([cli.L, cli.R, cli.U, cli.D, cli.value]), `${variant} row`);
  }
  await open('#analyse?board=3x3');
  await page.fill('#an-text', '. 8 4/4 . ./. . .');
  await page.click('#an-go');
  await page.waitForSelector('#an-table:not([hidden]) tr[data-variant="expectation"]');
  const cli = best('3x3', 'expectation', '. 8 4/4 . ./. . .');
  const shown = await page.$$eval('#an-table tr[data-variant="expectation"] td[data-value]', (tds) => tds.map((td) => td.textContent));
  eq(JSON.stringify(shown), JSON.stringify([cli.L, cli.R, cli.U, cli.D, cli.value].map((x) => (x === null ? '–' : x.toFixed(6)))), 'numbers shown');
  // Editing a cell by clicking it analyses the new board.
  await page.click('#an-grid .cell[data-r="2"][data-c="0"]');
  await page.waitForFunction(() => document.getElementById('an-text').value === '. 8 4/4 . ./2 . .');
  await page.waitForFunction(() => /age 18/.test(document.getElementById('an-head').textContent));
  await page.fill('#an-text', '. 8 4/4 . ./. . .');
  await page.click('#an-go');
  await page.waitForFunction(() => /age 16/.test(document.getElementById('an-head').textContent));
  await page.screenshot({ path: join(shots, 'analyse.png') });
  await page.fill('#an-text', '2 0 4/0 8');
  await page.click('#an-go');
  await page.waitForSelector('#an-error:not([hidden])');
  eq(await page.textContent('#an-error'), cliError(['best', '--data', data, '--board', '3x3', '2 0 4/0 8']), 'the error line');
});

await check('SQL: an example query runs; a forbidden statement is refused on the page', async () => {
  await open('#sql');
  await page.waitForSelector('#sql-examples button');
  await page.click('#sql-examples button[data-example="1"]');
  await page.waitForFunction(() => document.querySelectorAll('#sql-result tbody tr').length > 0);
  const head = await page.$$eval('#sql-result th', (ths) => ths.map((t) => t.textContent));
  eq(JSON.stringify(head), JSON.stringify(['age', 'terminal_share']), 'columns');
  const n = await page.$$eval('#sql-result tbody tr', (trs) => trs.length);
  assert(n > 100, `${n} ages`);
  assert(!(await page.isDisabled('#sql-csv')), 'CSV download offered');
  await page.fill('#sql-text', "COPY (SELECT 1) TO 'x.csv'");
  await page.click('#sql-run');
  await page.waitForSelector('#sql-error:not([hidden])');
  const error = await page.textContent('#sql-error');
  assert(/^refused: only read-only queries/.test(error), error);
  eq(await page.$$eval('#sql-result tr', (trs) => trs.length), 0, 'no result shown');
});

await check('Figures: a missing report is rendered with its steps shown, then shown', async () => {
  await open('#figures');
  // The render's steps as they come (`report: [n/N] …`), then the report itself.
  await page.waitForFunction(() => /report: \[\d+\/\d+\]/.test(document.getElementById('fig-lines').textContent), null, { timeout: 60000 });
  await page.waitForSelector('#fig-frame:not([hidden])', { timeout: 180000 });
  const status = await page.textContent('#fig-status');
  assert(/^The report of this data/.test(status), status);
  const frame = page.frames().find((f) => f.url().endsWith('/reports/index.html'));
  assert(frame, 'the report is in the frame');
  await frame.waitForSelector('img[src^="figures/"]');
  const figures = await frame.$$eval('img[src^="figures/"]', (imgs) => imgs.length);
  assert(figures >= 5, `${figures} figures`);
});

await context.close();
rmSync(profile, { recursive: true, force: true });
server.kill();
console.log(failures ? `${failures} browser check(s) failed` : `browser checks passed; screenshots in ${shots}`);
process.exit(failures ? 1 : 0);
