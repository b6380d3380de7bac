// The web app of `age2048 serve` as a person uses it, in a real headless Chromium (Debian's
// `chromium`, driven by playwright-core, which downloads no browser):
//   - Play: a seeded 3x3 game played by keys shows the four q-values `best` prints, a zero
//     regret for optimal moves and the regret of a worse one, and undo takes it back; n and
//     space play the best move; every variant of the board side by side, each move coloured
//     by its loss; the moves played coloured by their regret;
//   - Analyse: a pasted board shows the numbers `best --format json` prints, for every
//     variant, each move's loss against the best shown and coloured, and a malformed board
//     the CLI's one line;
//   - Evaluate: a pasted game log, and a dropped one, give `evaluate`'s numbers (its summary,
//     each move's regret, the mistakes in order, the regret per age); the URL holds the log;
//   - SQL: an example query runs, a forbidden statement is refused on the page;
//   - API: the page documents every route, and its examples answer;
//   - Figures: the missing report is rendered, its steps shown, then the page shows it.
// It solves 3x3 and 2x3 into DATA (default WORK/data; reused once solved), serves them on a
// free port of loopback, and saves screenshots of Play, Analyse and Evaluate into SCREENSHOTS.
//
//   AGE2048_BIN=target/debug/age2048 node tests/browser/run.mjs
//   env: CHROMIUM (default /usr/bin/chromium), WORK (default $TMPDIR/age2048-browser),
//        DATA (default WORK/data), SCREENSHOTS (default WORK/screenshots)
import { chromium } from 'playwright-core';
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  // n and space play the best move.
  for (const [n, key] of [[13, 'n'], [14, ' ']]) {
    const before = best('3x3', 'expectation', await gridText('#play-grid'));
    await page.keyboard.press(key === ' ' ? 'Space' : key);
    await page.waitForFunction((m) => document.getElementById('play-moves').textContent === String(m), n);
    eq(await page.$eval('#play-regret', (e) => e.dataset.value), '0', `regret of the move ${JSON.stringify(key)} played`);
    const last = await page.$eval('#play-history li:last-child', (li) => li.textContent);
    eq(last, `${n}. ${before.best}`, `the move ${JSON.stringify(key)} played`);
  }
  // The moves played, each coloured by its regret.
  const hist = await page.$$eval('#play-history li', (lis) => lis.map((li) => li.className));
  eq(hist.length, 14, 'moves listed');
  assert(hist.every((c) => c === 'l-best'), `optimal moves coloured as best: ${hist}`);
  // Every variant of the board side by side (3x3 has one here; 2x3 below has two).
  const now = await gridText('#play-grid');
  await page.waitForFunction((b) => document.querySelector('#play-variants tbody').dataset.board === b, now);
  const rows = await page.$$eval('#play-variants tr[data-variant]', (trs) => trs.map((tr) => tr.dataset.variant));
  eq(JSON.stringify(rows), JSON.stringify(['expectation']), '3x3 variants');
  await page.click('#play-hint');
  await page.screenshot({ path: join(shots, 'play.png') });
});

