// view.test.mjs - end-to-end test of `cuscope view` in headless Chromium.
//
// Starts `cuscope view` on committed traces, loads the viewer in Debian's /usr/bin/chromium
// (driven by playwright-core; no browser is downloaded), and checks that the timeline canvas is
// drawn, that the findings list says "analysing…" while the server runs the rules (held back on
// purpose) and then shows the d2h-sync finding of samples/rules/traces/d2h-sync-bad.db, and that
// clicking it moves the visible time window and highlights it, that two viewers open at once each
// answer their own page (the token travels in a header, no cookie is set), that a generated trace (which has
// the writer's overview) is drawn from the overview with "loading detail…" while its tracks are held
// back, then in detail. Saves screenshots to
// docs/images/viewer-*.png ($CUSCOPE_E2E_SHOTS when set) and prints the time to first render of a large generated trace.
//
// Prints a Check-style summary line, "N%: Checks: N, Failures: F, Errors: E", which
// scripts/test sums, and exits non-zero on a failure.
//
//   node tests/e2e/view.test.mjs            (CUSCOPE_BIN, CUSCOPE_GEN_TRACE from the environment)
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = resolve(process.env.CUSCOPE_BIN || join(root, 'build-view', 'cuscope'));
const genTrace = process.env.CUSCOPE_GEN_TRACE || join(dirname(bin), 'tests', 'gen_trace');
const bigEvents = Number(process.env.CUSCOPE_E2E_EVENTS || 2000000);
/* a large trace made already (gen_trace --events N), instead of generating one */
const bigTrace = process.env.CUSCOPE_E2E_TRACE || '';
const shots = process.env.CUSCOPE_E2E_SHOTS || join(root, 'docs', 'images');
const work = mkdtempSync(join(tmpdir(), 'cuscope-e2e-'));

let checks = 0;
let failures = 0;
let errors = 0;

/* One check: prints its result, counts it. */
function check(name, ok, detail) {
	checks++;
	if (!ok) failures++;
	console.log((ok ? 'ok   ' : 'FAIL ') + name + (detail ? ': ' + detail : ''));
}

/*
 * Start `cuscope view` on a trace (with env added to the environment); resolves with
 * {url, proc, startMs, began} once the URL is printed.
 */
function startView(trace, env) {
	return new Promise((resolve, reject) => {
		const began = performance.now();
		/* a trace of the repository by its path from the root, as the page shows it */
		const arg = trace.startsWith(root + '/') ? trace.slice(root.length + 1) : trace;
		const proc = spawn(bin, ['view', '--port', '0', '--timeout', '120', arg], {
			cwd: root,
			stdio: ['ignore', 'pipe', 'inherit'],
			env: { ...process.env, ...(env || {}) },
		});
		let out = '';
		proc.stdout.on('data', (d) => {
			out += d;
			const m = out.match(/^(http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{32})\n/);
			if (m) resolve({ url: m[1], proc, began, startMs: performance.now() - began });
		});
		proc.on('exit', (code) => reject(new Error('cuscope view exited with ' + code)));
	});
}

/* The token of a viewer's URL. */
function tokenOf(url) {
	return new URL(url).searchParams.get('token');
}

/* Number of pixels of the timeline canvas that are not the background. */
async function inkedPixels(page) {
	return page.evaluate(() => {
		const c = document.getElementById('timeline');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235)) n++;
		return n;
	});
}

/*
 * Poll fn(arg) in the page until it is true or timeoutMs passed (page.waitForFunction evaluates a
 * string, which the viewer's Content-Security-Policy forbids). Returns the last value.
 */
async function waitFor(page, fn, arg, timeoutMs) {
	const end = performance.now() + timeoutMs;
	let v = false;
	while (!(v = await page.evaluate(fn, arg)) && performance.now() < end)
		await new Promise((r) => setTimeout(r, 10));
	return v;
}

/* Wait until the page has drawn the timeline with events; returns window.__viewer's numbers. */
async function waitRendered(page) {
	const ok = await waitFor(page, () => !!(window.__viewer && window.__viewer.firstRenderMs !== null),
		null, 30000);
	if (!ok) throw new Error('the timeline was not drawn within 30 s');
	return page.evaluate(() => ({
		firstRenderMs: window.__viewer.firstRenderMs,
		lastQueryMs: window.__viewer.lastQueryMs,
		t0: window.__viewer.t0,
		t1: window.__viewer.t1,
	}));
}

/* A screenshot into the images directory, the mouse moved off the timeline (no tooltip). */
async function shot(page, name) {
	await page.mouse.move(5, 795);
	await page.waitForTimeout(50);
	await page.screenshot({ path: join(shots, name) });
}

/* The canvas pixel (CSS coordinates) as [r, g, b, a]. */
async function pixelAt(page, x, y) {
	return page.evaluate(([x, y]) => {
		const c = document.getElementById('timeline');
		const dpr = c.width / c.clientWidth;
		return Array.from(c.getContext('2d').getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data);
	}, [x, y]);
}

