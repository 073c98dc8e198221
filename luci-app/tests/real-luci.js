#!/usr/bin/env node
// The pages of luci-app-solowg in real LuCI, driven in headless Chromium over the DevTools
// protocol on a pipe (--remote-debugging-pipe: no port, no npm package). Run by
// tests/openwrt-real/luci.sh inside the router's network namespace, against uhttpd, rpcd and
// the running daemon there. Prints one "PASS name" or "FAIL name: why" line per check.
//   usage: node real-luci.js ENV.json OUTDIR CHROMIUM
// ENV.json (mode 600, written by luci.sh): base URL, both accounts' passwords, the router's
// public keys and the secrets (private keys, PSKs) no read-only page may show.
'use strict';
const { spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { gridFromPath, decodeBoth } = require('./qr-decode.js');

const [envFile, out, chromium] = process.argv.slice(2);
const env = JSON.parse(fs.readFileSync(envFile, 'utf8'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let failed = 0;
const check = (name, ok, why) => {
	if (ok) console.log(`PASS ${name}`);
	else { failed++; console.log(`FAIL ${name}: ${why}`); }
};

// --- a minimal DevTools client: JSON messages separated by NUL on fds 3 (to the browser)
// and 4 (from it); flat sessions, one per page.
class Browser {
	constructor(bin) {
		this.profile = fs.mkdtempSync(path.join(os.tmpdir(), 'solowg-chromium-'));
		this.proc = spawn(bin, [ '--headless', '--no-sandbox', '--disable-gpu', '--remote-debugging-pipe',
			'--no-first-run', '--no-default-browser-check', '--disable-background-networking', '--disable-extensions',
			'--disable-sync', '--hide-scrollbars', '--lang=en-US', '--no-proxy-server', `--user-data-dir=${this.profile}`,
			'about:blank' ], { stdio: [ 'ignore', 'ignore', 'pipe', 'pipe', 'pipe' ] });
		this.proc.stderr.on('data', () => {});
		this.id = 0;
		this.pending = new Map();
		this.listeners = [];
		let buf = Buffer.alloc(0);
		this.proc.stdio[4].on('data', (d) => {
			buf = Buffer.concat([ buf, d ]);
			let i;
			while ((i = buf.indexOf(0)) >= 0) {
				const msg = JSON.parse(buf.subarray(0, i).toString('utf8'));
				buf = buf.subarray(i + 1);
				if (msg.id && this.pending.has(msg.id)) {
					const { resolve, reject, method } = this.pending.get(msg.id);
					this.pending.delete(msg.id);
					if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
					else resolve(msg.result);
				}
				else if (msg.method) {
					for (const l of this.listeners) l(msg);
				}
			}
		});
	}
	send(method, params = {}, sessionId) {
		const id = ++this.id;
		const msg = { id, method, params };
		if (sessionId) msg.sessionId = sessionId;
		return new Promise((resolve, reject) => {
			const t = setTimeout(() => { this.pending.delete(id); reject(new Error(`${method}: no answer in 30 s`)); }, 30000);
			this.pending.set(id, { resolve: (v) => { clearTimeout(t); resolve(v); }, reject: (e) => { clearTimeout(t); reject(e); }, method });
			this.proc.stdio[3].write(JSON.stringify(msg) + '\0');
		});
	}
	// A page in a context of its own (its own cookies: one account per context).
	async newPage() {
		const { browserContextId } = await this.send('Target.createBrowserContext');
		const { targetId } = await this.send('Target.createTarget', { url: 'about:blank', browserContextId });
		const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
		const page = new Page(this, sessionId);
		page.contextId = browserContextId;
		globalThis.pages.push(page);
		this.listeners.push((m) => { if (m.sessionId === sessionId) page.event(m); });
		await page.send('Page.enable');
		await page.send('Runtime.enable');
		await page.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 900, deviceScaleFactor: 1, mobile: false });
		return page;
	}
	async close() {
		const gone = new Promise((r) => { this.proc.once('exit', r); setTimeout(r, 5000); });
		try { this.proc.kill('SIGKILL'); } catch (e) { /* gone */ }
		await gone;
		fs.rmSync(this.profile, { recursive: true, force: true, maxRetries: 3 });
	}
}

class Page {
	constructor(browser, sessionId) {
		this.browser = browser;
		this.sessionId = sessionId;
		this.errors = [];
	}
	send(method, params) { return this.browser.send(method, params, this.sessionId); }
	event(m) {
		if (m.method === 'Runtime.exceptionThrown') {
			const d = m.params.exceptionDetails;
			this.errors.push(`${d.exception?.description?.split('\n')[0] || d.text} (${d.url || ''}:${d.lineNumber})`);
		}
		else if (m.method === 'Page.javascriptDialogOpening') {
			// LuCI asks before leaving a page with unsaved changes: leave (bounded by send's timeout)
			this.send('Page.handleJavaScriptDialog', { accept: true }).catch(() => {});
		}
		else if (m.method === 'Runtime.consoleAPICalled' && m.params.type === 'error') {
			this.errors.push('console.error: ' + m.params.args.map((a) => a.value ?? a.description).join(' '));
		}
	}
	async eval(expression) {
		const r = await this.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
		if (r.exceptionDetails)
			throw new Error(r.exceptionDetails.exception?.description || r.exceptionDetails.text);
		return r.result.value;
	}
	// Polls EXPR in the page every 200 ms until it is truthy (its value) or MS pass (null).
	async waitFor(expression, ms) {
		const end = Date.now() + ms;
		for (let i = 0; i < 1000 && Date.now() < end; i++) {
			try {
				const v = await this.eval(expression);
				if (v) return v;
			}
			catch (e) { /* a page between two documents */ }
			await sleep(200);
		}
		return null;
	}
	// Navigation from the page itself (as a link would), then the new document loaded.
	async goto(url) {
		const want = new URL(url).pathname;
		await this.eval(`setTimeout(() => { location.href = ${JSON.stringify(url)}; }, 0); true`).catch(() => {});
		await sleep(300);
		const loaded = await this.waitFor(`location.pathname === ${JSON.stringify(want)} && document.readyState === "complete"`, 20000);
		if (loaded) await this.menuDrawn();
		return loaded;
	}
	// A page of a logged-in session fetches its menu from the dispatcher (admin/menu) after
	// loading. LuCI's dispatcher.uc connects to ubus once, when uhttpd loads it, and every
	// request's forked process shares that connection: two dispatcher requests at once can
	// take each other's ubus replies, and one then hangs until uhttpd's script timeout (60 s,
	// a 502). So the next page is opened only once this one has its menu (bounded; the
	// login page has none).
	menuDrawn() {
		return this.waitFor(`!!document.querySelector('#topmenu > li') || !!document.querySelector('input[name=luci_password]')`, 10000);
	}
	async screenshot(name) {
		const size = await this.eval('[document.documentElement.scrollWidth, document.documentElement.scrollHeight]');
		const r = await this.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true,
			clip: { x: 0, y: 0, width: Math.min(size[0], 1280), height: Math.min(size[1], 4000), scale: 1 } });
		fs.writeFileSync(path.join(out, name), Buffer.from(r.data, 'base64'));
		console.log(`screenshot ${name}`);
	}
	html() { return this.eval('document.documentElement.outerHTML'); }
	// A ubus call through uhttpd's /ubus with this page's session, as LuCI's rpc.js makes it.
	ubus(object, method, args) {
		return this.eval(`fetch(L.env.ubuspath || '/ubus/', { method: 'POST', headers: { 'Content-Type': 'application/json' },
			body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'call', params: [ L.env.sessionid, ${JSON.stringify(object)},
				${JSON.stringify(method)}, ${JSON.stringify(args || {})} ] }) }).then((r) => r.json())`);
	}
}

