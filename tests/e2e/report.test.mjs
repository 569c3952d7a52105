// report.test.mjs - end-to-end test of `cuscope report --format html` in headless Chromium.
//
// Writes the HTML report of committed traces, and of a copy of one whose scan kernel is renamed to
// hostile markup (a script element, an image with an onerror handler, U+2028), opens each page in
// Debian's /usr/bin/chromium (driven by playwright-core) at a made-up http address whose every other
// request is recorded and refused, and checks that the page renders without a script error, asks
// for nothing else, draws each chart from data (bars per step, stacked segments, a memory line with
// points, a bar per top kernel, as many as the embedded JSON holds), lists the findings, and shows
// the hostile name as text: no dialog, no script run, no element made from it; on a trace whose
// first step is 40 times the others, that the charts' axes fit the steady steps (a steady bar at
// least a tenth of the chart's height, the warm-up bars cut and marked) and that the legend is in
// words. Saves a screenshot
// to $CUSCOPE_E2E_SHOTS (docs/images when unset) as report-html.png.
//
// Prints a Check-style summary line, "N%: Checks: N, Failures: F, Errors: E", which scripts/test
// sums, and exits non-zero on a failure.
//
//   node tests/e2e/report.test.mjs            (CUSCOPE_BIN from the environment)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync, readFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = process.env.CUSCOPE_BIN || join(root, 'build', 'cuscope');
const shots = process.env.CUSCOPE_E2E_SHOTS || join(root, 'docs', 'images');
const work = mkdtempSync(join(tmpdir(), 'cuscope-e2e-report-'));
const HOSTILE = 'cumsum_<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2">\u2028</script>';
const ORIGIN = 'http://cuscope-report.test';

let checks = 0;
let failures = 0;
let errors = 0;

function check(name, ok, detail) {
	checks++;
	if (!ok) failures++;
	console.log((ok ? 'ok   ' : 'FAIL ') + name + (detail !== undefined ? ': ' + detail : ''));
}

/* The HTML report of trace, written by cuscope into the work directory; returns its path. */
function report(trace, name) {
	const out = join(work, name + '.html');
	execFileSync(bin, ['report', '--format', 'html', '-o', out, trace], { stdio: ['ignore', 'ignore', 'inherit'] });
	return out;
}

/*
 * A copy of the scan trace whose costliest scan kernel is called HOSTILE (python3's sqlite3: the
 * kernel name lives in StringIds, the kernels point at it by nameId).
 */
function hostileTrace() {
	const out = join(work, 'hostile.db');
	copyFileSync(join(root, 'samples/rules/traces/cuda-core-scan-bad.db'), out);
	execFileSync('python3', ['-c', `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
(nid,) = c.execute("select nameId from CUPTI_ACTIVITY_KIND_KERNEL k join StringIds s on s.id = k.nameId "
                   "where s.value like '%scan%' group by nameId order by sum(k.end - k.start) desc limit 1").fetchone()
c.execute("update StringIds set value = ? where id = ?", (sys.argv[2], nid))
c.commit()
`, out, HOSTILE]);
	return out;
}

/* Open the page of file at ORIGIN: every other request is recorded and aborted. */
async function open(context, file) {
	const body = readFileSync(file);
	const requests = [];
	const dialogs = [];
	const pageErrors = [];
	const page = await context.newPage();
	page.on('dialog', (d) => {
		dialogs.push(d.message());
		d.dismiss().catch(() => {});
	});
	page.on('pageerror', (e) => pageErrors.push(String(e)));
	page.on('request', (r) => requests.push(r.url()));
	await page.route('**/*', (route) => {
		if (route.request().url() === ORIGIN + '/report.html')
			route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body });
		else route.abort();
	});
	await page.goto(ORIGIN + '/report.html', { waitUntil: 'load' });
	await page.waitForTimeout(200);
	return { page, requests, dialogs, pageErrors };
}