/* The x (CSS, in the canvas) of time t in the page's current window. */
async function xOfTime(page, t) {
	return page.evaluate((t) => {
		const v = window.__viewer;
		const w = document.getElementById('timeline').clientWidth;
		return 210 + ((t - v.t0) / (v.t1 - v.t0)) * (w - 210);
	}, t);
}

/* Wait for the window answer of the current view (after a move). */
async function settle(page) {
	await page.waitForTimeout(150);
	await waitFor(page, () => {
		const v = window.__viewer;
		return v.window && Math.abs(v.window.t0 - Math.floor(v.t0)) <= 1 && Math.abs(v.window.t1 - Math.ceil(v.t1)) <= 1;
	}, null, 5000);
}

/*
 * The features of the page on recorded traces: the axis and tooltips at every zoom, launch slices
 * and arrows, the steps framed, numbered and reachable by number, details of a clicked event with
 * its finding, a range's totals, search, WASD, the legend, findings on the timeline, memory
 * values on hover; on a generated job of two processes: a group per process, collapsible, and a
 * stack with file:line in the details.
 */
async function features(context, views) {
	const page = await context.newPage();
	const pageErrors = [];
	page.on('pageerror', (e) => pageErrors.push(String(e)));
	const d2h = await startView(join(root, 'samples/rules/traces/d2h-sync-bad.db'));
	views.push(d2h);
	await page.goto(d2h.url);
	await waitRendered(page);
	await waitFor(page, () => window.__viewer.framedSteps === true, null, 20000);
	await settle(page);
	const box = await page.locator('#timeline').boundingBox();

	/* the first view frames the steady-state steps, not the start-up */
	const framed = await page.evaluate(() => {
		const v = window.__viewer;
		const steady = v.steps.filter((s) => !s.warmup);
		return { t0: v.t0, t1: v.t1, first: steady[0].start, last: v.steps[v.steps.length - 1].end,
			whole: v.summary.end - v.summary.start, n: v.steps.length };
	});
	check('first view frames the steady-state steps', framed.t0 <= framed.first && framed.t1 >= framed.last &&
		framed.t1 - framed.t0 < 0.3 * framed.whole, JSON.stringify(framed));
	/* numbered steps in the step lane: the lane's pixel in the middle of a step is its colour */
	const s10 = await page.evaluate(() => window.__viewer.steps.find((s) => s.index === 10));
	const px10 = await pixelAt(page, await xOfTime(page, (s10.start + s10.end) / 2), 26 + 12);
	check('steps drawn numbered in their lane', px10[2] > 150 && px10[0] < 160, px10.join(','));
	await shot(page, 'viewer-steps.png');

	/* go to step N */
	await page.fill('#step-input', '10');
	await page.press('#step-input', 'Enter');
	await settle(page);
	const at10 = await page.evaluate(() => [window.__viewer.t0, window.__viewer.t1, document.body.dataset.step]);
	check('go to step 10 frames step 10', at10[2] === '10' && at10[0] <= s10.start && at10[1] >= s10.end &&
		at10[1] - at10[0] < 1.2 * (s10.end - s10.start), JSON.stringify([at10, s10]));

	/* the axis: distinct labels to the tick's precision at every zoom, relative when deep */
	const axes = [];
	for (const [t0, span] of [[5.19e9, 1e6], [482e6, 2.5e6], [5265481532, 1e4], [5265481532, 100]]) {
		await page.evaluate(([a, b]) => window.__viewer.setWindow(a, b), [t0, t0 + span]);
		await page.waitForTimeout(50);
		axes.push(await page.evaluate(() => window.__viewer.axis));
	}
	const distinct = axes.every((a) => new Set(a.labels).size === a.labels.length && a.labels.length >= 4);
	check('time axis: every tick label distinct at 1 ms, 2.5 ms, 10 us and 100 ns windows', distinct,
		axes.map((a) => a.labels.join(' | ')).join(' ;; '));
	check('time axis: 1 ms at 5.19 s reads to the tick', /^5\.19\d/.test(axes[0].labels[0].replace(/\u2009/g, '')) &&
		!axes[0].relative, axes[0].labels.join(' | '));
	check('time axis: 100 ns deep in the trace is relative to a base tick', axes[3].relative &&
		axes[3].labels[1].startsWith('+') && axes[3].labels[1].endsWith(' ns'), axes[3].labels.join(' | '));

	/* click the d2h-sync finding: its costliest occurrence framed, as a range with its totals */
	await page.locator('#findings li[data-rule="d2h-sync"]').click();
	await settle(page);
	await waitFor(page, () => document.body.dataset.range === 'ready', null, 5000);
	const focus = await page.evaluate(() => ({ h: window.__viewer.highlight, flows: window.__viewer.flowsDrawn,
		rows: document.querySelectorAll('#range tr[data-track]').length }));
	check('finding selects its costliest occurrence as a range with totals', focus.h.focusStart > focus.h.first &&
		focus.rows > 0, JSON.stringify(focus));
	/* launch slices and their arrows at this zoom */
	check('launch-to-GPU arrows drawn at a readable zoom', focus.flows > 0, 'arrows ' + focus.flows);
	const launchRow = await page.evaluate(() => window.__viewer.rows.find((r) => r.track && r.track.kind === 'launch'));
	const launchInk = await page.evaluate((r) => {
		const c = document.getElementById('timeline');
		const dpr = c.width / c.clientWidth;
		const d = c.getContext('2d').getImageData(210 * dpr, (r.y + 2) * dpr, c.width - 210 * dpr, (r.h - 4) * dpr).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && Math.abs(d[i] - d[i + 2]) > 20) n++;
		return n;
	}, launchRow);
	check('host launch slices drawn from the kernel rows', launchRow && launchInk > 20, 'ink ' + launchInk);
	const apiNames = await page.evaluate(() => [window.__viewer.window.names, window.__viewer.window.names_short]);
	check('API names shown without the _v3020 suffix', apiNames[1].includes('cudaStreamSynchronize') &&
		apiNames[0].includes('cudaStreamSynchronize_v3020') && apiNames[1].every((n) => !/_v\d+$/.test(n)),
		JSON.stringify(apiNames[1]));
	await page.keyboard.press('Escape');

	/* click a kernel: every stored field, the launch, the finding of its step */
	const target = await page.evaluate(() => {
		const v = window.__viewer;
		for (const r of v.rows) {
			if (!r.track || r.track.kind !== 'stream') continue;
			const t = v.window.tracks.find((w) => w.id === r.track.id);
			const it = t && t.items.find((i) => i[2] >= 0 && i[5] === 0 && i[0] >= v.t0 && i[1] <= v.t1);
			if (it) return { y: r.y + r.h / 2, it };
		}
		return null;
	});
	await page.mouse.click(box.x + (await xOfTime(page, (target.it[0] + target.it[1]) / 2)), box.y + target.y);
	await waitFor(page, () => document.body.dataset.selected === 'ready', null, 5000);
	const det = await page.evaluate(() => ({
		keys: [...document.querySelectorAll('#details tr')].map((r) => r.dataset.key),
		start: (document.querySelector('#details tr[data-key="start"] .value') || {}).textContent,
		streamTitle: (document.querySelector('#details tr[data-key="streamId"] .key') || {}).title,
		name: document.querySelector('#details .name').textContent,
		launch: !!document.querySelector('#details .go-launch'),
		finding: [...document.querySelectorAll('#details .belongs button')].map((b) => b.dataset.rule),
		stack: document.querySelector('#details').textContent.includes('no stack recorded'),
	}));
	check('details: every stored field of the kernel', ['grid', 'block', 'registersPerThread', 'streamId',
		'correlationId', 'launchStart', 'dynamicSharedMemory'].every((k) => det.keys.includes(k)), det.keys.join(','));
	check('details: formatted by the unit and labelled as columns.def says', / ns\]$/.test(det.start || '') &&
		det.streamTitle === 'stream (id)', JSON.stringify([det.start, det.streamTitle]));
	check('details: demangled name, its launch call, the finding of its step', !det.name.startsWith('_Z') &&
		det.launch && det.finding.includes('d2h-sync') && det.stack, JSON.stringify(det));
	await shot(page, 'viewer-details.png');

	/* tooltip: exact times at this zoom */
	await page.mouse.move(box.x + (await xOfTime(page, (target.it[0] + target.it[1]) / 2)), box.y + target.y);
	await page.waitForTimeout(100);
	const tip = await page.evaluate(() => document.getElementById('tooltip').textContent);
	const startText = tip.split('\n').find((l) => l.startsWith('start')) || '';
	check('tooltip: start to the ns, duration exact', startText.replace(/[\u2009 ]/g, '') ===
		'start' + (target.it[0] / 1e9).toFixed(9) + 's' && tip.includes('(' + (target.it[1] - target.it[0]).toLocaleString('en-US') + ' ns)'),
		JSON.stringify(tip));

	/* memory values on hover */
	const memRow = await page.evaluate(() => window.__viewer.rows.find((r) => r.track && r.track.kind === 'memory'));
	await page.mouse.move(box.x + 600, box.y + memRow.y + memRow.h / 2);
	await page.waitForTimeout(100);
	const memTip = await page.evaluate(() => document.getElementById('tooltip').textContent);
	check('memory value on hover', /device memory: [\d.]+ (B|KiB|MiB|GiB) in use at /.test(memTip), memTip);

	/* range selection with totals: Shift+drag (over the steps: F frames them) */
	await page.keyboard.press('f');
	await settle(page);
	await page.keyboard.down('Shift');
	await page.mouse.move(box.x + 500, box.y + 120);
	await page.mouse.down();
	await page.mouse.move(box.x + 800, box.y + 120, { steps: 5 });
	await page.mouse.up();
	await page.keyboard.up('Shift');
	await waitFor(page, () => document.body.dataset.range === 'ready', null, 5000);
	const rng = await page.evaluate(() => {
		const a = window.__viewer.rangeAnswer;
		const stream = a.tracks.find((t) => window.__viewer.summary.tracks[t.id].kind === 'stream' && t.kernels > 0);
		return { kernels: stream && stream.kernels, busy: stream && stream.busy, span: a.t1 - a.t0,
			rows: document.querySelectorAll('#range tr[data-track]').length };
	});
	check('range selection: totals per track (busy, kernels)', rng.kernels > 0 && rng.busy > 0 && rng.busy <= rng.span &&
		rng.rows > 2, JSON.stringify(rng));
	await shot(page, 'viewer-range.png');
	await page.keyboard.press('Escape');
	/* a drag along the time axis selects a range too, and does not pan */
	const beforeAxis = await page.evaluate(() => [window.__viewer.t0, window.__viewer.t1]);
	await page.mouse.move(box.x + 450, box.y + 13);
	await page.mouse.down();
	await page.mouse.move(box.x + 700, box.y + 13, { steps: 5 });
	await page.mouse.up();
	await waitFor(page, () => document.body.dataset.range === 'ready', null, 5000);
	const axisSel = await page.evaluate(() => [window.__viewer.t0, window.__viewer.t1, window.__viewer.range]);
	check('a drag along the axis selects a range without panning', axisSel[2] && axisSel[0] === beforeAxis[0] &&
		axisSel[1] === beforeAxis[1] && axisSel[2].t0 > axisSel[0] && axisSel[2].t1 < axisSel[1],
		JSON.stringify([beforeAxis, axisSel]));
	/* F frames the selected range */
	await page.keyboard.press('f');
	await page.waitForTimeout(50);
	const fr = await page.evaluate(() => [window.__viewer.t0, window.__viewer.t1, window.__viewer.range]);
	const rs = fr[2].t1 - fr[2].t0;
	check('F frames the selected range', Math.abs(fr[0] - (fr[2].t0 - 0.05 * rs)) < 2 &&
		Math.abs(fr[1] - (fr[2].t1 + 0.05 * rs)) < 2, JSON.stringify(fr));
	await page.keyboard.press('Escape');

	/* search with next and previous: the first match after the view's start, then the next one and back */
	const viewStart = await page.evaluate(() => window.__viewer.t0);
	const counter = () => document.getElementById('search-count').textContent;
	await page.fill('#search', 'reduce_kernel');
	await page.press('#search', 'Enter');
	await waitFor(page, () => /^\d+ \/ \d+$/.test(document.getElementById('search-count').textContent) &&
		document.body.dataset.selected === 'ready', null, 5000);
	const s1 = await page.evaluate((c) => [document.getElementById('search-count').textContent,
		window.__viewer.selected], null);
	const k = Number(s1[0].split(' / ')[0]);
	const total = Number(s1[0].split(' / ')[1]);
	await page.press('#search', 'Enter');
	await waitFor(page, (n) => document.getElementById('search-count').textContent.startsWith(n + ' /'), k + 1, 5000);
	const s2 = await page.evaluate(() => [document.getElementById('search-count').textContent, window.__viewer.selected]);
	await page.click('#search-prev');
	await waitFor(page, (n) => document.getElementById('search-count').textContent.startsWith(n + ' /'), k, 5000);
	const s3 = await page.evaluate(() => [document.getElementById('search-count').textContent, window.__viewer.selected,
		window.__viewer.t0, window.__viewer.t1]);
	await waitFor(page, () => document.body.dataset.selected === 'ready', null, 5000);
	const found = await page.evaluate(() => document.querySelector('#details .name').textContent);
	check('search: the first match after the view start, next and previous, the match selected and in view',
		total > 100 && k >= 1 && s1[1].start >= viewStart && s2[0] === (k + 1) + ' / ' + total &&
		s3[0] === k + ' / ' + total && s2[1].start >= s1[1].start && s3[1].start === s1[1].start &&
		s3[2] <= s1[1].start && s3[3] >= s1[1].end && found.includes('reduce_kernel'),
		JSON.stringify([viewStart, s1, s2, s3, found]));
	await shot(page, 'viewer-search.png');
	await page.locator('#timeline').click({ position: { x: 5, y: 5 } });

	/* WASD */
	const wasd = [];
	for (const k of ['w', 's', 'd', 'a']) {
		const b = await page.evaluate(() => [window.__viewer.t0, window.__viewer.t1]);
		await page.keyboard.press(k);
		await page.waitForTimeout(80);
		const a = await page.evaluate(() => [window.__viewer.t0, window.__viewer.t1]);
		wasd.push([k, b, a]);
	}
	const span = (x) => x[1] - x[0];
	check('WASD: W zooms in, S out, D pans right, A left', span(wasd[0][2]) < span(wasd[0][1]) &&
		span(wasd[1][2]) > span(wasd[1][1]) && wasd[2][2][0] > wasd[2][1][0] && wasd[3][2][0] < wasd[3][1][0],
		JSON.stringify(wasd));

	/* findings on the timeline: a click on the finding's row in the findings lane selects it */
	await page.keyboard.press('0');
	await page.evaluate(() => { for (const e of document.querySelectorAll('#findings li.selected')) e.classList.remove('selected'); });
	await page.mouse.click(box.x + 700, box.y + 26 + 16 + 2 + 2);
	const laneSel = await page.evaluate(() => document.querySelectorAll('#findings li.selected[data-rule="d2h-sync"]').length);
	check('findings lane: clicking a finding there selects it', laneSel === 1);
	const legend = await page.evaluate(() => document.querySelectorAll('#legend li').length);
	check('legend listed', legend >= 10, legend + ' entries');
	await page.close();

	/* a job of two processes (generated, with stacks): a group each, collapsible; file:line */
	if (existsSync(genTrace)) {
		const job = join(work, 'job.db');
		execFileSync(genTrace, ['--events', '60000', '--processes', '2', job], { stdio: 'ignore' });
		const jv = await startView(job);
		views.push(jv);
		const p2 = await context.newPage();
		p2.on('pageerror', (e) => pageErrors.push(String(e)));
		await p2.goto(jv.url);
		await waitRendered(p2);
		await waitFor(p2, () => window.__viewer.analysis === 'ready', null, 20000);
		const groups = await p2.evaluate(() => window.__viewer.rows.filter((r) => r.group !== undefined)
			.map((r) => ({ pid: r.group, y: r.y })));
		const before = await p2.evaluate(() => window.__viewer.rows.length);
		const b2 = await p2.locator('#timeline').boundingBox();
		await p2.mouse.click(b2.x + 60, b2.y + groups[0].y + 10);
		const after = await p2.evaluate(() => [window.__viewer.rows.length, document.body.dataset.collapsed]);
		await shot(p2, 'viewer-groups.png');
		await p2.mouse.click(b2.x + 60, b2.y + groups[0].y + 10);
		const again = await p2.evaluate(() => window.__viewer.rows.length);
		check('a group per process, collapsible', groups.length === 2 && after[0] < before && after[1] === String(groups[0].pid) &&
			again === before, JSON.stringify({ groups, before, after, again }));
		/* each process's own steps in its group's header; a click on one shows that step */
		await p2.waitForTimeout(100);
		const g2 = await p2.evaluate(() => {
			const v = window.__viewer;
			const row = v.rows.filter((r) => r.group !== undefined)[1];
			const steps = v.procSteps.get(row.group) || [];
			const s = steps.find((x) => !x.warmup && x.start > v.t0 && x.end < v.t1);
			return { pid: row.group, y: row.y, n: v.procSteps.size, s, own: steps !== v.steps && steps.length };
		});
		const gx = await xOfTime(p2, (g2.s.start + g2.s.end) / 2);
		const gpx = await pixelAt(p2, gx, g2.y + 10);
		await p2.mouse.click(b2.x + gx, b2.y + g2.y + 10);
		await p2.waitForTimeout(100);
		const gw = await p2.evaluate(() => [window.__viewer.t0, window.__viewer.t1]);
		check('a job of several processes: each group shows its own steps, a click frames one', g2.n === 2 &&
			g2.own > 0 && gpx[2] > gpx[0] + 20 && gw[0] <= g2.s.start && gw[1] >= g2.s.end &&
			gw[1] - gw[0] < 1.2 * (g2.s.end - g2.s.start), JSON.stringify({ g2, gpx, gw }));
		await p2.keyboard.press('0');

		/* the axis and the steps stay on top while the tracks scroll */
		await p2.setViewportSize({ width: 1400, height: 420 });
		await p2.evaluate(() => { document.getElementById('timeline-scroll').scrollTop = 150; });
		await p2.waitForTimeout(150);
		const pinned = await p2.evaluate(() => {
			const top = document.getElementById('timeline-scroll').scrollTop;
			const c = document.getElementById('timeline');
			const dpr = c.width / c.clientWidth;
			const at = (x, y) => Array.from(c.getContext('2d').getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data);
			return { top, axis: at(5, top + 3), label: window.__viewer.axis.labels.length };
		});
		check('the axis stays pinned while the tracks scroll', pinned.top > 0 && pinned.axis.slice(0, 3).join() === '236,238,242',
			JSON.stringify(pinned));
		await p2.setViewportSize({ width: 1400, height: 800 });
		await p2.fill('#search', 'Memcpy DtoH');
		await p2.press('#search', 'Enter');
		await waitFor(p2, () => document.body.dataset.selected === 'ready', null, 5000);
		const stack = await p2.evaluate(() => [...document.querySelectorAll('#details .stack li')].map((l) => l.textContent));
		check('details: the stack with file:line', stack.some((l) => /train_step \u2014 \/home\/user\/train\d+\.py:\d+$/.test(l)),
			JSON.stringify(stack));
		await p2.close();
	}
	check('no script errors (features)', pageErrors.length === 0, pageErrors.join('; '));
}

