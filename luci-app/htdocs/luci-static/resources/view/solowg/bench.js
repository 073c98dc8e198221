'use strict';
'require view';
'require ui';
'require dom';
'require fs';

/*
 * Status → solowg → Benchmark: `solowg bench` races solowg against the
 * kernel's WireGuard module on the router itself (two network namespaces, a
 * veth pair, a TCP stream through each tunnel, both directions). The page
 * starts it detached through rpcd's file exec and follows the state file the
 * command rewrites as it goes; the last result stays in that file, so opening
 * the page shows it, and a run still going on is followed again.
 *
 * rpcd runs only the command lines its ACL lists word for word (the group
 * luci-app-solowg-bench, write only), so every choice of the form is one
 * literal command line below and one grant there.
 */

var STATE_FILE = '/var/run/solowg-bench.json';
/* the page's own timer, not LuCI's poll loop: that one shows itself as
 * paused once the run is over and nothing is polled any more */
var POLL_MS = 1000;
/* a start that changes nothing in the state file for this long is reported */
var START_GRACE_MS = 15000;
/* a run whose state file stays the same this long has stopped without a word
 * (killed, e.g. by the kernel when memory ran out): it writes at least every
 * second while it measures and between steps within seconds */
var STALL_MS = 30000;
var SVG_NS = 'http://www.w3.org/2000/svg';

var RUNS = {
	'5/': function() { return fs.exec('/usr/sbin/solowg', [ 'bench', '--detach', '--state-file', '/var/run/solowg-bench.json', '--json', '--seconds', '5' ]); },
	'10/': function() { return fs.exec('/usr/sbin/solowg', [ 'bench', '--detach', '--state-file', '/var/run/solowg-bench.json', '--json', '--seconds', '10' ]); },
	'30/': function() { return fs.exec('/usr/sbin/solowg', [ 'bench', '--detach', '--state-file', '/var/run/solowg-bench.json', '--json', '--seconds', '30' ]); },
	'5/solowg,solowg': function() { return fs.exec('/usr/sbin/solowg', [ 'bench', '--detach', '--state-file', '/var/run/solowg-bench.json', '--json', '--seconds', '5', '--impls', 'solowg,solowg' ]); },
	'10/solowg,solowg': function() { return fs.exec('/usr/sbin/solowg', [ 'bench', '--detach', '--state-file', '/var/run/solowg-bench.json', '--json', '--seconds', '10', '--impls', 'solowg,solowg' ]); },
	'30/solowg,solowg': function() { return fs.exec('/usr/sbin/solowg', [ 'bench', '--detach', '--state-file', '/var/run/solowg-bench.json', '--json', '--seconds', '30', '--impls', 'solowg,solowg' ]); }
};

var IMPL_COLORS = { kernel: '#8a8a8a', solowg: '#2364aa' };

function svgEl(name, attrs, text) {
	var el = document.createElementNS(SVG_NS, name);

	for (var k in attrs)
		el.setAttribute(k, attrs[k]);

	if (text != null)
		el.textContent = text;

	return el;
}

function implName(impl) {
	return { kernel: _('kernel module'), solowg: _('solowg') }[impl] || String(impl);
}

function dirName(dir) {
	return { up: _('up'), down: _('down') }[dir] || String(dir);
}

function mbpsText(v) {
	return (typeof v == 'number' && isFinite(v)) ? _('%.1f Mbit/s').format(v) : '–';
}

function cpuText(v) {
	return (typeof v == 'number' && isFinite(v)) ? '%d %%'.format(Math.round(v * 100)) : '–';
}

function ratioText(v) {
	return (typeof v == 'number' && isFinite(v)) ? '%.2f×'.format(v) : '–';
}

/* The runs with a label each: the implementation, numbered when it runs twice
 * in a direction (solowg against itself). */