await check('Play: on 2x3 every variant solved is shown side by side, each move with its loss', async () => {
  await open('#play?board=2x3&variant=goal-128&seed=3&moves=');
  await page.waitForSelector('#play-variants tr[data-variant="goal-128"]');
  const board = await gridText('#play-grid');
  await page.waitForFunction((b) => document.querySelector('#play-variants tbody').dataset.board === b, board);
  for (const variant of ['expectation', 'goal-128']) {
    const cli = best('2x3', variant, board);
    const cells = await page.$$eval(`#play-variants tr[data-variant="${variant}"] td[data-move]`,
      (tds) => tds.map((td) => [td.dataset.move, td.dataset.value === '' ? null : Number(td.dataset.value), td.dataset.loss]));
    for (const [d, q, loss] of cells) {
      eq(q, cli[d], `${variant} q(${d})`);
      if (q !== null) {
        const l = cli.value - q <= 1e-9 * Math.max(Math.abs(cli.value), 1) ? 0 : cli.value - q;
        eq(Number(loss), l, `${variant} loss(${d})`);
      }
    }
  }
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
    // Each move's loss against the best, shown and coloured.
    const cells = await page.$$eval(`#an-table tr[data-variant="${variant}"] td[data-move]`,
      (tds) => tds.map((td) => ({ d: td.dataset.move, loss: td.dataset.loss, cls: td.className, text: (td.querySelector('.loss') || {}).textContent })));
    for (const c of cells) {
      const q = cli[c.d];
      if (q === null) { eq(c.cls, 'invalid', `${variant} ${c.d} invalid`); continue; }
      const l = cli.value - q <= 1e-9 * Math.max(Math.abs(cli.value), 1) ? 0 : cli.value - q;
      eq(Number(c.loss), l, `${variant} loss of ${c.d}`);
      eq(c.text, l === 0 ? 'best' : `−${l.toFixed(6)}`, `${variant} loss shown for ${c.d}`);
      const r = l / Math.max(Math.abs(cli.value), 1e-12);
      const want = l === 0 ? 'l-best' : (r < 0.01 ? 'l-inacc' : (r < 0.05 ? 'l-mistake' : 'l-blunder'));
      assert(c.cls.split(' ').includes(want), `${variant} ${c.d}: class ${c.cls}, expected ${want}`);
    }
  }
  await page.screenshot({ path: join(shots, 'analyse.png') });
  await open('#analyse?board=3x3');
  await page.fill('#an-text', '. 8 4/4 . ./. . .');
  await page.click('#an-go');
  await page.waitForSelector('#an-table:not([hidden]) tr[data-variant="expectation"]');
  const cli = best('3x3', 'expectation', '. 8 4/4 . ./. . .');
  const shown = await page.$$eval('#an-table tr[data-variant="expectation"] td[data-value] .qv', (tds) => tds.map((td) => td.textContent));
  eq(JSON.stringify(shown), JSON.stringify([cli.L, cli.R, cli.U, cli.D, cli.value].map((x) => (x === null ? '–' : x.toFixed(6)))), 'numbers shown');
  // Editing a cell by clicking it analyses the new board.
  await page.click('#an-grid .cell[data-r="2"][data-c="0"]');
  await page.waitForFunction(() => document.getElementById('an-text').value === '. 8 4/4 . ./2 . .');
  await page.waitForFunction(() => /age 18/.test(document.getElementById('an-head').textContent));
  await page.fill('#an-text', '. 8 4/4 . ./. . .');
  await page.click('#an-go');
  await page.waitForFunction(() => /age 16/.test(document.getElementById('an-head').textContent));
  await page.fill('#an-text', '2 0 4/0 8');
  await page.click('#an-go');
  await page.waitForSelector('#an-error:not([hidden])');
  eq(await page.textContent('#an-error'), cliError(['best', '--data', data, '--board', '3x3', '2 0 4/0 8']), 'the error line');
});

// A 2x3 game log: the optimal policy's moves with a worse one now and then, as `evaluate`
// reads it (CSV), from the game route.
async function gameLog(seed, n) {
  let moves = '';
  const lines = ['game,board,move'];
  for (let i = 0; i < n; i += 1) {
    const g = await (await fetch(`${url}/api/game?board=2x3&variant=expectation&seed=${seed}&moves=${moves}`)).json();
    if (!g.now) break;
    const worse = 'LRUD'.split('').find((d) => d !== g.now.best && g.now[d] !== null);
    const mv = i % 4 === 3 && worse ? worse : g.now.best;
    lines.push(`${seed},${g.text},${mv}`);
    moves += mv;
  }
  return lines.join('\n') + '\n';
}