const publicKeys = new Set([ env.wg0_pub, env.wg1_pub, env.laptop_pub, env.tablet_pub, env.phone_pub ]);
function noSecrets(name, html, extraPublic) {
	const leaked = env.secrets.filter((s) => html.includes(s));
	check(`${name}.no-secret`, leaked.length === 0, `${leaked.length} private key(s) or PSK(s) in the page`);
	const allowed = new Set([ ...publicKeys, ...(extraPublic || []) ]);
	const unknown = [ ...new Set(html.match(/(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{43}=(?![A-Za-z0-9+/=])/g) || []) ].filter((k) => !allowed.has(k));
	check(`${name}.only-public-keys`, unknown.length === 0, `base64 keys in the page that are no public key: ${unknown.length}`);
}
function noErrors(name, page) {
	check(`${name}.no-script-error`, page.errors.length === 0, JSON.stringify(page.errors.slice(0, 5)));
	page.errors = [];
}

async function login(page, user, password) {
	await page.goto(`${env.base}/cgi-bin/luci/`);
	const form = await page.waitFor('!!document.querySelector("input[name=luci_password]")', 15000);
	if (!form) return false;
	await page.eval(`(() => {
		const u = document.querySelector('input[name=luci_username]'), p = document.querySelector('input[name=luci_password]');
		u.value = ${JSON.stringify(user)}; p.value = ${JSON.stringify(password)};
		p.form.submit();
	})()`);
	await sleep(500);
	const sid = await page.waitFor('document.readyState === "complete" && !document.querySelector("input[name=luci_password]") && L.env.sessionid', 20000);
	if (sid) await page.menuDrawn();
	return sid;
}

const statusUrl = () => `${env.base}/cgi-bin/luci/admin/status/solowg`;
const countOf = (sel) => `document.querySelectorAll(${JSON.stringify(sel)}).length`;
const row = (pub) => `tr.solowg-peer[data-public-key="${pub}"]`;

async function statusCommon(name, page) {
	await page.goto(statusUrl());
	const shown = await page.waitFor(`${countOf('.solowg-interface')} === 2 && ${countOf('tr.solowg-peer')} === 3`, 20000);
	check(`${name}.interfaces`, shown, `not two interfaces with three peers within 20 s (${await page.eval(countOf('.solowg-interface'))} interfaces)`);
	// some polls, so that the graphs have points
	await sleep(11000);
	const get = (e) => page.eval(e);
	check(`${name}.wg0-peers`, await get(`!!document.querySelector('.solowg-interface[data-interface="wg0"] ${row(env.laptop_pub)}') && !!document.querySelector('.solowg-interface[data-interface="wg0"] ${row(env.phone_pub)}')`),
		'wg0 does not list the laptop and the phone');
	check(`${name}.wg1-migrated-peer`, await get(`!!document.querySelector('.solowg-interface[data-interface="wg1"] ${row(env.tablet_pub)}')`),
		"wg1 does not list its wireguard_wg1 peer");
	const badge = (pub) => get(`(document.querySelector('${row(pub)} .solowg-badge') || {}).className || ''`);
	check(`${name}.badge-online`, /solowg-online/.test(await badge(env.laptop_pub)), `laptop: ${await badge(env.laptop_pub)}`);
	check(`${name}.badge-online-migrated`, /solowg-online/.test(await badge(env.tablet_pub)), `tablet: ${await badge(env.tablet_pub)}`);
	check(`${name}.badge-never`, /solowg-never/.test(await badge(env.phone_pub)), `phone: ${await badge(env.phone_pub)}`);
	check(`${name}.psk-flag`, await get(`!!document.querySelector('${row(env.laptop_pub)} .solowg-psk') && !document.querySelector('${row(env.phone_pub)} .solowg-psk')`),
		'the PSK flag is not on the laptop alone');
	check(`${name}.graphs`, await get(countOf('svg.solowg-graph')) === 3, `${await get(countOf('svg.solowg-graph'))} rate graphs`);
	const pts = await get(`((document.querySelector('${row(env.laptop_pub)} .solowg-graph-rx') || {}).getAttribute?.('points') || '').trim().split(/\\s+/).filter(Boolean).length`);
	check(`${name}.graph-points`, pts >= 2, `laptop's rx graph has ${pts} points after the polls`);
	check(`${name}.settings`, await get(`!!document.querySelector('#cbi-solowg [data-name="packet_tx"] input[type="checkbox"]') && !!document.querySelector('#cbi-solowg [data-name="log_level"] select')`),
		'no packet_tx/log_level settings');
}

async function rootScenarios(browser) {
	const page = await browser.newPage();
	check('root.login', await login(page, 'root', env.root_password), 'no session after the login form');
	noErrors('root.login', page);

	// Status → solowg
	await statusCommon('root.status', page);
	check('root.status.writable', await page.eval('L.hasViewPermission() === true'), 'L.hasViewPermission() is not true for root');
	check('root.status.client-buttons', await page.eval(countOf('.solowg-client-button')) === 3, 'not one client button per peer');
	check('root.status.reload-button', await page.eval(countOf('.cbi-button-reload')) === 1, 'no Reload button');
	check('root.status.settings-enabled', await page.eval(`!document.querySelector('#cbi-solowg [data-name="log_level"] select').disabled`), 'settings disabled for root');
	noSecrets('root.status', await page.html());
	noErrors('root.status', page);
	await page.screenshot('status.png');

	// The client configuration of the laptop: a fresh key from the daemon, its QR code.
	await page.eval(`document.querySelector('${row(env.laptop_pub)} .solowg-client-button').click()`);
	const dlg = await page.waitFor(`!!document.querySelector('.modal .solowg-qr svg') && (document.querySelector('.modal pre.solowg-client-conf') || {}).textContent`, 15000);
	check('root.client.dialog', dlg, 'no client configuration with a QR code within 15 s');
	if (dlg) {
		const text = await page.eval(`document.querySelector('.modal pre.solowg-client-conf').textContent`);
		check('root.client.server-key', text.includes(`PublicKey = ${env.wg0_pub}`), "wg0's public key not in the configuration");
		check('root.client.endpoint', text.includes(`Endpoint = ${env.wan}:${env.wg0_port}`), `no Endpoint = ${env.wan}:${env.wg0_port} (the WAN address netifd reports)`);
		check('root.client.dns', text.includes(`DNS = ${env.lan}`), `no DNS = ${env.lan} (network.lan.ipaddr)`);
		check('root.client.address', /Address = 10\.232\.0\.2\/32/.test(text), 'no Address from the allowed IPs');
		check('root.client.psk', text.includes(`PresharedKey = ${env.psk_a}`), "the peer's PSK not in its configuration");
		const priv = (/PrivateKey = (\S+)/.exec(text) || [])[1] || '';
		const fresh = await page.eval(`(document.querySelector('.modal .solowg-fresh-pub') || {}).textContent || ''`);
		check('root.client.fresh-key', priv.length === 44 && fresh.length === 44 && !env.secrets.includes(priv),
			`no fresh key pair from solowg genkey (private ${priv.length} chars, public ${fresh.length})`);
		const qr = await page.eval(`(() => { const s = document.querySelector('.modal .solowg-qr svg');
			return { w: s.getAttribute('width'), h: s.getAttribute('height'), vb: s.getAttribute('viewBox'), d: (s.querySelector('path') || {}).getAttribute?.('d') }; })()`);
		let why = 'no path';
		try {
			if (qr.d) {
				const { strict } = decodeBoth(gridFromPath(qr.d, +qr.w, +/^M\d+,\d+h(\d+)/.exec(qr.d)[1]));
				why = !strict ? 'strict jsQR could not read it' : strict.data !== text ? 'it reads as another text'
					: strict.level !== 'M' ? `level ${strict.level}` : '';
			}
		}
		catch (e) { why = e.message; }
		check('root.client.qr', why === '', `the QR code does not read back as the configuration shown: ${why}`);
		await page.screenshot('status-client.png');
		await page.eval(`Array.from(document.querySelectorAll('.modal button')).find((b) => b.textContent.trim() === 'Close').click()`);
	}
	noErrors('root.client', page);

	// Reload configuration: the init script's reload through rpcd's file exec.
	await page.waitFor(`!document.body.classList.contains('modal-overlay-active')`, 5000);
	await page.eval(`document.querySelector('.cbi-button-reload').click()`);
	const note = await page.waitFor(`(() => { const n = Array.from(document.querySelectorAll('.alert-message'))
			.find((n) => !n.closest('.modal') && /reload/i.test(n.textContent));
		return n && { cls: n.className, text: n.textContent.trim() }; })()`, 30000);
	check('root.reload.notification', note && /\binfo\b/.test(note.cls) && /Configuration reloaded: (wg0, wg1|wg1, wg0)/.test(note.text),
		`no info "Configuration reloaded: wg0, wg1" within 30 s (${JSON.stringify(note)})`);
	noErrors('root.reload', page);

	// Network → Interfaces → wg1 (moved over from kernel WireGuard): its peers in the
	// wireguard_wg1 grid, edited there and saved to that section.
	await page.goto(`${env.base}/cgi-bin/luci/admin/network/network`);
	const edit = (ifc) => `document.querySelector('.cbi-section-table-row[data-sid="${ifc}"] .cbi-button-edit')`;
	check('root.interfaces.list', await page.waitFor(`!!${edit('wg1')} && !!${edit('wg0')}`, 20000), 'no Edit for wg0 and wg1 within 20 s');
	await sleep(500);
	await page.eval(`${edit('wg1')}.click()`);
	const form = await page.waitFor(`!!document.querySelector('.modal .cbi-tabmenu') && !!document.querySelector('.modal [data-name="private_key"]')`, 15000);
	check('root.wg1.form', form, 'the interface dialog of wg1 with the solowg form did not open within 15 s');
	const pub = await page.waitFor(`(() => { const f = document.querySelector('.modal [data-name="_public_key"] .cbi-value-field'), e = f && (f.querySelector('input') || f);
		const v = e && (e.value || e.textContent || '').trim(); return v && v.length >= 44 ? v : null; })()`, 10000);
	check('root.wg1.public-key', pub && pub.includes(env.wg1_pub), `the public key shown is not wg1's (${pub})`);
	const legacyRows = `document.querySelectorAll('.modal #cbi-network-wireguard_wg1 tr.cbi-section-table-row')`;
	check('root.wg1.migrated-grid', await page.eval(`${legacyRows}.length === 1 && !!document.querySelector('.modal #cbi-network-solowg_wg1')`),
		`not one row in the wireguard_wg1 grid beside a solowg_wg1 grid (${await page.eval(`${legacyRows}.length`)} rows)`);
	const has = (opts) => page.eval(`${JSON.stringify(opts)}.filter((o) => !document.querySelector('.modal [data-name="' + o + '"]'))`);
	const missing = await has([ 'private_key', '_public_key', '_generate_key', '_import', 'listen_port', 'addresses', 'mtu', 'fwmark',
		'nohostroute', 'tunlink', 'ip6prefix' ]);
	check('root.wg1.options', missing.length === 0, `interface options missing from the form: ${missing.join(', ')}`);
	const tabs = await page.eval(`Array.from(document.querySelectorAll('.modal .cbi-tabmenu > li')).map((t) => t.textContent.trim())`);
	if (tabs.includes('Peers'))
		await page.eval(`Array.from(document.querySelectorAll('.modal .cbi-tabmenu > li')).find((t) => t.textContent.trim() === 'Peers').querySelector('a').click()`);
	await sleep(500);
	await page.screenshot('interface-wg1.png');
	// the row's Edit opens the peer's own dialog over the interface's; Save there returns to it
	// the visible button of the dialog on top (a dialog under another keeps its buttons)
	const clickButton = (label) => page.eval(`(() => { const b = Array.from(document.querySelectorAll('.modal button'))
		.filter((b) => b.textContent.trim() === ${JSON.stringify(label)} && b.offsetParent !== null).pop(); b.click(); return true; })()`);
	await page.eval(`${legacyRows}[0].querySelector('.cbi-button-edit').click()`);
	const peerForm = await page.waitFor(`!!document.querySelector('.modal [data-name="description"] input')`, 10000);
	check('root.wg1.peer-dialog', peerForm, "the migrated peer's Edit opened no dialog with its description");
	if (!peerForm) fs.writeFileSync(path.join(out, 'failed-peer-dialog.html'), await page.html());
	await page.screenshot('interface-wg1-peer.png');
	const missingPeer = await has([ 'disabled', 'description', 'public_key', 'preshared_key', '_generate_psk', 'allowed_ips',
		'route_allowed_ips', 'endpoint_host', 'endpoint_port', 'persistent_keepalive' ]);
	check('root.wg1.peer-options', missingPeer.length === 0, `peer options missing from the dialog: ${missingPeer.join(', ')}`);
	await page.eval(`(() => { const i = document.querySelector('.modal [data-name="description"] input');
		i.value = 'tablet (edited)'; i.dispatchEvent(new Event('input', { bubbles: true })); i.dispatchEvent(new Event('change', { bubbles: true })); })()`);
	await sleep(300);
	await clickButton('Save');
	const back = await page.waitFor(`(() => { const r = ${legacyRows}[0]; return r && r.textContent.includes('tablet (edited)'); })()`, 10000);
	check('root.wg1.peer-edited', back, 'the interface dialog does not show the edited description');
	await sleep(1000);
	await clickButton('Save');
	const closed = await page.waitFor(`!document.body.classList.contains('modal-overlay-active')`, 15000);
	check('root.wg1.saved', closed, 'the dialog did not close on Save');
	if (!closed) await page.screenshot('failed-wg1-save.png');
	const net1 = await page.ubus('uci', 'get', { config: 'network' });
	const sections = Object.values((net1.result && net1.result[1] && net1.result[1].values) || {});
	const tablet = sections.find((s) => s.public_key === env.tablet_pub) || {};
	check('root.wg1.saved-to-section', tablet['.type'] === 'wireguard_wg1' && tablet.description === 'tablet (edited)' && tablet.preshared_key === env.psk_b,
		`the edit is not staged in the wireguard_wg1 section with the rest kept (${tablet['.type']}, ${tablet.description})`);
	noErrors('root.wg1', page);

	// wg0: import a wg-quick file (peers replaced), then Save.
	const k = () => crypto.randomBytes(32).toString('base64');
	const imp = { priv: k(), p1: k(), p2: k(), psk: k() };
	const file = [ '[Interface]', `PrivateKey = ${imp.priv}`, 'ListenPort = 51999', 'Address = 10.9.0.1/24, fd09::1/64', 'MTU = 1400', '',
		'[Peer]', `PublicKey = ${imp.p1}`, 'AllowedIPs = 10.9.0.2/32', 'Endpoint = 203.0.113.9:51820', 'PersistentKeepalive = 25', '',
		'[Peer]', `PublicKey = ${imp.p2}`, `PresharedKey = ${imp.psk}`, 'AllowedIPs = 10.9.0.3/32, 192.168.60.0/24', '' ].join('\n');
	await page.goto(`${env.base}/cgi-bin/luci/admin/network/network`);
	await page.waitFor(`!!${edit('wg0')}`, 20000);
	await sleep(500);
	await page.eval(`${edit('wg0')}.click()`);
	check('root.import.form', await page.waitFor(`!!document.querySelector('.modal [data-name="_import"] button')`, 15000), 'no import button in wg0\'s dialog');
	await page.eval(`document.querySelector('.modal [data-name="_import"] button').click()`);
	check('root.import.panel', await page.waitFor(`!!document.querySelector('.solowg-import-text')`, 5000), 'no import panel');
	await page.eval(`document.querySelector('.solowg-import-text').value = ${JSON.stringify(file)}; document.querySelector('.solowg-import-apply').click()`);
	await sleep(1500);
	await page.screenshot('import.png');
	await clickButton('Save');
	check('root.import.saved', await page.waitFor(`!document.body.classList.contains('modal-overlay-active')`, 15000), 'the dialog did not close on Save');
	const net2 = await page.ubus('uci', 'get', { config: 'network' });
	const v = (net2.result && net2.result[1] && net2.result[1].values) || {};
	const peers = Object.values(v).filter((s) => s['.type'] === 'solowg_wg0');
	check('root.import.peers', peers.length === 2 && peers.some((p) => p.public_key === imp.p1) && peers.some((p) => p.public_key === imp.p2),
		`wg0's peers are not the file's two (${peers.length} solowg_wg0 sections)`);
	const p1 = peers.find((p) => p.public_key === imp.p1) || {}, p2 = peers.find((p) => p.public_key === imp.p2) || {};
	check('root.import.endpoint', p1.endpoint_host === '203.0.113.9' && String(p1.endpoint_port) === '51820', `endpoint ${p1.endpoint_host}:${p1.endpoint_port}`);
	check('root.import.psk-and-ips', p2.preshared_key === imp.psk && JSON.stringify(p2.allowed_ips) === JSON.stringify([ '10.9.0.3/32', '192.168.60.0/24' ]),
		`second peer: ${JSON.stringify(p2.allowed_ips)}`);
	check('root.import.interface', v.wg0 && v.wg0.private_key === imp.priv && v.wg0.listen_port === '51999' && v.wg0.mtu === '1400' &&
		JSON.stringify(v.wg0.addresses) === JSON.stringify([ '10.9.0.1/24', 'fd09::1/64' ]), `wg0: ${JSON.stringify({ port: v.wg0?.listen_port, mtu: v.wg0?.mtu, addresses: v.wg0?.addresses })}`);
	check('root.import.wg1-untouched', Object.values(v).filter((s) => s['.type'] === 'wireguard_wg1').length === 1, "wg1's migrated peer was touched");
	noErrors('root.import', page);
}

// Status → solowg → Benchmark: real runs of `solowg bench` behind the page, started through
// rpcd's file exec with the command lines the ACL lists.
const benchUrl = () => `${env.base}/cgi-bin/luci/admin/status/solowg/bench`;
const benchState = (page) => page.eval(`(document.querySelector('.solowg-bench-state') || {}).getAttribute?.('data-state') || ''`);
// the state and what the page says, for failure messages
const benchSays = (page) => page.eval(`(() => { const b = document.querySelector('.solowg-bench-state');
	return b ? b.getAttribute('data-state') + ': ' + b.textContent.trim().slice(0, 200) : 'no state box'; })()`).catch((e) => e.message);
async function stateFile(page) {
	const r = await page.ubus('file', 'read', { path: '/var/run/solowg-bench.json' });
	try { return JSON.parse(r.result[1].data); }
	catch (e) { return { unreadable: JSON.stringify(r).slice(0, 200) }; }
}
// Chooses the comparison and the time per run, presses Run benchmark.
async function startBench(page, impls, seconds) {
	return page.eval(`(() => {
		const i = document.querySelector('select.solowg-bench-impls'), s = document.querySelector('select.solowg-bench-seconds'),
			b = document.querySelector('button.solowg-bench-run');
		if (!i || !s || !b || b.disabled) return false;
		i.value = ${JSON.stringify(impls)}; s.value = ${JSON.stringify(seconds)};
		b.click();
		return true;
	})()`);
}

async function benchScenarios(browser) {
	const page = await browser.newPage();
	check('bench.login', await login(page, 'root', env.root_password), 'no session after the login form');
	await page.goto(statusUrl());
	const tabs = await page.waitFor(`(() => { const t = Array.from(document.querySelectorAll('#tabmenu li')).map((l) => l.textContent.trim());
		return t.length ? t : null; })()`, 20000);
	check('bench.tabs', JSON.stringify(tabs) === JSON.stringify([ 'Status', 'Benchmark' ]), `tabs of Status → solowg: ${JSON.stringify(tabs)}`);
	check('bench.status-tab-active', await page.eval(`!!document.querySelector('#tabmenu li.active') && document.querySelector('#tabmenu li.active').textContent.trim() === 'Status'`),
		'the Status tab is not the active one at admin/status/solowg');
	await page.goto(benchUrl());
	check('bench.page', await page.waitFor(`!!document.querySelector('button.solowg-bench-run')`, 20000), 'no Run benchmark button within 20 s');
	check('bench.writable', await page.eval('L.hasViewPermission() === true'), 'L.hasViewPermission() is not true for root');
	check('bench.first-open', await benchState(page) === 'none' && await page.eval(countOf('.solowg-bench-none')) === 1,
		`a router that never ran it does not say so (state ${await benchState(page)})`);
	check('bench.choices', JSON.stringify(await page.eval(`[ 'impls', 'seconds' ].map((c) => Array.from(document.querySelectorAll('select.solowg-bench-' + c + ' option')).map((o) => o.value))`))
		=== JSON.stringify([ [ '', 'solowg,solowg' ], [ '5', '10', '30' ] ]), 'the choices are not kernel module vs. solowg, solowg vs. solowg and 5/10/30 s');

	// solowg against the kernel module, on a machine without the module: solowg runs alone and
	// the page says why, in the command's words. Meanwhile a second page, opened before the
	// start, presses Run too: the command refuses, and that page shows what it said.
	const other = await browser.newPage();
	check('bench.other.login', await login(other, 'root', env.root_password), 'no session for the second page');
	await other.goto(benchUrl());
	await other.waitFor(`!!document.querySelector('button.solowg-bench-run')`, 20000);
	const tk = Date.now();
	check('bench.kernel.started', await startBench(page, '', '5'), 'Run benchmark could not be pressed');
	check('bench.kernel.running', await page.waitFor(`document.querySelector('.solowg-bench-state')?.getAttribute('data-state') === 'running'`, 30000),
		`the run does not show as running within 30 s (${await benchSays(page)})`);
	check('bench.concurrent.pressed', await startBench(other, '', '5'), 'the second page\'s Run benchmark could not be pressed');
	const refusal = await other.waitFor(`(() => { const e = document.querySelector('.solowg-bench-state[data-state="failed"] .solowg-bench-error');
		return e && e.textContent.trim(); })()`, 20000);
	console.log(`bench pressed twice: ${refusal}`);
	check('bench.concurrent.refused', /another solowg bench is running/.test(refusal || ''), `the second page does not show the command's refusal (${await benchSays(other)})`);
	check('bench.concurrent.button-again', await other.waitFor(`!document.querySelector('button.solowg-bench-run').disabled`, 5000), 'the button stays disabled after the refusal');
	noErrors('bench.concurrent', other);
	const kernelEnd = await page.waitFor(`(() => { const s = document.querySelector('.solowg-bench-state')?.getAttribute('data-state'); return (s === 'done' || s === 'failed') && s; })()`, 90000);
	console.log(`bench without the module: ${kernelEnd} after ${Math.round((Date.now() - tk) / 1000)} s`);
	const sk = await stateFile(page);
	check('bench.kernel.solowg-alone', kernelEnd === 'done' && Array.isArray(sk.runs) && sk.runs.length === 2 && sk.runs.every((r) => r.impl === 'solowg'),
		`not done with solowg's two runs alone (${await benchSays(page)}; ${JSON.stringify(sk).slice(0, 200)})`);
	const notes = await page.eval(`Array.from(document.querySelectorAll('.solowg-bench-notes .solowg-bench-note')).map((n) => n.textContent)`);
	console.log(`bench notes: ${JSON.stringify(notes)}`);
	check('bench.kernel.note', Array.isArray(sk.notes) && sk.notes.length > 0 && JSON.stringify(notes) === JSON.stringify(sk.notes) && /module/.test(notes.join(' ')),
		`the page does not show the command's notes about the module (${JSON.stringify(notes)} / ${JSON.stringify(sk.notes)})`);
	check('bench.kernel.button-again', await page.waitFor(`!document.querySelector('button.solowg-bench-run').disabled`, 5000), 'the button stays disabled after the run');
	noErrors('bench.kernel', page);

	// solowg against itself, 5 s per run: progress seen, the page reloaded while it runs
	// (the run is followed again), then the result.
	const t0 = Date.now();
	check('bench.run.started', await startBench(page, 'solowg,solowg', '5'), 'Run benchmark could not be pressed');
	const firstProgress = await page.waitFor(`(() => { const p = document.querySelector('.solowg-bench-state[data-state="running"] .solowg-bench-progress');
		return p && p.textContent.trim(); })()`, 30000);
	check('bench.run.progress', !!firstProgress, `no progress shown within 30 s of the start (${await benchSays(page)})`);
	check('bench.run.button-disabled', await page.eval(`document.querySelector('button.solowg-bench-run').disabled`), 'Run benchmark is enabled while a run goes on');
	const seen = new Set(firstProgress ? [ firstProgress ] : []);
	await page.goto(benchUrl());
	check('bench.run.reopened-running', await page.waitFor(`document.querySelector('.solowg-bench-state')?.getAttribute('data-state') === 'running'`, 10000),
		`the reopened page does not show the run going on (${await benchSays(page)})`);
	let state = '';
	for (let i = 0; i < 600 && Date.now() - t0 < 150000; i++) {
		state = await benchState(page).catch(() => '');
		const p = await page.eval(`(document.querySelector('.solowg-bench-progress') || {}).textContent || ''`).catch(() => '');
		if (p.trim()) seen.add(p.trim());
		if (state === 'done' || state === 'failed') break;
		await sleep(250);
	}
	const secs = Math.round((Date.now() - t0) / 1000);
	console.log(`bench solowg,solowg 5 s: ${state} after ${secs} s; progress texts: ${JSON.stringify([ ...seen ]).slice(0, 400)}`);
	check('bench.run.done', state === 'done', `the run did not end done within 150 s (${await benchSays(page)})`);
	check('bench.run.progress-steps', seen.size >= 2, `fewer than two progress texts seen: ${JSON.stringify([ ...seen ])}`);
	const st = await stateFile(page);
	const runs = Array.isArray(st.runs) ? st.runs : [];
	check('bench.run.state-file', st.state === 'done' && runs.length === 4 && runs.every((r) => r.impl === 'solowg' && r.mbps > 0 && r.cpu >= 0 && r.cpu <= 1)
		&& [ 'up', 'down' ].every((d) => runs.filter((r) => r.dir === d).length === 2),
		`the state file is not four solowg runs, two per direction, with Mbit/s: ${JSON.stringify(st).slice(0, 300)}`);
	const shown = await page.eval(`(() => ({
		bars: Array.from(document.querySelectorAll('svg.solowg-bench-chart rect.solowg-bench-bar')).map((b) => ({ impl: b.getAttribute('data-impl'), dir: b.getAttribute('data-dir'), mbps: +b.getAttribute('data-mbps'), w: +b.getAttribute('width') })),
		rows: Array.from(document.querySelectorAll('tr.solowg-bench-row')).map((r) => ({ mbps: r.querySelector('.solowg-bench-mbps').textContent.trim(), cpu: r.querySelector('.solowg-bench-cpu').textContent.trim() })),
		ratio: (document.querySelector('.solowg-bench-ratio') || {}).textContent || '',
		system: (document.querySelector('.solowg-bench-system') || {}).textContent || '',
		line: (document.querySelector('input.solowg-bench-line') || {}).value || '',
		copy: !!document.querySelector('button.solowg-bench-copy')
	}))()`);
	// the chart groups the runs by direction (in the order the directions come), the table lists them as they ran
	const byDir = [ ...new Set(runs.map((r) => r.dir)) ].flatMap((d) => runs.filter((r) => r.dir === d));
	check('bench.result.chart', shown.bars.length === runs.length && runs.length > 0 &&
		shown.bars.every((b, i) => b.mbps === byDir[i].mbps && b.dir === byDir[i].dir && b.impl === byDir[i].impl && b.w > 0),
		`${shown.bars.length} bars for ${runs.length} runs, or their figures differ from the state file: ${JSON.stringify(shown.bars)}`);
	check('bench.result.figures', shown.rows.length === runs.length && shown.rows.every((r, i) => r.mbps === `${runs[i].mbps.toFixed(1)} Mbit/s` && r.cpu === `${Math.round(runs[i].cpu * 100)} %`),
		`the table's Mbit/s and CPU are not the state file's: ${JSON.stringify(shown.rows)}`);
	check('bench.result.ratio', /solowg \/ kernel module: up .+, down .+/.test(shown.ratio), `no ratio line: ${shown.ratio}`);
	check('bench.result.system', !!st.system && shown.system.includes(`solowg: ${st.system.solowg}`) && shown.system.includes(`Kernel: ${st.system.kernel}`),
		`the system line does not carry the state file's: ${shown.system}`);
	check('bench.result.line', shown.line !== '' && shown.line === st.line && shown.copy, `the shareable line is not the state file's, or no Copy: ${shown.line}`);
	await page.screenshot('bench.png');
	// Copy, with the clipboard permission a user grants (headless has no one to ask), read back
	await page.browser.send('Browser.grantPermissions', { origin: env.base, browserContextId: page.contextId,
		permissions: [ 'clipboardReadWrite', 'clipboardSanitizedWrite' ] });
	await page.send('Emulation.setFocusEmulationEnabled', { enabled: true });
	await page.eval(`document.querySelector('button.solowg-bench-copy').click()`);
	check('bench.result.copied', await page.waitFor(`Array.from(document.querySelectorAll('.alert-message')).some((n) => /Copied/.test(n.textContent))`, 5000),
		'Copy said nothing');
	const clip = await page.eval('navigator.clipboard.readText()').catch((e) => `(${e.message})`);
	check('bench.result.clipboard', clip === st.line, `the clipboard holds ${JSON.stringify(clip).slice(0, 120)}, not the line`);
	noErrors('bench.run', page);

	// the last result, when the page is opened again
	await page.goto(benchUrl());
	check('bench.reopened-result', await page.waitFor(`document.querySelector('.solowg-bench-state')?.getAttribute('data-state') === 'done' && ${countOf('svg.solowg-bench-chart rect.solowg-bench-bar')} === ${runs.length}`, 15000),
		`the reopened page does not show the last result (state ${await benchState(page)})`);
	noErrors('bench.reopened', page);

	// A run that fails on the router: SIGTERM to the bench (what `kill PID` does) once its
	// first run goes on; it writes `failed` with its error, which the page shows.
	check('bench.fail.started', await startBench(page, 'solowg,solowg', '5'), 'Run benchmark could not be pressed');
	const going = await page.waitFor(`/run 1\\/4/.test((document.querySelector('.solowg-bench-state[data-state="running"] .solowg-bench-progress') || {}).textContent || '')`, 30000);
	check('bench.fail.running', !!going, `the run does not show its first run within 30 s (${await benchSays(page)})`);
	const victim = benchProcess((await stateFile(page)).pid);
	check('bench.fail.process', !!victim, 'the state file\'s pid is no process of the router');
	if (victim) process.kill(victim, 'SIGTERM');
	const failedText = await page.waitFor(`(() => { const e = document.querySelector('.solowg-bench-state[data-state="failed"] .solowg-bench-error');
		return e && e.textContent.trim(); })()`, 30000);
	const sf = await stateFile(page);
	console.log(`bench sent SIGTERM: ${failedText}`);
	check('bench.fail.error-shown', !!failedText && sf.state === 'failed' && !!sf.error && failedText.includes(sf.error),
		`the page does not show the state file's error (page: ${failedText}; file: ${JSON.stringify([ sf.state, sf.error ])})`);
	check('bench.fail.button-again', await page.waitFor(`!document.querySelector('button.solowg-bench-run').disabled`, 5000), 'the button stays disabled after the failure');
	await page.goto(benchUrl());
	check('bench.fail.reopened', await page.waitFor(`(document.querySelector('.solowg-bench-state[data-state="failed"] .solowg-bench-error') || {}).textContent?.includes(${JSON.stringify(sf.error || '?')})`, 15000),
		`the reopened page does not show the failure (${await benchSays(page)})`);
	noErrors('bench.fail', page);

	// A run killed outright (SIGKILL, as the kernel does when memory runs out) writes nothing
	// more: its file says `running` for ever, and the page must say that it stopped.
	check('bench.killed.started', await startBench(page, 'solowg,solowg', '5'), 'Run benchmark could not be pressed');
	const going2 = await page.waitFor(`/run 1\\/4/.test((document.querySelector('.solowg-bench-state[data-state="running"] .solowg-bench-progress') || {}).textContent || '')`, 30000);
	check('bench.killed.running', !!going2, `the run does not show its first run within 30 s (${await benchSays(page)})`);
	const victim2 = benchProcess((await stateFile(page)).pid);
	check('bench.killed.process', !!victim2, 'the state file\'s pid is no process of the router');
	if (victim2) process.kill(victim2, 'SIGKILL');
	const stalledText = await page.waitFor(`(() => { const e = document.querySelector('.solowg-bench-state[data-state="failed"] .solowg-bench-error');
		return e && e.textContent.trim(); })()`, 50000);
	console.log(`bench sent SIGKILL: ${stalledText}`);
	check('bench.killed.shown', !!stalledText && /stopped without a result/.test(stalledText) && (await stateFile(page)).state === 'running',
		`the page does not say the killed run stopped (page: ${stalledText})`);
	check('bench.killed.button-again', await page.waitFor(`!document.querySelector('button.solowg-bench-run').disabled`, 5000), 'the button stays disabled after the killed run');
	noErrors('bench.killed', page);
}

// The host PID of the router's process PID (the router has a PID namespace of its own):
// the process whose innermost NSpid is PID and whose root is the router's (by device and
// inode: /proc/N/root's text is another path where this test itself runs in a chroot).
function benchProcess(pid) {
	if (!(pid > 0)) return null;
	const root = fs.statSync(env.router_root);
	for (const d of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
		try {
			const ns = (/^NSpid:\s+(.*)$/m.exec(fs.readFileSync(`/proc/${d}/status`, 'utf8')) || [])[1];
			if (ns && +ns.trim().split(/\s+/).pop() === pid && ns.trim().split(/\s+/).length > 1 && sameFile(fs.statSync(`/proc/${d}/root/`), root))
				return +d;
		}
		catch (e) { /* gone meanwhile */ }
	}
	return null;
}

function sameFile(a, b) {
	return a.dev === b.dev && a.ino === b.ino;
}

async function viewerScenarios(browser) {
	const page = await browser.newPage();
	check('viewer.login', await login(page, 'viewer', env.viewer_password), 'no session after the login form');
	await statusCommon('viewer.status', page);
	check('viewer.status.read-only', await page.eval('L.hasViewPermission() === false'), 'L.hasViewPermission() is not false for the viewer');
	check('viewer.status.no-client-button', await page.eval(countOf('.solowg-client-button')) === 0, 'client configuration buttons shown');
	check('viewer.status.no-reload', await page.eval(countOf('.cbi-button-reload')) === 0, 'Reload button shown');
	check('viewer.status.note', await page.eval(countOf('.solowg-readonly-note')) === 1, 'no read-only note');
	check('viewer.status.settings-disabled', await page.eval(`(() => { const f = document.querySelectorAll('#cbi-solowg [data-name] input, #cbi-solowg [data-name] select'); return f.length >= 2 && Array.from(f).every((e) => e.disabled); })()`),
		'a settings field is enabled');
	check('viewer.status.footer-disabled', await page.eval(`(() => { const b = document.querySelectorAll('.cbi-page-actions button'), c = document.querySelector('.cbi-page-actions .cbi-dropdown');
		return b.length === 2 && Array.from(b).every((e) => e.disabled) && c && c.hasAttribute('disabled'); })()`),
		'Save & Apply, Save or Reset enabled for the viewer');
	noSecrets('viewer.status', await page.html());
	noErrors('viewer.status', page);
	await page.screenshot('status-readonly.png');
	// What the page's session may do, through /ubus as rpc.js calls it.
	const r = await page.ubus('uci', 'get', { config: 'network' });
	check('viewer.ubus.uci-network', r.result && r.result[0] === 6 && !JSON.stringify(r).includes('private_key'),
		`uci get network: ${JSON.stringify(r).slice(0, 120)}`);
	const g = await page.ubus('solowg', 'genkey', {});
	check('viewer.ubus.genkey', g.error && g.error.code === -32002, `solowg genkey: ${JSON.stringify(g).slice(0, 120)}`);
	// The benchmark: no tab, the page refused, and rpcd refuses the run and the state file.
	check('viewer.bench.no-tab', await page.eval(`!Array.from(document.querySelectorAll('#tabmenu li')).some((l) => /Benchmark/.test(l.textContent))`),
		'a Benchmark tab shown to the viewer');
	const ex = await page.ubus('file', 'exec', { command: '/usr/sbin/solowg', params: [ 'bench', '--detach', '--state-file', '/var/run/solowg-bench.json', '--json', '--seconds', '5', '--impls', 'solowg,solowg' ] });
	check('viewer.ubus.bench-exec', ex.error && ex.error.code === -32002, `file exec of the benchmark: ${JSON.stringify(ex).slice(0, 120)}`);
	const rd = await page.ubus('file', 'read', { path: '/var/run/solowg-bench.json' });
	check('viewer.ubus.bench-state', rd.error && rd.error.code === -32002, `file read of the state file: ${JSON.stringify(rd).slice(0, 120)}`);
	await page.goto(benchUrl());
	await sleep(2000);
	const bh = await page.html();
	check('viewer.bench.refused', !bh.includes('solowg-bench-run') && !bh.includes('solowg-bench-chart'), 'the benchmark page rendered for the viewer');
	// The interfaces page is not the viewer's: no form with a key.
	await page.goto(`${env.base}/cgi-bin/luci/admin/network/network`);
	await sleep(3000);
	const h = await page.html();
	fs.writeFileSync(path.join(out, 'viewer-interfaces.html'), h);
	check('viewer.interfaces.refused', !h.includes('data-name="private_key"') && !h.includes('cbi-button-edit'), 'the interfaces page rendered for the viewer');
	noSecrets('viewer.interfaces', h);
}

(async () => {
	const browser = new Browser(chromium);
	globalThis.pages = [];
	const watchdog = setTimeout(() => { console.log('FAIL driver: over 360 s'); browser.close(); process.exit(1); }, 360000);
	try {
		await rootScenarios(browser);
		await benchScenarios(browser);
		await viewerScenarios(browser);
	}
	catch (e) {
		check('driver', false, e.stack.split('\n').slice(0, 3).join(' | '));
		// the page as it was, for the reader of the log
		for (const [i, p] of globalThis.pages.entries())
			fs.writeFileSync(path.join(out, `failed-page-${i}.html`), await p.html().catch(() => ''));
	}
	finally {
		clearTimeout(watchdog);
		await browser.close();
	}
	process.exit(failed ? 1 : 0);
})();