async function main() {
	mkdirSync(shots, { recursive: true });
	/* a fresh profile in the temporary directory (playwright passes it as --user-data-dir) */
	const context = await chromium.launchPersistentContext(join(work, 'profile'), {
		executablePath: '/usr/bin/chromium',
		headless: true,
		args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync',
			'--disable-dev-shm-usage'],
		viewport: { width: 1400, height: 800 },
	});
	const views = [];
	try {
		const page = await context.newPage();
		const pageErrors = [];
		page.on('pageerror', (e) => pageErrors.push(String(e)));

		/* 1. the training trace: a drawn timeline */
		const train = await startView(join(root, 'samples/traces/train_small.db'));
		views.push(train);
		await page.goto(train.url);
		const r1 = await waitRendered(page);
		const ink = await inkedPixels(page);
		check('timeline drawn', ink > 5000, ink + ' non-blank pixels');
		check('token dropped from the address bar', !page.url().includes('token='), page.url());
		/* a reload, the token gone from the URL: the tab's sessionStorage still has it */
		await page.reload();
		await waitRendered(page);
		check('reload without the token in the URL still draws', (await inkedPixels(page)) > 5000);
		await page.screenshot({ path: join(shots, 'viewer-timeline.png') });

		/* zoom with the wheel: the window shrinks */
		const box = await page.locator('#timeline').boundingBox();
		await page.mouse.move(box.x + box.width * 0.6, box.y + 60);
		for (let i = 0; i < 5; i++) await page.mouse.wheel(0, -300);
		await page.waitForTimeout(400);
		const zoomed = await page.evaluate(() => [window.__viewer.t0, window.__viewer.t1]);
		check('wheel zooms in', zoomed[1] - zoomed[0] < (r1.t1 - r1.t0) / 2,
			Math.round(zoomed[1] - zoomed[0]) + ' ns < ' + Math.round(r1.t1 - r1.t0) + ' ns');
		/* drag pans: the span stays, the start moves */
		await page.mouse.move(box.x + box.width * 0.6, box.y + 60);
		await page.mouse.down();
		await page.mouse.move(box.x + box.width * 0.3, box.y + 60, { steps: 5 });
		await page.mouse.up();
		await page.waitForTimeout(300);
		const panned = await page.evaluate(() => [window.__viewer.t0, window.__viewer.t1]);
		check('drag pans', panned[0] > zoomed[0] &&
			Math.abs((panned[1] - panned[0]) - (zoomed[1] - zoomed[0])) < 2);
		await page.screenshot({ path: join(shots, 'viewer-zoomed.png') });

		/* 2. the d2h-sync trace, its analysis held back: the timeline first, then the finding */
		const d2h = await startView(join(root, 'samples/rules/traces/d2h-sync-bad.db'),
			{ CUSCOPE_VIEW_ANALYSIS_DELAY_MS: '3000' });
		views.push(d2h);
		await page.goto(d2h.url);
		await waitRendered(page);
		const pending = await page.evaluate(() => ({
			analysis: document.body.dataset.analysis,
			text: document.getElementById('findings').textContent,
			findings: document.querySelectorAll('#findings li[data-rule]').length,
		}));
		check('timeline drawn while the rules run, "analysing…" listed', pending.analysis === 'pending' &&
			pending.text.includes('analysing') && pending.findings === 0, JSON.stringify(pending));
		const listed = await waitFor(page, () => document.body.dataset.analysis === 'ready', null, 20000);
		const item = page.locator('#findings li[data-rule="d2h-sync"]').first();
		check('d2h-sync finding listed once the rules ran', listed && (await item.count()) === 1);
		const stepsText = await page.evaluate(() => document.getElementById('steps-text').textContent);
		check('steps listed', / steps \(\d+ warm-up\), found by /.test(stepsText), stepsText);
		const before = await page.evaluate(() => [Number(document.getElementById('timeline').dataset.t0),
			Number(document.getElementById('timeline').dataset.t1)]);
		await item.click();
		await waitFor(page, (b) => {
			const c = document.getElementById('timeline');
			return Number(c.dataset.t0) !== b[0] || Number(c.dataset.t1) !== b[1];
		}, before, 5000);
		await page.waitForTimeout(400);
		const after = await page.evaluate(() => ({
			t0: Number(document.getElementById('timeline').dataset.t0),
			t1: Number(document.getElementById('timeline').dataset.t1),
			highlight: window.__viewer.highlight,
			selected: document.querySelectorAll('#findings li.selected').length,
		}));
		check('click moves the window', after.t0 !== before[0] || after.t1 !== before[1],
			`${before[0]}..${before[1]} -> ${after.t0}..${after.t1}`);
		check('clicked finding highlighted, its costliest occurrence framed', after.highlight !== null &&
			after.selected === 1 && after.t0 <= after.highlight.focusStart &&
			after.t1 >= after.highlight.focusEnd, JSON.stringify(after));
		await page.screenshot({ path: join(shots, 'viewer-finding.png') });
		check('no script errors', pageErrors.length === 0, pageErrors.join('; '));

		/* two viewers at once: the training trace's page opened beside the d2h one. Each page's
		 * requests carry its own token (a header, never a cookie); the first page still works */
		const pageB = await context.newPage();
		await pageB.goto(train.url);
		await waitRendered(pageB);
		const probe = (tokens) => fetch('api/summary', { headers: { 'X-Cuscope-Token': tokens[0] } })
			.then((own) => fetch('api/summary', { headers: { 'X-Cuscope-Token': tokens[1] } })
				.then((other) => [own.status, other.status]));
		const [tokA, tokB] = [tokenOf(d2h.url), tokenOf(train.url)];
		const statusA = await page.evaluate(probe, [tokA, tokB]);
		const statusB = await pageB.evaluate(probe, [tokB, tokA]);
		check('two viewers: each page answered with its own token, refused with the other\'s',
			statusA.join() === '200,403' && statusB.join() === '200,403', statusA + ' ' + statusB);
		await page.bringToFront();
		await page.evaluate(() => { window.__viewer.window.stale = true; });
		const boxA = await page.locator('#timeline').boundingBox();
		await page.mouse.move(boxA.x + boxA.width * 0.5, boxA.y + 60);
		for (let i = 0; i < 3; i++) await page.mouse.wheel(0, -300);
		const refetched = await waitFor(page, () => window.__viewer.window && !window.__viewer.window.stale &&
			!document.getElementById('status').textContent.startsWith('error'), null, 5000);
		check('two viewers: the first page still queries its server after the second opened', refetched,
			await page.evaluate(() => document.getElementById('status').textContent));
		const cookies = await context.cookies();
		check('no cookie set', cookies.length === 0, JSON.stringify(cookies));
		await pageB.close();

		/* the steps come before the findings: framed while the rules still run (held back) */
		const early = await startView(join(root, 'samples/rules/traces/d2h-sync-bad.db'),
			{ CUSCOPE_VIEW_RULES_DELAY_MS: '4000' });
		views.push(early);
		const pe = await context.newPage();
		await pe.goto(early.url);
		await waitRendered(pe);
		const framedEarly = await waitFor(pe, () => window.__viewer.framedSteps === true, null, 20000);
		const pend = await pe.evaluate(() => ({ analysis: window.__viewer.analysis, steps: window.__viewer.steps.length,
			early: document.body.dataset.steps, list: document.getElementById('findings').textContent,
			span: window.__viewer.t1 - window.__viewer.t0, whole: window.__viewer.summary.end - window.__viewer.summary.start }));
		check('steps framed while the rules still run, findings "analysing…"', framedEarly && pend.analysis === 'pending' &&
			pend.steps === 45 && pend.early === 'early' && pend.list.includes('analysing') && pend.span < 0.3 * pend.whole,
			JSON.stringify(pend));
		const later = await waitFor(pe, () => window.__viewer.analysis === 'ready', null, 20000);
		check('then the findings', later && (await pe.locator('#findings li[data-rule="d2h-sync"]').count()) === 1);
		await pe.close();

		await features(context, views);

		/* 3. a generated trace (it has the writer's overview), its tracks held back: drawn from
		 * the overview with "loading detail…", then the detail */
		if (existsSync(genTrace)) {
			const small = join(work, 'small.db');
			execFileSync(genTrace, ['--events', '100000', '--overview-min', '0', small], { stdio: 'ignore' });
			const sv = await startView(small, { CUSCOPE_VIEW_TIMELINE_DELAY_MS: '3000' });
			views.push(sv);
			const page3 = await context.newPage();
			await page3.goto(sv.url);
			await waitRendered(page3);
			const early = await page3.evaluate(() => ({
				fromOverview: window.__viewer.firstFromOverview,
				detail: document.body.dataset.detail,
				badge: !document.getElementById('detail').hidden &&
					document.getElementById('detail').textContent,
			}));
			const earlyInk = await inkedPixels(page3);
			check('drawn from the overview before the tracks are read, "loading detail…" shown',
				early.fromOverview === true && early.detail === 'loading' &&
				early.badge === 'loading detail…' && earlyInk > 2000, JSON.stringify(early) + ' ink ' + earlyInk);
			const detailed = await waitFor(page3, () => window.__viewer.detailMs !== null &&
				document.body.dataset.detail === 'ready' && document.getElementById('detail').hidden, null, 20000);
			const names = await page3.evaluate(() => window.__viewer.window.names.length);
			check('then the detail, badge gone', detailed && names > 0, 'names ' + names);
			await page3.close();
		}

		/* 4. a large trace: time to first render */
		if (existsSync(genTrace) || bigTrace) {
			const big = bigTrace || join(work, 'big.db');
			let began = performance.now();
			if (!bigTrace) execFileSync(genTrace, ['--events', String(bigEvents), big], { stdio: 'ignore' });
			const genMs = performance.now() - began;
			const page2 = await context.newPage();
			const bv = await startView(big);
			views.push(bv);
			const loadBegan = performance.now();
			await page2.goto(bv.url);
			const r3 = await waitRendered(page2);
			const pageMs = performance.now() - loadBegan;
			const renderedAt = performance.now() - bv.began;
			await waitFor(page2, () => window.__viewer.findingsMs !== null, null, 120000);
			const findingsAt = performance.now() - bv.began;
			/* a few window queries at different zooms, timed in the page */
			const queries = await page2.evaluate(async (tok) => {
				const s = window.__viewer.summary;
				const span = s.end - s.start;
				const out = [];
				for (const frac of [1, 0.1, 0.001, 0.00001]) {
					const t0 = Math.floor(s.start + span * 0.5);
					const t1 = Math.ceil(t0 + span * frac);
					const b = performance.now();
					const r = await fetch(`api/window?t0=${t0}&t1=${t1}&px=1200`,
						{ headers: { 'X-Cuscope-Token': tok } });
					const text = await r.text();
					out.push({ frac, ms: performance.now() - b, bytes: text.length });
				}
				return out;
			}, tokenOf(bv.url));
			const bigCount = await page2.evaluate(() => {
				const m = window.__viewer.summary.meta;
				return m.kernels + m.memcpys + m.memsets + m.syncs + m.api_calls + m.nvtx + m.memory;
			});
			console.log(`large trace: ${bigCount} events (${bigTrace ? bigTrace : 'generated in ' +
				(genMs / 1000).toFixed(1) + ' s'})`);
			console.log(`  cuscope view start to URL: ${bv.startMs.toFixed(0)} ms`);
			console.log(`  page load to first timeline drawn: ${pageMs.toFixed(0)} ms (in-page ${r3.firstRenderMs.toFixed(0)} ms)`);
			console.log(`  start + first render: ${(bv.startMs + pageMs).toFixed(0)} ms (view start to timeline drawn: ${renderedAt.toFixed(0)} ms)`);
			const detailAt = await page2.evaluate(() => ({ d: window.__viewer.detailMs,
				o: window.__viewer.firstFromOverview }));
			console.log(`  first timeline drawn from the ${detailAt.o ? 'overview' : 'tracks'}; detail drawn ${
				(detailAt.d - r3.firstRenderMs).toFixed(0)} ms after it (view start to detail drawn: ${
				(renderedAt + detailAt.d - r3.firstRenderMs).toFixed(0)} ms)`);
			const stepsMs = await page2.evaluate(() => window.__viewer.stepsFramedMs);
			if (stepsMs !== null)
				console.log(`  view start to the steady-state steps framed: ${(renderedAt + stepsMs - r3.firstRenderMs).toFixed(0)} ms`);
			console.log(`  view start to findings listed: ${findingsAt.toFixed(0)} ms`);
			const loadMs = await page2.evaluate(() => window.__viewer.summary.meta.load_ms);
			console.log(`  timeline read by the server in ${loadMs} ms`);
			for (const q of queries)
				console.log(`  window query, ${q.frac} of the trace at 1200 px: ${q.ms.toFixed(1)} ms, ${q.bytes} bytes`);
			check('large trace renders', r3.firstRenderMs !== null);
			/* frame time: zoom and pan with the wheel, the mouse and WASD, the page drawing the
			 * last answer at the new scale at once (draw() timed in the page) */
			await waitFor(page2, () => window.__viewer.detailMs !== null, null, 120000);
			await page2.evaluate(() => { window.__viewer.frameMs.length = 0; });
			const b3 = await page2.locator('#timeline').boundingBox();
			const inputBegan = performance.now();
			await page2.mouse.move(b3.x + b3.width * 0.6, b3.y + 80);
			for (let i = 0; i < 30; i++) {
				await page2.mouse.wheel(0, i < 20 ? -200 : 150);
				await page2.waitForTimeout(16);
			}
			await page2.mouse.down();
			await page2.mouse.move(b3.x + b3.width * 0.3, b3.y + 80, { steps: 30 });
			await page2.mouse.up();
			for (const k of ['w', 'd', 's', 'a']) {
				await page2.keyboard.down(k);
				await page2.waitForTimeout(300);
				await page2.keyboard.up(k);
			}
			const inputMs = performance.now() - inputBegan;
			await page2.waitForTimeout(500);
			const fr = await page2.evaluate(() => window.__viewer.frameMs.slice());
			fr.sort((a, b) => a - b);
			const pct = (q) => fr[Math.min(fr.length - 1, Math.floor(q * fr.length))];
			const mean = fr.reduce((a, b) => a + b, 0) / Math.max(1, fr.length);
			console.log(`  frames while zooming and panning: ${fr.length} in ${(inputMs / 1000).toFixed(1)} s, draw time mean ${
				mean.toFixed(1)} ms, median ${pct(0.5).toFixed(1)} ms, p95 ${pct(0.95).toFixed(1)} ms, max ${fr[fr.length - 1].toFixed(1)} ms`);
			check('large trace stays interactive: draw time p95 under 16 ms', fr.length > 20 && pct(0.95) < 16,
				'p95 ' + pct(0.95).toFixed(1) + ' ms');
			await page2.screenshot({ path: join(shots, 'viewer-large.png') });
		} else {
			console.log('large trace: skipped, no gen_trace at ' + genTrace);
		}
	} finally {
		for (const v of views) v.proc.kill('SIGTERM');
		await context.close();
	}
}

try {
	await main();
} catch (e) {
	errors++;
	console.log('ERROR ' + (e && e.stack ? e.stack : e));
}
rmSync(work, { recursive: true, force: true });
const total = checks + errors;
const pct = total ? Math.floor((100 * (checks - failures)) / total) : 0;
console.log(`${pct}%: Checks: ${total}, Failures: ${failures}, Errors: ${errors}`);
process.exit(failures || errors ? 1 : 0);