function labelled(runs) {
	var seen = {}, total = {};

	runs.forEach(function(r) { total[r.dir + '/' + r.impl] = (total[r.dir + '/' + r.impl] || 0) + 1; });

	return runs.map(function(r) {
		var k = r.dir + '/' + r.impl;

		seen[k] = (seen[k] || 0) + 1;

		return {
			run: r,
			label: total[k] > 1 ? '%s #%d'.format(implName(r.impl), seen[k]) : implName(r.impl)
		};
	});
}

/* Horizontal bars, one per run, grouped by direction, scaled to the fastest. */
function renderChart(runs) {
	var rows = labelled(runs),
	    dirs = [],
	    max = 0;

	rows.forEach(function(x) {
		if (dirs.indexOf(x.run.dir) < 0)
			dirs.push(x.run.dir);

		if (x.run.mbps > max)
			max = x.run.mbps;
	});

	var W = 600, LABEL = 120, VALUE = 200, BAR = 20, GAP = 6, HEAD = 22,
	    span = W - LABEL - VALUE,
	    y = 4,
	    parts = [];

	dirs.forEach(function(dir) {
		parts.push(svgEl('text', { x: 0, y: y + 14, 'font-weight': 'bold', 'font-size': 13 }, _('Direction: %s').format(dirName(dir))));
		y += HEAD;

		rows.filter(function(x) { return x.run.dir == dir; }).forEach(function(x) {
			var w = max > 0 ? Math.max(1, (x.run.mbps || 0) * span / max) : 1;

			parts.push(svgEl('text', { x: LABEL - 6, y: y + 14, 'text-anchor': 'end', 'font-size': 12 }, x.label));
			parts.push(svgEl('rect', {
				'class': 'solowg-bench-bar',
				'data-impl': x.run.impl, 'data-dir': x.run.dir, 'data-mbps': x.run.mbps,
				x: LABEL, y: y, width: w.toFixed(1), height: BAR,
				fill: IMPL_COLORS[x.run.impl] || '#2a9d3f'
			}));
			parts.push(svgEl('text', { x: LABEL + w + 6, y: y + 14, 'font-size': 12 },
				'%s, %s'.format(mbpsText(x.run.mbps), _('CPU %s').format(cpuText(x.run.cpu)))));
			y += BAR + GAP;
		});

		y += GAP;
	});

	var svg = svgEl('svg', {
		'class': 'solowg-bench-chart', 'role': 'img',
		'width': W, 'height': y, 'viewBox': '0 0 %d %d'.format(W, y),
		'style': 'max-width:100%;height:auto;font-family:inherit'
	});

	svg.appendChild(svgEl('title', {}, _('Throughput of each run in Mbit/s')));
	parts.forEach(function(p) { svg.appendChild(p); });

	return svg;
}

function renderTable(state) {
	var rows = labelled(state.runs || []),
	    ratio = state.ratio || {};

	return E('table', { 'class': 'table solowg-bench-runs' }, [
		E('tr', { 'class': 'tr table-titles' }, [
			E('th', { 'class': 'th' }, _('Direction')),
			E('th', { 'class': 'th' }, _('Implementation')),
			E('th', { 'class': 'th' }, _('Throughput')),
			E('th', { 'class': 'th' }, _('CPU busy'))
		])
	].concat(rows.map(function(x) {
		return E('tr', { 'class': 'tr solowg-bench-row', 'data-impl': x.run.impl, 'data-dir': x.run.dir }, [
			E('td', { 'class': 'td', 'data-title': _('Direction') }, [ dirName(x.run.dir) ]),
			E('td', { 'class': 'td', 'data-title': _('Implementation') }, [ x.label ]),
			E('td', { 'class': 'td solowg-bench-mbps', 'data-title': _('Throughput') }, [ mbpsText(x.run.mbps) ]),
			E('td', { 'class': 'td solowg-bench-cpu', 'data-title': _('CPU busy') }, [ cpuText(x.run.cpu) ])
		]);
	})).concat([
		E('tr', { 'class': 'tr solowg-bench-ratio' }, [
			E('td', { 'class': 'td', 'colspan': 4, 'title': _('Throughput of solowg divided by that of the kernel module, per direction') }, [
				_('solowg / kernel module: up %s, down %s').format(ratioText(ratio.up), ratioText(ratio.down))
			])
		])
	]));
}