/* What the page drew, and what its embedded data says it should have drawn. */
async function drawn(page) {
	return page.evaluate(() => {
		const data = JSON.parse(document.getElementById('cuscope-data').textContent);
		const primary = data.processes.find((p) => p.primary) || data.processes[0];
		const q = (s) => document.querySelectorAll(s).length;
		const mem = [...document.querySelectorAll('#chart-memory path.series')];
		return {
			steps: primary.steps.list.length,
			stepBars: q('#chart-step-time svg rect.bar'),
			busySegs: q('#chart-busy svg rect.seg'),
			busyColors: new Set([...document.querySelectorAll('#chart-busy svg rect.seg')].map((r) => r.getAttribute('fill'))).size,
			memTracks: (data.charts.memory || []).filter((t) => t.points.length).length,
			memPaths: mem.length,
			memPoints: mem.reduce((a, p) => a + Number(p.getAttribute('data-points')), 0),
			memSegments: mem.reduce((a, p) => a + (p.getAttribute('d').match(/[HV]/g) || []).length, 0),
			kernels: data.charts.kernels.top.length,
			kernelBars: q('#chart-kernels svg rect.bar'),
			kernelRows: q('table.kernels tbody tr'),
			findings: data.findings.length,
			articles: q('article.finding'),
			scripts: q('script'),
			imgs: q('img'),
			pwned: window.__pwned,
			width: document.documentElement.scrollWidth,
		};
	});
}

