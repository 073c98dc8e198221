#!/usr/bin/env node
// Checks a DOM dumped by chromium --dump-dom for one browser.sh scenario.
// Usage: node check-dom.js SCENARIO FILE.html
'use strict';
const fs = require('node:fs');
const { gridFromPath, decodeBoth } = require('./qr-decode.js');

const [scenario, file] = process.argv.slice(2);
const html = fs.readFileSync(file, 'utf8');
const problems = [];
const check = (cond, what) => { if (!cond) problems.push(what); };
const count = (re) => (html.match(re) || []).length;

const m = html.match(/STANDIN-LOG (\{.*?\})<\/pre>/s);
check(m, 'stand-in log present (page scripts ran)');
const log = m ? JSON.parse(m[1].replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&')) : { errors: [], calls: [], steps: [] };
check(log.errors.length === 0, `no script errors (got ${JSON.stringify(log.errors)})`);
check(log.steps.includes('done'), `harness finished (steps ${JSON.stringify(log.steps)})`);

const keys = {
	phone: 'Vn0fmKvgqxZMxc3BjZ5165S2qUeKNDpP5vsFYEV9+ks=',
	laptop: 'okEk1J+fYQNph66Jp03NWX9jM3rWMGWDAruBZt0Gui0=',
	office: 'krCjx/8ir+Jd6tdnGtnM3S283p68gRfhn4FxKTfs0Pg=',
};
// Public keys the status page may show; everything else in canned.js is secret.
const publicKeys = new Set([...Object.values(keys), 'nfP77SbqNgHV3QADVX3hdYmOWSX+00QdYvuVM5oEUIU=']);
const secrets = {
	'server private key': '9LHQ3qnh+p9d7JquR3eUf70bUOrgegetydgxwPHT8Zk=',
	'generated client private key': 'N7PSIOm5iWAbde95IDxLXufnUWsJvml7AxokR4lLssA=',
	'stored PSK': 'dtdXh7sM/y6lL8IIQvI8ZD5+FMlPUPAzaiQBxAyNJ70=',
};
// Elements (with their attributes) whose class list holds `cls`.
const elements = (cls) => [...html.matchAll(/<([a-z]+)\b([^>]*)>/g)]
	.filter((m) => (/\bclass="([^"]*)"/.exec(m[2]) || [])[1]?.split(/\s+/).includes(cls));
const isDisabled = (attrs) => /\sdisabled(=|\s|$)/.test(attrs);
const settingsMap = (html.split('data-config="solowg"')[1] || '').split('cbi-page-actions')[0];

if (scenario.startsWith('status')) {
	check(count(/class="tr solowg-peer"/g) === 3, 'three peer rows');
	for (const k of Object.values(keys)) check(html.includes(`data-public-key="${k}"`), `row for ${k}`);
	check(count(/solowg-badge solowg-online/g) === 1, 'one online badge (phone, 34 s)');
	check(count(/solowg-badge solowg-stale/g) === 1, 'one stale badge (laptop, 15 min)');
	check(count(/solowg-badge solowg-never/g) === 1, 'one never-connected badge (office, no handshake)');
	const officeRow = (html.split(`data-public-key="${keys.office}"`)[1] || '').split('</tr>')[0];
	check(/class="solowg-badge solowg-never"[^>]*>never connected</.test(officeRow), 'the peer without a handshake is badged "never connected", not "stale"');
	check(html.includes('>34 s ago<'), 'handshake age "34 s ago"');
	check(html.includes('>15 min ago<'), 'age "15 min ago"');
	check(/<span class="solowg-age" title="">(<\/span>)/.test(officeRow), 'no age next to "never connected"');
	check(count(/<svg class="solowg-graph"/g) === 3, 'a rate graph per peer');
	check(html.includes('Phone &lt;b&gt;Anna&lt;/b&gt;') && !html.includes('<b>Anna</b>'), 'description shown as text, not HTML');
	check(html.includes('fd00::2/128') && html.includes('192.168.50.0/24'), 'allowed IPs shown');
	check(html.includes('198.51.100.7:40112') && html.includes('laptop.example.net'), 'endpoints shown');
	// drop counters: a short text each, the daemon's name in the tooltip
	const drop = (reason) => (new RegExp(`<div class="solowg-drop" data-reason="${reason}" title="${reason}">([^<]*)</div>`).exec(html) || [])[1];
	check(drop('unknown_index') === 'No matching session: 2', `unknown_index shown as text with its name as tooltip (${drop('unknown_index')})`);
	check(drop('disallowed_source') === "Source not in the peer's allowed IPs: 7" || drop('disallowed_source') === 'Source not in the peer&#39;s allowed IPs: 7',
		`disallowed_source shown as text (${drop('disallowed_source')})`);
	check(drop('some_future_reason') === 'some_future_reason: 1', 'a reason the page does not know is shown by its name');
	check(drop('bad_mac1') === undefined, 'a zero counter is not shown');
	check(!/>[^<]*\bunknown_index\b[^<]*</.test(html), 'the internal name unknown_index appears only in attributes');
	check(/<div class="cbi-map" data-config="solowg"/.test(html) && html.includes('Daemon settings'), 'daemon settings map rendered');
	check(/<input[^>]*type="checkbox"[^>]*data-option="packet_tx"/.test(settingsMap), 'packet_tx checkbox in the settings');
	check(/<select[^>]*data-option="log_level"/.test(settingsMap) && ['info', 'verbose', 'error', 'silent'].every((v) => settingsMap.includes(`<option value="${v}">`)),
		'log_level list with info, verbose, error, silent');
	check(settingsMap.includes('no netfilter output or postrouting rule') && settingsMap.includes('Takes effect when the solowg service restarts'),
		'packet_tx description says what it bypasses and when it applies');
	const polls = log.calls.filter((c) => c === 'solowg.status').length;
	if (scenario === 'status' || scenario === 'status-settings' || scenario.startsWith('status-client') || scenario.startsWith('status-reload')) {
		check(log.nodespec && log.nodespec.satisfied && !log.nodespec.readonly, `root: page node writable (${JSON.stringify(log.nodespec)})`);
		check(elements('solowg-client-button').length === 3, 'a client configuration button per peer');
		check(elements('cbi-button-reload').length === 1, 'Reload button');
		check(html.includes('Transmit path: packet socket where the NIC has no checksum offload'), 'transmit path from status.packet_tx = true');
		check(log.uci_loads.includes('network'), 'network loaded for the client configurations');
		const footer = elements('cbi-page-actions').length === 1 ? ['cbi-button-apply', 'cbi-button-save', 'cbi-button-reset'].map((c) => elements(c)[0]) : [];
		check(footer.length === 3 && footer.every((b) => b && !isDisabled(b[2])), 'footer Save & Apply, Save, Reset enabled');
	}
	if (scenario === 'status-settings') {
		const before = log.settings_before || {};
		check(before.packet_tx === false && before.log_level === 'info' && before.disabled === false,
			`settings start from packet_tx unset (default off) and log_level info, editable (${JSON.stringify(before)})`);
		const on = log.settings_saved_on || {}, off = log.settings_saved_off || {};
		check(on.packet_tx === '1' && on.log_level === 'verbose', `ticked and saved: packet_tx 1, log_level verbose (${JSON.stringify(on)})`);
		check(off.packet_tx === '0', `unticked and saved: packet_tx written as 0, not dropped (${JSON.stringify(off)})`);
		check(log.uci_saves === 2 && log.uci_saved.every((c) => c === 'solowg'), `two saves of solowg only (${log.uci_saves}, ${JSON.stringify(log.uci_saved)})`);
		check(log.errors.length === 0 && log.denied.length === 0, `nothing denied (${JSON.stringify(log.denied)})`);
	}
	if (scenario.startsWith('status-reload')) {
		// Reload runs the init script through rpcd, never ubus `solowg reload`
		const notes = log.notifications || [];
		const calls = log.reload_calls || [];
		check(!log.calls.includes('solowg.reload'), 'ubus solowg reload never called');
		check(calls[0] === 'file.exec' && log.execs[0] === '/etc/init.d/solowg reload',
			`the click execs /etc/init.d/solowg reload (${JSON.stringify(calls)}, ${JSON.stringify(log.execs)})`);
		check(notes.length === 1, `one notification (${JSON.stringify(notes)})`);
		const note = notes[0] || {};
		if (scenario === 'status-reload-denied') {
			check(calls.length === 1, `nothing called after the refused exec (${JSON.stringify(calls)})`);
			check(/\berror\b/.test(note.class) && note.text === 'Reload failed: Permission denied',
				`refused by rpcd: error notification "Reload failed: Permission denied" (${JSON.stringify(note)})`);
		} else {
			// the status is read again once the script returned
			check(calls[1] === 'solowg.status', `status refreshed after the reload (${JSON.stringify(calls)})`);
			if (scenario === 'status-reload')
				check(/\binfo\b/.test(note.class) && note.text === 'Configuration reloaded: wg0',
					`nothing printed: info notification with the interfaces of the status (${JSON.stringify(note)})`);
			if (scenario === 'status-reload-problems') {
				check(/\bwarning\b/.test(note.class) && note.title === 'solowg reported problems while reloading',
					`printed lines: warning notification (${JSON.stringify(note)})`);
				check(JSON.stringify(note.items) === JSON.stringify([
					'solowg export: wg1: uci: I/O error; the daemon keeps a key in memory until it restarts',
					"wg0: peer 'Phone &lt;b&gt;Anna&lt;/b&gt;': allowed_ips '10.0.0.300/32' is not an address; peer skipped",
					'wg1: kept its previous configuration',
				]), `one item per non-empty line, as text (${JSON.stringify(note.items)})`);
			}
			if (scenario === 'status-reload-fail')
				check(/\berror\b/.test(note.class) && note.text === 'Reload failed: Command failed: Not found',
					`a failure code and no stdout: error notification with stderr (${JSON.stringify(note)})`);
		}
		// the grant is that one command line: rpcd refuses every other one
		const probes = log.exec_probes || {};
		const deniedAs = (re) => (k) => re.test(probes[k] || '');
		for (const k of ['/etc/init.d/solowg stop', '/etc/init.d/solowg restart', '/etc/init.d/solowg disable',
			'/etc/init.d/solowg reload now', '/etc/init.d/solowg', '/etc/init.d/solowg reload (with env)'])
			check(deniedAs(/^denied: Permission denied$/)(k), `exec ${k}: Permission denied (${probes[k]})`);
		check(deniedAs(/^denied: Resource not found$/)('/etc/init.d/solowg reload'), `a command with a space is no file (${probes['/etc/init.d/solowg reload']})`);
		// rpcd matches the canonical path
		const alias = probes['/etc/init.d/../init.d/solowg reload'];
		check(scenario === 'status-reload-denied' ? alias === 'denied: Permission denied' : alias === 'allowed',
			`exec /etc/init.d/../init.d/solowg reload: as the canonical path (${alias})`);
	}
	if (scenario === 'status-readonly') {
		check(log.nodespec && log.nodespec.satisfied && log.nodespec.readonly, `read-only user: page node satisfied and read-only (${JSON.stringify(log.nodespec)})`);
		check(elements('solowg-client-button').length === 0 && !html.includes('Client configuration'), 'no client configuration button');
		check(elements('cbi-button-reload').length === 0, 'no Reload button');
		check(elements('solowg-readonly-note').length === 1, 'read-only note shown');
		check(html.includes('Transmit path: UDP socket'), 'transmit path UDP socket when status has no packet_tx');
		check(polls >= 3, `status polled (${polls} calls)`);
		check(!(log.view_uci_loads || ['?']).some((c) => c.startsWith('network')), `the view never asked for network (${JSON.stringify(log.view_uci_loads)})`);
		check((log.view_uci_loads || []).includes('solowg'), 'the view loaded solowg for its settings');
		check(!(log.view_calls || ['?']).some((c) => /^solowg\.(genkey|genpsk|pubkey|reload)$|^file\./.test(c)), `the view called no write method (${JSON.stringify(log.view_calls)})`);
		const cb = /<input[^>]*data-option="packet_tx"[^>]*>/.exec(settingsMap), sel = /<select[^>]*data-option="log_level"[^>]*>/.exec(settingsMap);
		check(cb && isDisabled(cb[0]) && sel && isDisabled(sel[0]), 'settings shown but disabled');
		const footer = ['cbi-button-apply', 'cbi-button-save', 'cbi-button-reset'].map((c) => elements(c)[0]);
		check(footer.every((b) => b && isDisabled(b[2])), 'footer Save & Apply, Save, Reset disabled');
		const p = log.probes || {};
		check(p.client_dialog === 'not shown', `handleClientConfig called directly shows nothing (${p.client_dialog})`);
		check(p.footer_save === 'disabled' && p.footer_save_click_saved === false, 'clicking the disabled Save saves nothing');
		check(p.status === 'allowed', `ACL: ubus solowg status allowed (${p.status})`);
		check(p.uci_solowg === 'allowed', `ACL: uci solowg readable (${p.uci_solowg})`);
		check(/^denied: .*Permission denied/.test(p.uci_network || ''), `ACL: uci network denied (${p.uci_network})`);
		for (const m of ['genkey', 'genpsk', 'reload'])
			check(/^denied: .*Access denied/.test(p[m] || ''), `ACL: ubus solowg ${m} denied (${p[m]})`);
		// uhttpd refuses already: the read grant has no ubus `file exec`
		check(/^denied: .*file\/exec.*Access denied/.test(p.exec_reload || ''), `ACL: exec of /etc/init.d/solowg reload denied (${p.exec_reload})`);
		check(p.session_access_uci_solowg_write === false, 'ACL: session access uci solowg write is false');
		// refused by uhttpd already (no ubus uci set), else by rpcd (no uci solowg write)
		check(/^denied: .*(Access|Permission) denied/.test(p.uci_save_solowg || ''), `ACL: saving solowg denied (${p.uci_save_solowg})`);
	}
	if (!scenario.startsWith('status-client')) {
		// Outside the client dialog no key but a public one may reach the DOM.
		for (const [what, k] of Object.entries(secrets))
			check(!html.includes(k), `no ${what} in the DOM`);
		const b64 = [...new Set((html.match(/[A-Za-z0-9+/]{43}=/g) || []))];
		const unknown = b64.filter((k) => !publicKeys.has(k));
		check(unknown.length === 0, `every 44-character base64 key in the DOM is a public key (others: ${JSON.stringify(unknown)})`);
	}
	if (scenario === 'status') {
		check(polls >= 6, `status polled repeatedly (${polls} calls)`);
		// The phone's rx polyline must have several points after several polls.
		const row = html.split(`data-public-key="${keys.phone}"`)[1] || '';
		const pts = ((row.match(/class="solowg-graph-rx" points="([^"]*)"/) || [])[1] || '').trim().split(/\s+/);
		check(pts.length >= 5, `rx polyline of the phone has >= 5 points (got ${pts.length})`);
		check(new Set(pts.map((p) => p.split(',')[1])).size > 1, 'rx polyline is not flat (rates vary)');
	} else if (scenario.startsWith('status-client')) {
		check(log.calls.includes('solowg.genkey'), 'genkey called for a peer without a stored client key');
		check(html.includes('class="solowg-client-conf"'), 'client configuration text shown');
		check(/\[Interface\]\s*PrivateKey = N7PSIOm5iWAbde95IDxLXufnUWsJvml7AxokR4lLssA=/.test(html), 'fresh private key in the client config');
		check(html.includes('PublicKey = nfP77SbqNgHV3QADVX3hdYmOWSX+00QdYvuVM5oEUIU='), 'server public key in the client config');
		check(html.includes('Address = 192.168.50.0/24'), "client Address from the peer's allowed_ips");
		check(html.includes('solowg-fresh-pub') && html.includes('JtswlaTvA4J3gyEnHJ0CEWdeuzeZzB5lChAFx6Wzzc0='), 'new public key shown with the explanation');
		check(/<div class="solowg-qr"[^>]*><svg/.test(html), 'QR SVG in the modal');
		const qr = readQr();
		check(qr.ok, `the QR code in the modal reads back as the configuration shown, at level M (${qr.why})`);
		check(html.includes('solowg-download'), 'Download button');
		check(!html.includes('ddns-secret'), 'no DDNS password in the DOM');
		// The endpoint's default: DDNS name, else WAN address, else the browser's host
		const want = {
			'status-client': ['ddns', 'home.example.org:51820', 'From the dynamic DNS service home_v4.'],
			'status-client-wan': ['wan', '203.0.113.45:51820', 'The current IPv4 address of the WAN interface.'],
			'status-client-host': ['browser', '127.0.0.1:51820', 'The address this page was opened with'],
		}[scenario];
		const ep = /<input[^>]*class="[^"]*solowg-client-endpoint[^"]*"[^>]*>/.exec(html);
		const attr = (el, name) => el && (new RegExp(` ${name}="([^"]*)"`).exec(el[0]) || [])[1];
		check(attr(ep, 'data-source') === want[0] && attr(ep, 'value') === want[1],
			`endpoint default ${want[1]} from ${want[0]} (got ${attr(ep, 'value')} from ${attr(ep, 'data-source')})`);
		check(html.includes(`Endpoint = ${want[1]}`), `client config has Endpoint = ${want[1]}`);
		check((/class="cbi-value-description solowg-endpoint-source">([^<]*)</.exec(html) || [])[1]?.startsWith(want[2]), 'the endpoint\'s source is explained');
		const dns = /<input[^>]*class="[^"]*solowg-client-dns[^"]*"[^>]*>/.exec(html);
		check(attr(dns, 'value') === '192.168.1.1' && html.includes('DNS = 192.168.1.1'), `DNS defaults to the LAN address (got ${attr(dns, 'value')})`);
		if (scenario === 'status-client') {
			check(log.uci_loads.includes('ddns'), `ddns read (${JSON.stringify(log.uci_loads)})`);
		} else {
			check(log.uci_loads.includes('ddns denied'), `ddns not readable without luci-app-ddns's group (${JSON.stringify(log.uci_loads)})`);
		}
		if (scenario === 'status-client-host')
			check(log.denied.includes('network.interface.wan.status'), `wan status refused by the trimmed ACL (${JSON.stringify(log.denied)})`);
		else
			check(log.calls.includes('network.interface.wan.status') && !log.denied.includes('network.interface.wan.status'), 'wan status asked and allowed');
	}
}

if (scenario.startsWith('proto')) {
	check(html.includes('data-option="private_key"') && html.includes('data-option="_public_key"'), 'private and public key fields');
	for (const o of ['listen_port', 'addresses', 'mtu', 'fwmark', '_generate_key', '_import', 'nohostroute', 'tunlink', 'ip6prefix'])
		check(html.includes(`data-option="${o}"`), `interface option ${o}`);
	for (const o of ['disabled', 'description', 'public_key', 'preshared_key', '_generate_psk', 'allowed_ips',
		'route_allowed_ips', 'endpoint_host', 'endpoint_port', 'persistent_keepalive'])
		check(html.includes(`data-option="${o}"`), `peer option ${o}`);
	const ifname = log.iface || 'wg0';
	check(html.includes(`data-type="solowg_${ifname}"`), `peer grid of type solowg_${ifname}`);
	// the grid of kernel WireGuard's peer type is drawn only where there are such peers
	check(html.includes(`data-type="wireguard_${ifname}"`) === (ifname === 'wg1'), `wireguard_${ifname} grid ${ifname === 'wg1' ? 'shown' : 'absent'}`);
	// the advanced options sit on the advanced tab
	const advancedTab = (html.split('data-tab="advanced"')[1] || '').split('</fieldset>')[0];
	for (const o of ['nohostroute', 'tunlink', 'ip6prefix'])
		check(advancedTab.includes(`data-option="${o}"`), `${o} on the advanced tab`);
	check(log.i18n && log.package && log.package.every((p) => p === 'solowg'), 'getI18n/getPackageName/getOpkgPackage');
	check(log.calls.includes('solowg.pubkey'), 'public key derived through ubus pubkey');
	const rows = count(/class="tr cbi-section-table-row"/g);
	if (scenario === 'proto') check(rows === 3, `three peer rows from UCI (got ${rows})`);
	if (scenario === 'proto-genkey') check(log.calls.includes('solowg.genkey'), 'Generate calls ubus genkey');
	if (scenario === 'proto-advanced') {
		const before = log.advanced_before || {}, saved = log.advanced_saved || {};
		check(!('nohostroute' in before) && !('tunlink' in before) && !('ip6prefix' in before), 'wg0 starts without the advanced options');
		check(saved.nohostroute === '1', `nohostroute saved as 1 (${saved.nohostroute})`);
		check(saved.tunlink === 'wan', `tunlink saved as wan (${saved.tunlink})`);
		check(JSON.stringify(saved.ip6prefix) === JSON.stringify(['fd00:10::/48']), `ip6prefix saved as a list (${JSON.stringify(saved.ip6prefix)})`);
		check(saved.listen_port === '51820' && saved.private_key === before.private_key, 'other options unchanged');
		check(log.uci_saves >= 1 && log.uci_saved.every((c) => c === 'network'), `saved network (${JSON.stringify(log.uci_saved)})`);
	}
	if (scenario === 'proto-legacy') {
		check(log.legacy_row === true && log.legacy_rows_before === 1 && log.solowg_rows_before === 0,
			`the wireguard_wg1 peer is listed (rows: ${log.legacy_rows_before} wireguard_wg1, ${log.solowg_rows_before} solowg_wg1)`);
		const saved = log.legacy_saved || {};
		check(saved['.type'] === 'wireguard_wg1' && saved.description === 'Tablet (edited)' && saved.endpoint_port === '51999',
			`edit saved to the wireguard_wg1 section (${JSON.stringify(saved)})`);
		check(saved.public_key === keys.laptop && saved.endpoint_host === 'tablet.example.net' && JSON.stringify(saved.allowed_ips) === JSON.stringify(['10.1.0.2/32']),
			'the rest of the section unchanged');
		check(log.legacy_row_after_save === 'Tablet (edited)', 'the grid shows the saved description');
		const net = log.uci_after_import || {};
		const legacy = Object.values(net).filter((s) => s['.type'] === 'wireguard_wg1');
		const ours = Object.values(net).filter((s) => s['.type'] === 'solowg_wg1');
		check(legacy.length === 0, `import with "remove" deleted the wireguard_wg1 peer (left: ${legacy.length})`);
		check(ours.length === 2, `the file's two peers are solowg_wg1 sections (got ${ours.length})`);
		check(Object.values(net).filter((s) => s['.type'] === 'solowg_wg0').length === 3, "wg0's peers untouched");
		check(rows === 2, `two peer rows after the import (got ${rows})`);
		check(html.includes('No peers left from kernel WireGuard.'), 'the emptied wireguard_wg1 grid says so');
	}
	if (scenario === 'proto-import') {
		check(rows === 2, `import replaced the peers with the file's two (got ${rows})`);
		const net = log.uci_after_import || {};
		const peers = Object.values(net).filter((s) => s['.type'] === 'solowg_wg0');
		check(peers.length === 2, `two solowg_wg0 sections in UCI (got ${peers.length})`);
		const office = peers.find((p) => p.public_key === keys.office) || {};
		check(JSON.stringify(office.allowed_ips) === JSON.stringify(['10.9.0.3/32', '192.168.60.0/24']), 'multi-value allowed_ips kept');
		check(office.preshared_key === 'dtdXh7sM/y6lL8IIQvI8ZD5+FMlPUPAzaiQBxAyNJ70=', 'preshared key imported');
		const laptop = peers.find((p) => p.public_key === keys.laptop) || {};
		check(laptop.endpoint_host === '203.0.113.9' && String(laptop.endpoint_port) === '51820', 'endpoint split into host and port');
		check(net.wg0 && net.wg0.listen_port === '51999' && net.wg0.mtu === '1400', 'interface listen_port and mtu from the file');
		check(net.wg0 && JSON.stringify(net.wg0.addresses) === JSON.stringify(['10.9.0.1/24', 'fd09::1/64']), 'interface addresses from the file');
		check(net.wg0 && net.wg0.private_key === 'N7PSIOm5iWAbde95IDxLXufnUWsJvml7AxokR4lLssA=', 'private key from the file');
	}
}

// The modal's QR code as the browser holds it (the SVG from uqr.renderSVG,
// imported by the view), decoded by the strict jsQR and compared with the
// configuration text in the same modal.
function readQr() {
	const unescape = (t) => t.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
	const svg = /<div class="solowg-qr"[^>]*>(<svg[^>]*>)([\s\S]*?)<\/svg>/.exec(html);
	const pre = /<pre class="solowg-client-conf"[^>]*>([\s\S]*?)<\/pre>/.exec(html);
	if (!svg || !pre)
		return { ok: false, why: 'SVG or configuration text missing' };
	const attr = (name) => (new RegExp(` ${name}="([^"]*)"`).exec(svg[1]) || [])[1];
	const width = +attr('width'), d = (/<path [^>]*d="([^"]*)"/.exec(svg[2]) || [])[1];
	if (attr('viewBox') !== `0 0 ${width} ${attr('height')}`)
		return { ok: false, why: `viewBox "${attr('viewBox')}" for ${width} x ${attr('height')} px` };
	if (attr('shape-rendering') !== 'crispEdges' || !/width:\s*100%/.test(attr('style') || ''))
		return { ok: false, why: 'not scaled to the box with crisp edges' };
	if (!d)
		return { ok: false, why: 'no path' };
	try {
		const grid = gridFromPath(d, width, +/^M\d+,\d+h(\d+)/.exec(d)[1]);
		const { strict } = decodeBoth(grid);
		const text = unescape(pre[1]);
		if (!strict)
			return { ok: false, why: 'strict jsQR could not read it' };
		if (strict.data !== text)
			return { ok: false, why: `read ${JSON.stringify(strict.data.slice(0, 60))}...` };
		if (strict.level !== 'M')
			return { ok: false, why: `level ${strict.level}` };
		return { ok: true, why: `version ${strict.version}, ${text.length} bytes` };
	}
	catch (e) {
		return { ok: false, why: e.message };
	}
}

if (problems.length) {
	for (const p of problems) console.error(`  ${scenario}: ${p}`);
	process.exit(1);
}
