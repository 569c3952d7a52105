// report.js - the charts of the HTML report (src/report/html.c writes it inline): step time per
// step, GPU busy and idle by cause per step, device memory over time and the top kernels, drawn as
// SVG from the report's JSON in the page's #cuscope-data element. Text from the trace only ever
// goes into textContent, never into markup.
'use strict';
(function () {
	const NS = 'http://www.w3.org/2000/svg';
	const W = 1100;
	const data = JSON.parse(document.getElementById('cuscope-data').textContent);
	const charts = data.charts || {};
	const processes = data.processes || [];
	// the causes in the words of the text report's header (charts.idle_cause_words, in the order
	// of charts.idle_causes), never the JSON keys
	const causeWords = charts.idle_cause_words || [];
	const CAUSE_COLORS = {
		launch_overhead: '#ef6c00',
		host_work: '#8e24aa',
		host_wait: '#c62828',
		input_pipeline: '#00838f',
		pageable_copy: '#6d4c41',
		after_d2h_sync: '#ad1457',
		allocator_call: '#f9a825',
	};
	const BUSY_COLOR = '#2e7d32';
	const OTHER_COLOR = '#b0bec5';
	const SERIES = ['#2f6fd0', '#c62828', '#2e7d32', '#ef6c00', '#8e24aa', '#00838f', '#6d4c41', '#ad1457'];

	function el(tag, attrs, parent) {
		const e = document.createElementNS(NS, tag);
		for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
		if (parent) parent.appendChild(e);
		return e;
	}
	function label(parent, x, y, str, attrs) {
		const t = el('text', Object.assign({ x: x, y: y }, attrs || {}), parent);
		t.textContent = str;
		return t;
	}
	function tip(parent, str) {
		el('title', {}, parent).textContent = str;
	}
	// A duration in ns with 3 significant digits, as the text report writes it.
	function fmtNs(ns) {
		const units = [[1e9, 's'], [1e6, 'ms'], [1e3, 'us']];
		const a = Math.abs(ns);
		for (const [f, u] of units) {
			if (a >= f) {
				const v = ns / f;
				return (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)) + ' ' + u;
			}
		}
		return Math.round(ns) + ' ns';
	}
	function fmtBytes(b) {
		const units = ['KiB', 'MiB', 'GiB', 'TiB'];
		if (Math.abs(b) < 1024) return b + ' B';
		let v = b;
		let u = -1;
		while (Math.abs(v) >= 1024 && u < units.length - 1) {
			v /= 1024;
			u++;
		}
		return (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1)) + ' ' + units[u];
	}
	function pct(x) {
		return (100 * x).toFixed(1) + '%';
	}
	// A round number at or above v for the top of an axis.
	function niceMax(v) {
		if (!(v > 0)) return 1;
		const p = Math.pow(10, Math.floor(Math.log10(v)));
		for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
		return 10 * p;
	}
	function svgIn(fig, h) {
		fig.textContent = '';
		return el('svg', { viewBox: '0 0 ' + W + ' ' + h, role: 'img' }, fig);
	}
	function none(fig, str) {
		fig.textContent = '';
		const p = document.createElement('p');
		p.className = 'none';
		p.textContent = str;
		fig.appendChild(p);
	}
	// Y axis with gridlines from 0 to max over [top, top + h] at x0..x1.
	function yAxis(svg, x0, x1, top, h, max, fmt) {
		for (let i = 0; i <= 4; i++) {
			const y = top + h - (h * i) / 4;
			el('line', { class: i ? 'grid' : 'axis', x1: x0, x2: x1, y1: y, y2: y }, svg);
			label(svg, x0 - 6, y + 4, fmt((max * i) / 4), { 'text-anchor': 'end' });
		}
	}
	function legend(svg, x, y, items) {
		const g = el('g', { class: 'legend' }, svg);
		for (const [name, color] of items) {
			el('rect', { x: x, y: y - 10, width: 12, height: 12, fill: color }, g);
			label(g, x + 17, y, name);
			x += 30 + 7 * name.length;
		}
	}
	function procLabel(p) {
		if (p.rank !== null && p.rank !== undefined) return 'rank ' + p.rank + ' (pid ' + p.pid + ')';
		if (p.local_rank !== null && p.local_rank !== undefined) return 'local rank ' + p.local_rank + ' (pid ' + p.pid + ')';
		return 'pid ' + p.pid;
	}
	function stepsOf(pid) {
		const p = processes.find((x) => x.pid === pid);
		return p ? p.steps : data.steps;
	}
	function idleOf(pid) {
		const p = (charts.processes || []).find((x) => x.pid === pid);
		return p ? p.idle_by_cause : [];
	}

	// The top of a step chart's axis: the largest value of the steady-state steps (of all steps
	// when none is steady), so that a first step forty times as long as the others does not
	// flatten them; a taller bar is cut at the top (cutMark).
	function steadyMax(list, values) {
		const steady = values.filter((v, i) => !list[i].warmup);
		return niceMax(Math.max(0, ...(steady.length ? steady : values)));
	}

	// Bars of a value per step: geometry shared by the two step charts.
	function stepFrame(svg, n, max, fmt) {
		const g = { x0: 80, x1: W - 20, top: 30, h: 220 };
		g.bw = (g.x1 - g.x0) / Math.max(n, 1);
		yAxis(svg, g.x0, g.x1, g.top, g.h, max, fmt);
		const every = Math.max(1, Math.ceil(n / 20));
		for (let i = 0; i < n; i += every) label(svg, g.x0 + (i + 0.5) * g.bw, g.top + g.h + 16, String(i), { 'text-anchor': 'middle' });
		label(svg, (g.x0 + g.x1) / 2, g.top + g.h + 34, 'step', { 'text-anchor': 'middle' });
		g.y = (v) => g.top + g.h - (g.h * Math.min(v, max)) / max;
		g.labelEnd = -Infinity;
		return g;
	}

	// The mark of bar i cut at the top of the axis: a break across it, and its value above
	// the chart (left out where it would cover the previous one; the tooltip has it too).
	function cutMark(svg, g, i, value, what) {
		const x = g.x0 + i * g.bw + g.bw * 0.1, w = Math.max(g.bw * 0.8, 0.5);
		const m = el('path', {
			class: 'cut',
			d: 'M' + x.toFixed(1) + ',' + (g.top + 9) + 'l' + w.toFixed(1) + ',-4M' + x.toFixed(1) + ',' + (g.top + 13) + 'l' + w.toFixed(1) + ',-4',
		}, svg);
		tip(m, what + ': ' + fmtNs(value) + ', cut at ' + fmtNs(g.max));
		const str = fmtNs(value);
		const cx = x + w / 2, half = 3.3 * str.length;
		if (cx - half > g.labelEnd + 4) {
			label(svg, cx, g.top - 4, str, { class: 'cutlabel', 'text-anchor': 'middle' });
			g.labelEnd = cx + half;
		}
	}

	function drawStepTime(pid) {
		const fig = document.getElementById('chart-step-time');
		const s = stepsOf(pid);
		const list = (s && s.list) || [];
		if (!list.length || s.method === 'none') {
			none(fig, 'No steps were found' + (s && s.detail ? ' (' + s.detail + ').' : '.'));
			return;
		}
		const svg = svgIn(fig, 294);
		const max = steadyMax(list, list.map((x) => x.duration_ns));
		const g = stepFrame(svg, list.length, max, fmtNs);
		g.max = max;
		list.forEach((st, i) => {
			const y = g.y(Math.max(st.duration_ns, 0));
			const r = el('rect', {
				class: 'bar' + (st.warmup ? ' warmup' : ''),
				x: g.x0 + i * g.bw + g.bw * 0.1, y: y,
				width: Math.max(g.bw * 0.8, 0.5), height: g.top + g.h - y, fill: '#2f6fd0',
				'data-ns': st.duration_ns,
			}, svg);
			tip(r, 'step ' + st.index + ': ' + fmtNs(st.duration_ns) + (st.warmup ? ' (warm-up)' : '') + ', GPU busy ' + pct(st.gpu_busy_share) + ', ' + st.kernels + ' kernels');
			if (st.duration_ns > max) cutMark(svg, g, i, st.duration_ns, 'step ' + st.index + (st.warmup ? ' (warm-up)' : ''));
		});
		if (s.median_ns > 0) {
			const y = g.y(s.median_ns);
			el('line', { class: 'median', x1: g.x0, x2: g.x1, y1: y, y2: y }, svg);
			label(svg, g.x0 + 6, y - 5, 'median ' + fmtNs(s.median_ns), { class: 'halo' });
		}
	}

	function drawBusy(pid) {
		const fig = document.getElementById('chart-busy');
		const s = stepsOf(pid);
		const list = (s && s.list) || [];
		if (!list.length) {
			none(fig, 'No steps were found.');
			return;
		}
		const causes = charts.idle_causes || [];
		const idle = idleOf(pid);
		const used = new Set();
		const stacks = list.map((st, i) => {
			const row = idle[i] || [];
			const busy = Math.max(0, Math.min(st.gpu_busy_ns, st.duration_ns));
			const parts = [['GPU busy', busy, BUSY_COLOR]];
			// a step timed by the GPU (its period) may hold less idle than was charged in
			// its host span: the causes are scaled to fit, so that the bar is the step
			const total = causes.reduce((a, c, k) => a + (row[k] || 0), 0);
			const fit = total > st.duration_ns - busy ? Math.max(st.duration_ns - busy, 0) / total : 1;
			let charged = 0;
			causes.forEach((c, k) => {
				const v = (row[k] || 0) * fit;
				if (v > 0) {
					parts.push([causeWords[k] || c, v, CAUSE_COLORS[c] || '#999']);
					used.add(c);
					charged += v;
				}
			});
			parts.push(['other idle', Math.max(0, st.duration_ns - busy - charged), OTHER_COLOR]);
			return parts;
		});
		const totals = stacks.map((p) => p.reduce((a, x) => a + x[1], 0));
		const max = steadyMax(list, totals);
		const svg = svgIn(fig, 314);
		const g = stepFrame(svg, list.length, max, fmtNs);
		g.max = max;
		stacks.forEach((parts, i) => {
			let acc = 0;
			const st = list[i];
			for (const [name, v, color] of parts) {
				if (v <= 0 || acc >= max) {
					acc += Math.max(v, 0);
					continue;
				}
				const y0 = g.y(acc), y1 = g.y(acc + v);
				const r = el('rect', {
					class: 'bar seg' + (st.warmup ? ' warmup' : ''),
					x: g.x0 + i * g.bw + g.bw * 0.1, y: y1,
					width: Math.max(g.bw * 0.8, 0.5), height: Math.max(y0 - y1, 0), fill: color,
				}, svg);
				tip(r, 'step ' + st.index + (st.warmup ? ' (warm-up)' : '') + ': ' + name + ' ' + fmtNs(v) + ' of ' + fmtNs(st.duration_ns) + ' (' + pct(st.duration_ns > 0 ? v / st.duration_ns : 0) + ')');
				acc += v;
			}
			if (totals[i] > max) cutMark(svg, g, i, totals[i], 'step ' + st.index + (st.warmup ? ' (warm-up)' : ''));
		});
		const items = [['GPU busy', BUSY_COLOR]];
		causes.forEach((c, k) => {
			if (used.has(c)) items.push([causeWords[k] || c, CAUSE_COLORS[c] || '#999']);
		});
		items.push(['other idle', OTHER_COLOR]);
		legend(svg, 80, 306, items);
	}

	function drawMemory() {
		const fig = document.getElementById('chart-memory');
		const tracks = (charts.memory || []).filter((t) => t.points && t.points.length);
		if (!tracks.length) {
			none(fig, 'The trace has no device memory allocations.');
			return;
		}
		let t0 = Infinity, t1 = -Infinity, peak = 0;
		for (const t of tracks) {
			t0 = Math.min(t0, t.points[0][0]);
			t1 = Math.max(t1, t.points[t.points.length - 1][0]);
			peak = Math.max(peak, t.peak_bytes);
		}
		if (data.trace && data.trace.end_ns > t1) t1 = data.trace.end_ns;
		if (t1 <= t0) t1 = t0 + 1;
		const total = charts.device_memory_total || 0;
		const showTotal = total > 0 && total <= 1.3 * peak;
		const max = niceMax(showTotal ? Math.max(total, peak) : peak);
		const svg = svgIn(fig, 300);
		const x0 = 90, x1 = W - 20, top = 16, h = 220;
		yAxis(svg, x0, x1, top, h, max, fmtBytes);
		const x = (t) => x0 + ((x1 - x0) * (t - t0)) / (t1 - t0);
		const y = (v) => top + h - (h * v) / max;
		for (let i = 0; i <= 5; i++) {
			const t = t0 + ((t1 - t0) * i) / 5;
			label(svg, x(t), top + h + 16, fmtNs(t), { 'text-anchor': 'middle' });
		}
		label(svg, (x0 + x1) / 2, top + h + 34, 'time since the trace start', { 'text-anchor': 'middle' });
		if (showTotal) {
			el('line', { class: 'median', x1: x0, x2: x1, y1: y(total), y2: y(total) }, svg);
			label(svg, x0 + 6, y(total) - 5, 'device memory ' + fmtBytes(total), { class: 'halo' });
		}
		const items = [];
		tracks.forEach((t, k) => {
			const color = SERIES[k % SERIES.length];
			let d = 'M' + x(t.points[0][0]).toFixed(1) + ',' + y(0).toFixed(1);
			for (const [tt, v] of t.points) d += 'H' + x(tt).toFixed(1) + 'V' + y(v).toFixed(1);
			d += 'H' + x(t1).toFixed(1);
			const path = el('path', { class: 'series', d: d, fill: 'none', stroke: color, 'stroke-width': 1.5, 'data-points': t.points.length }, svg);
			const name = 'pid ' + t.pid + ', GPU ' + t.device + ': peak ' + fmtBytes(t.peak_bytes);
			tip(path, name);
			items.push([name, color]);
		});
		legend(svg, x0, 292, items.slice(0, 6));
	}

	function drawKernels() {
		const fig = document.getElementById('chart-kernels');
		const k = charts.kernels || {};
		const top = k.top || [];
		if (!top.length) {
			none(fig, 'The trace has no kernels.');
			return;
		}
		const rowH = 22, x0 = 470, x1 = W - 150;
		const svg = svgIn(fig, top.length * rowH + 10);
		const max = Math.max(...top.map((x) => x.total_ns), 1);
		top.forEach((kn, i) => {
			const y = 5 + i * rowH;
			const name = kn.name_short || kn.name || '';
			const shown = name.length > 64 ? name.slice(0, 61) + '...' : name;
			const t = label(svg, x0 - 8, y + 15, shown, { 'text-anchor': 'end', class: 'kname' });
			tip(t, kn.name_demangled || kn.name || '');
			const r = el('rect', { class: 'bar', x: x0, y: y + 3, width: Math.max(((x1 - x0) * kn.total_ns) / max, 0.5), height: rowH - 6, fill: '#2f6fd0' }, svg);
			tip(r, (kn.name_demangled || kn.name || '') + '\n' + kn.count + ' launches, ' + fmtNs(kn.total_ns) + ' in all, mean ' + fmtNs(kn.mean_ns));
			label(svg, x0 + ((x1 - x0) * kn.total_ns) / max + 6, y + 15, fmtNs(kn.total_ns) + ' (' + pct(kn.share) + ')');
		});
	}

	function processPicker(onChange) {
		if (processes.length < 2) return;
		const sec = document.getElementById('step-time');
		const div = document.createElement('div');
		div.className = 'controls';
		const lab = document.createElement('label');
		lab.textContent = 'Process ';
		const sel = document.createElement('select');
		sel.id = 'process';
		for (const p of processes) {
			const o = document.createElement('option');
			o.value = String(p.pid);
			o.textContent = procLabel(p);
			if (p.primary) o.selected = true;
			sel.appendChild(o);
		}
		sel.addEventListener('change', () => onChange(Number(sel.value)));
		lab.appendChild(sel);
		div.appendChild(lab);
		sec.insertBefore(div, sec.querySelector('figure'));
	}

	const primary = processes.find((p) => p.primary) || processes[0];
	const draw = (pid) => {
		drawStepTime(pid);
		drawBusy(pid);
	};
	processPicker(draw);
	draw(primary ? primary.pid : data.steps && data.steps.pid);
	drawMemory();
	drawKernels();
})();