async function main() {
	mkdirSync(shots, { recursive: true });
	const context = await chromium.launchPersistentContext(join(work, 'profile'), {
		executablePath: '/usr/bin/chromium',
		headless: true,
		args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync',
			'--disable-dev-shm-usage'],
		viewport: { width: 1280, height: 900 },
	});
	try {
		/* 1. a report with a finding, steps and device memory */
		for (const [name, trace] of [
			['memory', 'samples/rules/traces/memory-ceiling-thrash-bad_real.db'],
			['launch', 'samples/rules/traces/launch-starvation-bad.db'],
			['clean', 'samples/rules/traces/clean.db'],
		]) {
			const { page, requests, dialogs, pageErrors } = await open(context, report(join(root, trace), name));
			const d = await drawn(page);
			check(name + ': no script error', pageErrors.length === 0, pageErrors.join('; '));
			check(name + ': no request but the page', requests.length === 1, JSON.stringify(requests));
			check(name + ': no dialog', dialogs.length === 0, dialogs.join('; '));
			check(name + ': a bar per step', d.steps > 0 && d.stepBars === d.steps, d.stepBars + ' bars, ' + d.steps + ' steps');
			check(name + ': busy and idle stacked per step', d.busySegs >= d.steps && d.busyColors >= 2, d.busySegs + ' segments, ' + d.busyColors + ' colours');
			check(name + ': a memory line per process and GPU', d.memTracks > 0 && d.memPaths === d.memTracks && d.memPoints > 0 && d.memSegments >= 2 * d.memPoints,
				d.memPaths + ' lines, ' + d.memPoints + ' points');
			check(name + ': a bar and a row per top kernel', d.kernels > 0 && d.kernelBars === d.kernels && d.kernelRows === d.kernels, d.kernelBars + ' bars of ' + d.kernels);
			check(name + ': every finding', d.articles === d.findings && (name === 'clean' || d.findings > 0), d.articles + ' of ' + d.findings);
			check(name + ': fits the window', d.width <= 1280, d.width + ' px');
			if (name === 'launch') {
				const causes = await page.evaluate(() => [...document.querySelectorAll('#chart-busy .legend text')].map((t) => t.textContent));
				check('launch: idle by cause in the legend', causes.includes('launch overhead') && causes.includes('GPU busy'), causes.join(', '));
				await page.screenshot({ path: join(shots, 'report-html.png'), fullPage: true });
			}
			await page.close();
		}

		/* 2. a first step 40 times the others (490 ms, then 12 ms): the axes fit the steady
		 * steps, the warm-up bars are cut and marked with their time, the legend is in words */
		{
			const { page, pageErrors } = await open(context, report(join(root, 'samples/rules/traces/d2h-sync-bad.db'), 'warmup'));
			const c = await page.evaluate(() => {
				const data = JSON.parse(document.getElementById('cuscope-data').textContent);
				const list = data.steps.list;
				const chart = (id) => {
					const axis = document.querySelector(id + ' svg line.axis');
					const grid = [...document.querySelectorAll(id + ' svg line.grid')];
					const h = Number(axis.getAttribute('y1')) - Number(grid[grid.length - 1].getAttribute('y1'));
					const bars = [...document.querySelectorAll(id + ' svg rect.bar')];
					return { h, bars, cut: document.querySelectorAll(id + ' svg path.cut').length, labels: [...document.querySelectorAll(id + ' svg text.cutlabel')].map((t) => t.textContent) };
				};
				const st = chart('#chart-step-time');
				const steady = list.findIndex((x) => !x.warmup);
				const bar = st.bars[steady];
				/* the busy chart's segments of that step, stacked */
				const busy = chart('#chart-busy');
				const x = bar.getAttribute('x');
				const segs = busy.bars.filter((r) => r.getAttribute('x') === x);
				return {
					first: list[0].duration_ns, median: data.steps.median_ns,
					ratio: Number(bar.getAttribute('height')) / st.h,
					busyRatio: segs.reduce((a, r) => a + Number(r.getAttribute('height')), 0) / busy.h,
					cut: st.cut, busyCut: busy.cut, labels: st.labels,
					tallest: Math.max(...st.bars.map((r) => Number(r.getAttribute('height')))), chartH: st.h,
					legend: [...document.querySelectorAll('#chart-busy .legend text')].map((t) => t.textContent),
				};
			});
			check('warmup: no script error', pageErrors.length === 0, pageErrors.join('; '));
			check('warmup: the first step is over 20 times the median', c.first > 20 * c.median, c.first + ' ns, median ' + c.median + ' ns');
			check('warmup: a steady step is over a tenth of the step chart', c.ratio >= 0.1, c.ratio.toFixed(3));
			check('warmup: a steady step is over a tenth of the busy chart', c.busyRatio >= 0.1, c.busyRatio.toFixed(3));
			check('warmup: no bar past the chart', c.tallest <= c.chartH + 0.01, c.tallest + ' of ' + c.chartH);
			check('warmup: the cut bars marked with their time', c.cut >= 1 && c.busyCut >= 1 && c.labels.some((l) => /^4\d\d ms$/.test(l)), c.cut + ' cut, labels ' + c.labels.join(', '));
			await page.locator('#step-time').screenshot({ path: join(shots, 'report-html-warmup.png') });
			check('warmup: the legend in words', c.legend.includes('after D2H syncs') && c.legend.every((l) => !l.includes('_')), c.legend.join(', '));
			await page.close();
		}

		/* 3. the hostile kernel name stays text */
		const { page, requests, dialogs, pageErrors } = await open(context, report(hostileTrace(), 'hostile'));
		const d = await drawn(page);
		const text = await page.evaluate(() => ({
			evidence: [...document.querySelectorAll('article.finding details.evidence td')].map((t) => t.textContent).join('\n'),
			table: [...document.querySelectorAll('table.kernels td.name code')].map((t) => t.textContent + '|' + t.getAttribute('title')).join('\n'),
			chart: [...document.querySelectorAll('#chart-kernels text.kname')].map((t) => t.textContent).join('\n'),
			data: JSON.parse(document.getElementById('cuscope-data').textContent).charts.kernels.top.map((k) => k.name),
		}));
		check('hostile: no script error', pageErrors.length === 0, pageErrors.join('; '));
		check('hostile: no request but the page', requests.length === 1, JSON.stringify(requests));
		check('hostile: no dialog, nothing run', dialogs.length === 0 && d.pwned === undefined, dialogs.join('; ') + ' ' + d.pwned);
		check('hostile: no element made of it', d.scripts === 2 && d.imgs === 0, d.scripts + ' scripts, ' + d.imgs + ' images');
		check('hostile: the name is in the finding\'s evidence as text', text.evidence.includes('<script>window.__pwned=1;alert(1)</script>'), text.evidence.slice(0, 200));
		check('hostile: the name is in the kernel table as text', text.table.includes('<img src=x onerror="window.__pwned=2">'), text.table.slice(0, 300));
		check('hostile: the name is in the chart as text', text.chart.includes('<script>window.__pwned=1'), text.chart.slice(0, 200));
		check('hostile: the embedded data keeps the name whole', text.data.includes(HOSTILE), JSON.stringify(text.data[0]));
		/* cuda-core-scan's, and unfused-elementwise's (the model's eager element-wise glue) */
		check('hostile: the scan finding is there', d.findings >= 1 && d.articles === d.findings, d.articles + ' of ' + d.findings);
		check('hostile: charts still drawn', d.stepBars === d.steps && d.kernelBars === d.kernels && d.kernels > 0);
		await page.close();
	} catch (e) {
		errors++;
		console.log('ERROR ' + (e && e.stack ? e.stack : e));
	} finally {
		await context.close();
		rmSync(work, { recursive: true, force: true });
	}
	const total = checks + errors;
	const pct = total ? Math.round((100 * (total - failures - errors)) / total) : 0;
	console.log(`${pct}%: Checks: ${total}, Failures: ${failures}, Errors: ${errors}`);
	process.exit(failures || errors ? 1 : 0);
}

main();