function systemText(sys) {
	sys = sys || {};

	return [
		_('Board: %s').format(sys.board || '?'),
		_('CPU: %s').format(sys.cpu || '?'),
		_('Kernel: %s').format(sys.kernel || '?'),
		_('OpenWrt: %s').format(sys.release || '?'),
		_('solowg: %s').format(sys.solowg || '?'),
		_('WireGuard module: %s').format(sys.wireguard || _('not loaded'))
	].join(' · ');
}

/* navigator.clipboard needs a secure context (https or localhost) and the
 * browser's permission; a router is mostly opened over plain http, where the
 * selection's copy still works. */
function copyText(input) {
	var done = function() {
		var msg = E('p', {}, [ _('Copied to the clipboard.') ]);

		/* older LuCI releases have no time-limited notification */
		if (typeof ui.addTimeLimitedNotification == 'function')
			ui.addTimeLimitedNotification(null, msg, 3000, 'info');
		else
			ui.addNotification(null, msg, 'info');
	};

	var bySelection = function() {
		input.focus();
		input.select();

		if (document.execCommand && document.execCommand('copy'))
			done();
		else
			ui.addNotification(null, E('p', {}, [ _('Select the line and copy it by hand.') ]), 'warning');
	};

	if (window.isSecureContext && navigator.clipboard && navigator.clipboard.writeText)
		return navigator.clipboard.writeText(input.value).then(done, bySelection);

	bySelection();
}