function evaluateCli(log) {
  const dir = mkdtempSync(join(tmpdir(), 'age2048-evaluate-'));
  writeFileSync(join(dir, 'log.csv'), log);
  const out = execFileSync(bin, ['evaluate', '--data', data, '--board', '2x3', '--log', join(dir, 'log.csv'), '--out', join(dir, 'out'), '--format', 'json']);
  const csv = readFileSync(join(dir, 'out', 'moves.csv')).toString().trim().split('\n');
  const header = csv[0].split(',');
  const moves = csv.slice(1).map((l) => Object.fromEntries(l.split(',').map((v, i) => [header[i], v])));
  rmSync(dir, { recursive: true, force: true });
  return { summary: JSON.parse(out.toString()), moves };
}

await check('Evaluate: a pasted game log gives evaluate\'s numbers, its mistakes in order and the regret per age', async () => {
  const log = (await gameLog(11, 16)) + (await gameLog(12, 12)).split('\n').slice(1).join('\n');
  const cli = evaluateCli(log);
  await open('#evaluate?board=2x3&variant=expectation');
  await page.fill('#ev-log', log);
  await page.click('#ev-go');
  await page.waitForSelector('#ev-result:not([hidden])');
  eq(Number(await page.$eval('#ev-mean', (e) => e.dataset.value)), cli.summary.mean_regret, 'mean regret');
  eq(Number(await page.$eval('#ev-game-mean', (e) => e.dataset.value)), cli.summary.mean_game_regret, 'mean total regret per game');
  eq(await page.textContent('#ev-games'), String(cli.summary.games), 'games');
  const regrets = await page.$$eval('#ev-moves tbody td.regret', (tds) => tds.map((td) => Number(td.dataset.value)));
  eq(JSON.stringify(regrets), JSON.stringify(cli.moves.map((m) => Number(m.regret))), 'each move\'s regret');
  const mistakes = await page.$$eval('#ev-mistakes li[data-line]', (lis) => lis.map((li) => Number(li.dataset.line)));
  const want = cli.moves.filter((m) => m.optimal !== 'true').map((m) => Number(m.line));
  assert(want.length > 0, 'the log has mistakes');
  eq(JSON.stringify(mistakes), JSON.stringify(want), 'the mistakes, in log order');
  const bars = await page.$$eval('#ev-chart rect', (rs) => rs.length);
  assert(bars > 0, 'the regret per age is drawn');
  // The URL holds the log: a fresh page shows the same table.
  assert(/log=/.test(page.url()), `the URL holds the log: ${page.url()}`);
  const again = await context.newPage();
  await again.goto(page.url());
  await again.waitForSelector('#ev-result:not([hidden])');
  eq(JSON.stringify(await again.$$eval('#ev-moves tbody td.regret', (tds) => tds.map((td) => Number(td.dataset.value)))), JSON.stringify(regrets), 'the shared URL\'s table');
  await again.close();
  await page.screenshot({ path: join(shots, 'evaluate.png'), fullPage: false });
  // A malformed log: the CLI's line.
  await page.fill('#ev-log', 'game,board,move\n0,2 4 8/0 0 2,X\n');
  await page.click('#ev-go');
  await page.waitForSelector('#ev-error:not([hidden])');
  assert(/'X' is not a move/.test(await page.textContent('#ev-error')), await page.textContent('#ev-error'));
});