return view.extend({
	box: null,
	controls: null,
	timer: null,
	polling: false,
	starting: false,   /* a run was just started: the file may still hold the last one */
	before: null,      /* the file's text before that start (null: no file) */
	startedAt: 0,
	lastText: null,    /* the state file as last read, and since when */
	changedAt: 0,

	/* The state file as text, or null when there is none (no run yet). */
	readState: function() {
		return fs.read(STATE_FILE).catch(function(err) {
			if (err.name == 'NotFoundError')
				return null;

			throw err;
		});
	},

	parse: function(text) {
		if (text == null)
			return null;

		try {
			var s = JSON.parse(text);

			return (s && typeof s == 'object') ? s : { state: 'failed', error: _('The state file holds no result.') };
		}
		catch (e) {
			return { state: 'failed', error: _('The state file could not be read: %s').format(e.message) };
		}
	},

	load: function() {
		return L.resolveDefault(this.readState(), null);
	},

	setBusy: function(busy) {
		this.controls.querySelectorAll('button, select').forEach(function(el) {
			el.disabled = busy;
		});
	},

	renderState: function(s) {
		if (!s)
			return E('p', { 'class': 'solowg-bench-none' }, E('em', {}, _('No benchmark has been run yet.')));

		return E('div', {}, [ this.renderNotes(s), this.renderBody(s) ]);
	},

	/* What the command says the reader should know, such as the kernel module
	 * missing (then solowg runs alone), in its own words. */
	renderNotes: function(s) {
		var notes = L.toArray(s.notes).filter(function(n) { return typeof n == 'string' && n.length; });

		if (!notes.length)
			return '';

		return E('div', { 'class': 'alert-message warning solowg-bench-notes' },
			notes.map(function(n) { return E('p', { 'class': 'solowg-bench-note' }, [ n ]); }));
	},

	renderBody: function(s) {
		if (s.state == 'running')
			return E('div', { 'class': 'solowg-bench-running' }, [
				E('p', { 'class': 'spinning solowg-bench-progress' }, [ s.progress || _('Running…') ]),
				E('p', { 'class': 'cbi-value-description' }, [
					_('Each implementation runs %d seconds per direction. The router is busy meanwhile; leaving this page does not stop the run.').format(s.seconds || 0) ])
			]);

		if (s.state == 'failed')
			return E('div', { 'class': 'alert-message error solowg-bench-error' }, [
				E('p', {}, [ _('The benchmark failed: %s').format(s.error || _('no reason given')) ]),
				/* the command's last step names the error itself when it failed there */
				(s.progress && (!s.error || s.progress.indexOf(s.error) < 0))
					? E('p', { 'class': 'solowg-bench-progress' }, [ _('Last step: %s').format(s.progress) ]) : ''
			]);

		if (s.state != 'done')
			return E('p', { 'class': 'alert-message warning' }, [ _('Unknown benchmark state: %s').format(String(s.state)) ]);

		var line = E('input', {
			'class': 'cbi-input-text solowg-bench-line', 'readonly': 'readonly',
			'style': 'width:100%;font-family:monospace', 'value': s.line || ''
		});

		return E('div', { 'class': 'solowg-bench-result' }, [
			E('p', {}, [
				_('%d seconds per run, measured with %s.').format(s.seconds || 0,
					s.tool == 'iperf3' ? 'iperf3' : _('the built-in stream')) ]),
			E('div', { 'style': 'display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start' }, [
				E('div', { 'style': 'flex:1 1 320px' }, renderTable(s)),
				E('div', { 'style': 'flex:1 1 420px' }, renderChart(s.runs || []))
			]),
			E('p', { 'class': 'solowg-bench-system' }, [ systemText(s.system) ]),
			E('div', { 'class': 'cbi-value' }, [
				E('label', { 'class': 'cbi-value-title' }, _('To share')),
				E('div', { 'class': 'cbi-value-field' }, [
					line,
					E('button', {
						'class': 'btn cbi-button solowg-bench-copy', 'style': 'margin-top:.3em',
						'click': function() { copyText(line); }
					}, _('Copy'))
				])
			])
		]);
	},

	show: function(s) {
		this.box.setAttribute('data-state', s ? String(s.state) : 'none');
		dom.content(this.box, this.renderState(s));
	},

	/* One poll: shows the state; stops once the run is over. Right after a
	 * start the file may still hold the previous result until the command
	 * writes its first state: that is waited for, within START_GRACE_MS. */
	step: function() {
		return this.readState().then(L.bind(function(text) {
			var s = this.parse(text);

			if (this.starting) {
				if (text === this.before && Date.now() - this.startedAt < START_GRACE_MS)
					return;

				this.starting = false;
			}

			if (text !== this.lastText) {
				this.lastText = text;
				this.changedAt = Date.now();
			}

			if (s && s.state == 'running' && Date.now() - this.changedAt > STALL_MS) {
				this.stopPolling();
				this.show({ state: 'failed', error: _('it stopped without a result, its state file unchanged for %d seconds (killed, for example when memory ran out?).').format(STALL_MS / 1000) });
				return;
			}

			this.show(s);

			if (!s || s.state != 'running')
				this.stopPolling();
		}, this)).catch(L.bind(function(err) {
			this.stopPolling();
			this.show({ state: 'failed', error: _('The state file could not be read: %s').format(err.message || err) });
		}, this));
	},

	startPolling: function() {
		this.setBusy(true);

		if (this.polling)
			return;

		this.polling = true;

		var next = L.bind(function() {
			this.timer = window.setTimeout(L.bind(function() {
				this.step().then(L.bind(function() {
					if (this.polling)
						next();
				}, this));
			}, this), POLL_MS);
		}, this);

		next();
	},

	stopPolling: function() {
		this.polling = false;

		if (this.timer) {
			window.clearTimeout(this.timer);
			this.timer = null;
		}

		this.setBusy(false);
	},

	handleRun: function(ev) {
		var seconds = this.controls.querySelector('.solowg-bench-seconds').value,
		    impls = this.controls.querySelector('.solowg-bench-impls').value,
		    run = RUNS[seconds + '/' + impls];

		if (!run)
			return;

		this.setBusy(true);

		return L.resolveDefault(this.readState(), null).then(L.bind(function(before) {
			this.starting = true;
			this.before = before;
			this.startedAt = Date.now();
			this.box.setAttribute('data-state', 'starting');
			dom.content(this.box, E('p', { 'class': 'spinning solowg-bench-progress' }, [ _('Starting the benchmark…') ]));

			return run();
		}, this)).then(L.bind(function(res) {
			/* the command refuses before detaching (no kernel module, a run
			 * already going on, ...): what it said is the reason */
			if (res.code !== 0) {
				this.starting = false;
				this.setBusy(false);
				this.show({ state: 'failed', error: (String(res.stderr || '').trim() || String(res.stdout || '').trim() ||
					_('exit code %d').format(res.code)) });
				return;
			}

			this.startPolling();
		}, this)).catch(L.bind(function(err) {
			this.starting = false;
			this.setBusy(false);
			this.show({ state: 'failed', error: _('It could not be started: %s').format(err.message || err) });
		}, this));
	},

	render: function(text) {
		var state = this.parse(text),
		    writable = typeof L.hasViewPermission == 'function' && L.hasViewPermission() === true;

		this.box = E('div', { 'class': 'cbi-section solowg-bench-state' });

		var seconds = E('select', { 'class': 'cbi-input-select solowg-bench-seconds' }, [ 5, 10, 30 ].map(function(n) {
			return E('option', { 'value': String(n) }, [ _('%d seconds').format(n) ]);
		}));
		var impls = E('select', { 'class': 'cbi-input-select solowg-bench-impls' }, [
			E('option', { 'value': '' }, [ _('kernel module vs. solowg') ]),
			E('option', { 'value': 'solowg,solowg' }, [ _('solowg vs. solowg') ])
		]);

		this.controls = E('div', { 'class': 'cbi-section solowg-bench-controls' }, writable ? [
			E('div', { 'class': 'cbi-value' }, [
				E('label', { 'class': 'cbi-value-title' }, _('Compare')),
				E('div', { 'class': 'cbi-value-field' }, [
					impls,
					E('div', { 'class': 'cbi-value-description' }, [
						_('solowg vs. solowg needs no kernel module and shows how much the figures vary from run to run.') ])
				])
			]),
			E('div', { 'class': 'cbi-value' }, [
				E('label', { 'class': 'cbi-value-title' }, _('Time per run')),
				E('div', { 'class': 'cbi-value-field' }, [ seconds ])
			]),
			E('div', { 'class': 'cbi-value' }, [
				E('label', { 'class': 'cbi-value-title' }, ''),
				E('div', { 'class': 'cbi-value-field' }, [
					E('button', {
						'class': 'btn cbi-button cbi-button-action solowg-bench-run',
						/* not ui.createHandlerFn: it enables the button again once the
						 * start returns, and the run goes on after that */
						'click': L.bind(this.handleRun, this)
					}, _('Run benchmark'))
				])
			])
		] : [ E('p', {}, [ _('Running the benchmark needs write access.') ]) ]);

		this.show(state);

		if (state && state.state == 'running')
			this.startPolling();

		return E('div', { 'class': 'cbi-map solowg-bench' }, [
			E('h2', {}, _('solowg benchmark')),
			E('div', { 'class': 'cbi-map-descr' }, [
				_('Measures solowg against the kernel\'s WireGuard module on this router: two network namespaces joined by a virtual Ethernet pair, a TCP stream through each tunnel, in both directions. The router\'s CPU is busy while it runs, and traffic through the router slows down. The race with the module needs kmod-wireguard and wireguard-tools; without them solowg runs alone.')
			]),
			this.controls,
			this.box
		]);
	},

	handleSave: null,
	handleSaveApply: null,
	handleReset: null
});