await check('Evaluate: a dropped log file (JSON lines) is evaluated', async () => {
  const csv = await gameLog(21, 10);
  const jsonl = csv.trim().split('\n').slice(1).map((l) => {
    const [game, board, move] = l.split(',');
    return JSON.stringify({ game: Number(game), board, move });
  }).join('\n') + '\n';
  const cli = evaluateCli(csv);
  await open('#evaluate?board=2x3&variant=expectation');
  await page.evaluate((text) => {
    const dt = new DataTransfer();
    dt.items.add(new File([text], 'log.jsonl', { type: 'application/json' }));
    const target = document.getElementById('ev-log');
    target.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    target.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, jsonl);
  await page.waitForSelector('#ev-result:not([hidden])');
  eq(await page.inputValue('#ev-log'), jsonl, 'the dropped file fills the log');
  eq(Number(await page.$eval('#ev-mean', (e) => e.dataset.value)), cli.summary.mean_regret, 'mean regret');
});

await check('API: the page documents every route, and its examples answer', async () => {
  await open('#api');
  const routes = await page.$$eval('#api-routes tr[data-route]', (trs) => trs.map((tr) => tr.dataset.route));
  for (const r of ['/api/info', '/api/best', '/api/analyse', '/api/game', '/api/evaluate', '/api/sql', '/api/sql/examples', '/api/figures']) {
    assert(routes.includes(r), `${r} documented`);
  }
  const links = await page.$$eval('#api-routes a', (as) => as.map((a) => a.getAttribute('href')));
  assert(links.length >= 6, `${links.length} examples`);
  for (const l of links) {
    const r = await fetch(`${url}${l}`);
    eq(r.status, 200, `example ${l}`);
    await r.json();
  }
  assert(/request bodies 64 KiB/.test(await page.textContent('#api-limits')), 'the limits are given');
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
  await page.fill('#sql-text', 'CREATE TABLE t AS SELECT 1');
  await page.click('#sql-run');
  await page.waitForSelector('#sql-error:not([hidden])');
  const error = await page.textContent('#sql-error');
  assert(/^refused: statement type CREATE/.test(error), error);
  // Two statements hidden by a dollar-quoted string: DuckDB's parser counts them.
  await page.fill('#sql-text', "SELECT $$'$$ AS a; SELECT 42 AS hidden");
  await page.click('#sql-run');
  await page.waitForFunction(() => /2 statements/.test(document.getElementById('sql-error').textContent));
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

// Issue 56: Play over a policy kept for the states optimal play reaches (`solve --reach`), its
// use case, served by a second server over a solve of its own.
const reachData = join(work, 'reach');
execFileSync(bin, ['solve', '--board', '2x3', '--variant', 'goal-64', '--layout', 'policy', '--reach',
  '--data', reachData, '--quiet'], { stdio: 'inherit' });
const reachServer = spawn(bin, ['serve', '--data', reachData, '--port', '0', '--reports', join(work, 'reach-reports')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const reachUrl = await new Promise((resolve, reject) => {
  const lines = createInterface({ input: reachServer.stdout });
  lines.once('line', (l) => resolve(l.replace(/^age2048 serve: /, '').replace(/\/$/, '')));
  reachServer.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
});

await check('Play over a --reach policy solve: n plays the stored move to the end of the game', async () => {
  await page.goto(`${reachUrl}/#play?board=2x3&variant=goal-64&seed=5`);
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForFunction(() => document.getElementById('play-moves').textContent === '0');
  assert(/stored one/.test(await page.textContent('#play-note')), await page.textContent('#play-note'));
  for (let i = 1; i < 400; i += 1) {
    if (!(await page.isHidden('#play-summary'))) break;
    const stored = await page.$eval('#play-q td.best', (td) => td.id.slice(2));
    assert(!(await page.isDisabled(`#move-${stored}`)), `the stored move ${stored} is playable`);
    await page.keyboard.press('n');
    await page.waitForFunction((n) => document.getElementById('play-moves').textContent === String(n), i);
    assert(/the stored move$/.test(await page.textContent('#play-last')), await page.textContent('#play-last'));
  }
  const summary = await page.textContent('#play-summary');
  assert(/Game over: goal (made|missed) in \d+ moves/.test(summary), summary);
  const played = Number(await page.textContent('#play-moves'));
  assert(played > 0, 'moves were played');
  assert(new RegExp(`${played} of ${played} moves the stored one`).test(summary), summary);
  eq(await page.$$eval('#play-history li.l-best', (li) => li.length), played, 'every move the stored one');
  assert(/moves=[LRUD]+/.test(page.url()), `the URL holds the game: ${page.url()}`);
});

reachServer.kill();
await context.close();
rmSync(profile, { recursive: true, force: true });
server.kill();
console.log(failures ? `${failures} browser check(s) failed` : `browser checks passed; screenshots in ${shots}`);
process.exit(failures ? 1 : 0);
