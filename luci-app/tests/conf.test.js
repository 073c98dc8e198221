'use strict';
// Tests of htdocs/luci-static/resources/solowg/conf.js, loaded as shipped.

const test = require('node:test');
const assert = require('node:assert/strict');
const { load, source } = require('./load.js');

const conf = load('solowg/conf.js');

// Deterministic, well-formed keys (base64 of 32 bytes).
function key(seed) {
	return Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + seed * 101 + 7) & 255)).toString('base64');
}

const K = {
	serverPriv: key(1), p1: key(2), p2: key(3), p3: key(4), p4: key(5), psk1: key(6), psk3: key(7),
	clientPriv: key(8), serverPub: key(9)
};

const SERVER_CONF = `# solowg server, made by hand
[Interface]
PrivateKey = ${K.serverPriv}
Address = 10.0.0.1/24, fd00:abcd::1/64
ListenPort = 51820
DNS = 10.0.0.1,fd00:abcd::1
MTU = 1420
FwMark = 0x1f
# DNS = 9.9.9.9

# laptop
[Peer]
PublicKey = ${K.p1}
PresharedKey = ${K.psk1}
AllowedIPs = 10.0.0.2/32, fd00:abcd::2/128
Endpoint = [2001:db8::1]:51821
PersistentKeepalive = 25

[Peer]
# Name = Phone of Bob
publickey = ${K.p2}
allowedips = 10.0.0.3/32
ALLOWEDIPS = 192.168.50.0/24   # the home LAN behind the phone?
endpoint = vpn.example.net:4500
PersistentKeepalive = off

# Description: office router
[peer]
PublicKey = ${K.p3}
PresharedKey = ${K.psk3}
AllowedIPs = 10.0.0.4/32,10.10.0.0/16
Endpoint = 198.51.100.7:51820

[Peer]
PublicKey = ${K.p4}
AllowedIPs = 10.0.0.5/32
PersistentKeepalive = 0
`;

test('parseConf: a server config with four peers keeps every peer and field', () => {
	const p = conf.parseConf(SERVER_CONF);
	assert.deepEqual(p.errors, []);
	assert.deepEqual(p.warnings, []);
	assert.deepEqual(p.interface, {
		privateKey: K.serverPriv,
		addresses: [ '10.0.0.1/24', 'fd00:abcd::1/64' ],
		listenPort: 51820,
		dns: [ '10.0.0.1', 'fd00:abcd::1' ],
		mtu: 1420,
		fwmark: '0x1f'
	});
	assert.equal(p.peers.length, 4);
	assert.deepEqual(p.peers[0], {
		publicKey: K.p1, presharedKey: K.psk1,
		allowedIPs: [ '10.0.0.2/32', 'fd00:abcd::2/128' ],
		endpointHost: '2001:db8::1', endpointPort: 51821,
		persistentKeepalive: 25, description: 'laptop'
	});
	assert.deepEqual(p.peers[1], {
		publicKey: K.p2, presharedKey: null,
		allowedIPs: [ '10.0.0.3/32', '192.168.50.0/24' ],
		endpointHost: 'vpn.example.net', endpointPort: 4500,
		persistentKeepalive: null, description: 'Phone of Bob'
	});
	assert.deepEqual(p.peers[2], {
		publicKey: K.p3, presharedKey: K.psk3,
		allowedIPs: [ '10.0.0.4/32', '10.10.0.0/16' ],
		endpointHost: '198.51.100.7', endpointPort: 51820,
		persistentKeepalive: null, description: 'office router'
	});
	assert.deepEqual(p.peers[3], {
		publicKey: K.p4, presharedKey: null, allowedIPs: [ '10.0.0.5/32' ],
		endpointHost: null, endpointPort: null, persistentKeepalive: null, description: null
	});
});

test('parseConf: CRLF, CR and a byte order mark give the same result as LF', () => {
	const lf = conf.parseConf(SERVER_CONF);
	assert.deepEqual(conf.parseConf(SERVER_CONF.replace(/\n/g, '\r\n')), lf);
	assert.deepEqual(conf.parseConf('\uFEFF' + SERVER_CONF.replace(/\n/g, '\r\n')), lf);
	assert.deepEqual(conf.parseConf(SERVER_CONF.replace(/\n/g, '\r')), lf);
});

test('parseConf: descriptions from comments', () => {
	const text = [
		'[Interface]',
		`PrivateKey = ${K.serverPriv}`,
		'# Name = first',          // named, before [Peer] (inside [Interface])
		'',
		'[Peer]',
		`PublicKey = ${K.p1}`,
		'',
		'# Name = second',         // named at the end of a peer section: for the next peer
		'[Peer]',
		`PublicKey = ${K.p2}`,
		'# just a note',           // plain comment inside a peer: not a name
		'AllowedIPs = 10.0.0.3/32',
		'',
		'# a heading',             // plain comment followed by a blank line: not a name
		'',
		'[Peer]',
		`PublicKey = ${K.p3}`,
		'# PersistentKeepalive = 25',  // commented-out setting before [Peer]: not a name
		'[Peer]',
		`PublicKey = ${K.p4}`,
		'# Name = fourth',         // named after the last key: goes to the next [Peer] ...
		'# kids tablet',
		'[Peer]',
		`PublicKey = ${K.serverPub}`,
		'#Name=inner',             // ... where a name inside overrides it
		'AllowedIPs = 10.0.0.9/32',
	].join('\n');
	const p = conf.parseConf(text);
	assert.deepEqual(p.errors, []);
	assert.deepEqual(p.peers.map((x) => x.description), [ 'first', 'second', null, null, 'inner' ]);
	// '# Name = fourth' right before '# kids tablet' and [Peer]: the named comment wins
	const q = conf.parseConf(`[Peer]\nPublicKey = ${K.p1}\n# kids tablet\n[Peer]\nPublicKey = ${K.p2}\n`);
	assert.deepEqual(q.peers.map((x) => x.description), [ null, 'kids tablet' ]);
	const r = conf.parseConf(`[Peer]\nPublicKey = ${K.p1}\n# Name = last\n`);
	assert.equal(r.peers[0].description, 'last');
});

test('parseConf: errors carry their line numbers, and parsing goes on', () => {
	const text = [
		'ListenPort = 1',                          // 1: outside a section
		'[Interface]',                             // 2
		'PrivateKey = abc',                        // 3: bad key
		'ListenPort = 70000',                      // 4: bad port
		'MTU = 20',                                // 5: bad MTU
		'Colour = blue',                           // 6: unknown key
		'this is no setting',                      // 7: no '='
		'PostUp = iptables -A FORWARD',            // 8: warning only
		'Address = 10.0.0.300/24',                 // 9: bad address
		'[Peer]',                                  // 10: no PublicKey
		'Endpoint = 2001:db8::1:51820',            // 11: bare IPv6
		'AllowedIPs = 10.0.0.0/33',                // 12: bad prefix
		'PersistentKeepalive = soon',              // 13: bad number
		'[Peer]',                                  // 14
		`PublicKey = ${K.p1}`,                     // 15
		'Endpoint = host.example',                 // 16: no port
		'PublicKey = ' + K.p1.slice(0, 42) + 'B=', // 17: not canonical, and given twice
		'[Wat]',                                   // 18: unknown section
		'Foo = bar',                               // 19: ignored within it
		'[Interface]',                             // 20: second [Interface]
		'FwMark = lots',                           // 21
	].join('\r\n');
	const p = conf.parseConf(text);
	const lines = p.errors.map((e) => +/^line (\d+): /.exec(e)[1]);
	assert.deepEqual(lines, [ 1, 3, 4, 5, 6, 7, 9, 11, 12, 13, 10, 16, 17, 18, 20, 21 ]);
	assert.match(p.errors[0], /^line 1: ListenPort outside of a section$/);
	assert.match(p.errors[7], /IPv6 as \[address\]:port/);
	assert.match(p.errors[10], /^line 10: \[Peer\] without PublicKey$/);
	assert.deepEqual(p.warnings, [
		'line 8: PostUp is not used by solowg and was ignored',
		'line 17: PublicKey given twice, the last one is used'
	]);
	assert.equal(p.peers.length, 2);
	assert.equal(p.peers[0].allowedIPs[0], '10.0.0.0/33');   // kept as written, reported
});

test('parseConf: empty and peer-only texts', () => {
	const e = conf.parseConf('');
	assert.deepEqual(e.peers, []);
	assert.deepEqual(e.errors, []);
	assert.equal(e.interface.privateKey, null);
	const p = conf.parseConf(`[Peer]\nPublicKey=${K.p1}\nAllowedIPs=0.0.0.0/0,::/0\nEndpoint=[::1]:1`);
	assert.deepEqual(p.errors, []);
	assert.deepEqual(p.peers[0].allowedIPs, [ '0.0.0.0/0', '::/0' ]);
	assert.equal(p.peers[0].endpointHost, '::1');
	assert.equal(p.peers[0].endpointPort, 1);
});

test('toConf: text, and parse(toConf(x)) gives x back', () => {
	const p = conf.parseConf(SERVER_CONF);
	const text = conf.toConf(p);
	assert.equal(text, `[Interface]
PrivateKey = ${K.serverPriv}
Address = 10.0.0.1/24, fd00:abcd::1/64
ListenPort = 51820
DNS = 10.0.0.1, fd00:abcd::1
MTU = 1420
FwMark = 0x1f

[Peer]
# Name = laptop
PublicKey = ${K.p1}
PresharedKey = ${K.psk1}
AllowedIPs = 10.0.0.2/32, fd00:abcd::2/128
Endpoint = [2001:db8::1]:51821
PersistentKeepalive = 25

[Peer]
# Name = Phone of Bob
PublicKey = ${K.p2}
AllowedIPs = 10.0.0.3/32, 192.168.50.0/24
Endpoint = vpn.example.net:4500

[Peer]
# Name = office router
PublicKey = ${K.p3}
PresharedKey = ${K.psk3}
AllowedIPs = 10.0.0.4/32, 10.10.0.0/16
Endpoint = 198.51.100.7:51820

[Peer]
PublicKey = ${K.p4}
AllowedIPs = 10.0.0.5/32
`);
	const again = conf.parseConf(text);
	assert.deepEqual(again, p);
	assert.equal(conf.toConf(again), text);
	// CRLF version of the export reads the same
	assert.deepEqual(conf.parseConf(text.replace(/\n/g, '\r\n')), p);
	// a description with a line break stays on its comment line
	const q = conf.parseConf(conf.toConf({ interface: {}, peers: [ { publicKey: K.p1, description: 'a\nb' } ] }));
	assert.equal(q.peers[0].description, 'a b');
	assert.equal(conf.toConf({ peers: [] }), '');
});

test('clientConfig: the other side of a peer', () => {
	const text = conf.clientConfig({
		privateKey: K.clientPriv,
		addresses: [ '10.0.0.2/32', 'fd00:abcd::2/128' ],
		dns: [ '10.0.0.1' ],
		serverPublicKey: K.serverPub,
		presharedKey: K.psk1,
		endpoint: 'vpn.example.net:51820',
		allowedIPs: [ '0.0.0.0/0', '::/0' ],
		persistentKeepalive: 25
	});
	assert.equal(text, `[Interface]
PrivateKey = ${K.clientPriv}
Address = 10.0.0.2/32, fd00:abcd::2/128
DNS = 10.0.0.1

[Peer]
PublicKey = ${K.serverPub}
PresharedKey = ${K.psk1}
AllowedIPs = 0.0.0.0/0, ::/0
Endpoint = vpn.example.net:51820
PersistentKeepalive = 25
`);
	const p = conf.parseConf(text);
	assert.deepEqual(p.errors, []);
	assert.equal(p.interface.privateKey, K.clientPriv);
	assert.equal(p.peers.length, 1);
	assert.equal(p.peers[0].publicKey, K.serverPub);

	// endpoint as { host, port } with IPv6, default AllowedIPs, no PSK, no keepalive
	const t2 = conf.clientConfig({
		privateKey: K.clientPriv, addresses: '10.0.0.3/32', serverPublicKey: K.serverPub,
		endpoint: { host: '2001:db8::7', port: 443 }, persistentKeepalive: 0
	});
	assert.equal(t2, `[Interface]
PrivateKey = ${K.clientPriv}
Address = 10.0.0.3/32

[Peer]
PublicKey = ${K.serverPub}
AllowedIPs = 0.0.0.0/0, ::/0
Endpoint = [2001:db8::7]:443
`);
	assert.deepEqual(conf.parseConf(t2).errors, []);
	assert.equal(conf.parseConf(t2).peers[0].endpointHost, '2001:db8::7');
});

const UCI_IFACE = {
	'.name': 'wg0', '.type': 'interface', proto: 'solowg',
	private_key: K.serverPriv, listen_port: '51820',
	addresses: [ '10.0.0.1/24', 'fd00:abcd::1/64' ], mtu: '1420', fwmark: '0x1f'
};

const UCI_PEERS = [
	{ public_key: K.p1, preshared_key: K.psk1, allowed_ips: [ '10.0.0.2/32', 'fd00:abcd::2/128' ],
	  endpoint_host: '2001:db8::1', endpoint_port: '51821', persistent_keepalive: '25',
	  description: 'laptop', route_allowed_ips: '1' },
	{ public_key: K.p2, allowed_ips: [ '10.0.0.3/32', '192.168.50.0/24' ],
	  endpoint_host: 'vpn.example.net', endpoint_port: '4500', description: 'Phone of Bob',
	  route_allowed_ips: '1' },
	{ public_key: K.p3, preshared_key: K.psk3, allowed_ips: [ '10.0.0.4/32', '10.10.0.0/16' ],
	  endpoint_host: '198.51.100.7', endpoint_port: '51820', description: 'office router',
	  route_allowed_ips: '1' },
	{ public_key: K.p4, allowed_ips: [ '10.0.0.5/32' ], route_allowed_ips: '1' }
];

function stripMeta(s) {
	const o = {};
	for (const k of Object.keys(s))
		if (k.charAt(0) !== '.' && k !== 'proto')
			o[k] = s[k];
	return o;
}

test('confToUci: every peer becomes a section with route_allowed_ips', () => {
	const u = conf.confToUci(conf.parseConf(SERVER_CONF));
	assert.deepEqual(u.iface, Object.assign(stripMeta(UCI_IFACE), { dns: [ '10.0.0.1', 'fd00:abcd::1' ] }));
	assert.deepEqual(u.peers, UCI_PEERS);
});

test('UCI export then import gives back the same UCI (multi-peer)', () => {
	const text = conf.toConf(conf.uciToConf(UCI_IFACE, UCI_PEERS));
	const back = conf.confToUci(conf.parseConf(text));
	assert.deepEqual(conf.parseConf(text).errors, []);
	assert.deepEqual(back.iface, stripMeta(UCI_IFACE));
	assert.deepEqual(back.peers, UCI_PEERS);

	// a second round is stable too
	const text2 = conf.toConf(conf.uciToConf(back.iface, back.peers));
	assert.equal(text2, text);

	// a minimal interface and one peer
	const mini = { iface: { private_key: K.serverPriv }, peers: [ { public_key: K.p1, route_allowed_ips: '1' } ] };
	assert.deepEqual(conf.confToUci(conf.parseConf(conf.toConf(conf.uciToConf(mini.iface, mini.peers)))), mini);

	// import then export then import: the conf side is stable as well
	const parsed = conf.parseConf(SERVER_CONF);
	const u1 = conf.confToUci(parsed);
	const u2 = conf.confToUci(conf.parseConf(conf.toConf(conf.uciToConf(u1.iface, u1.peers))));
	assert.deepEqual(u2, u1);
});

test('uciToConf: lists as strings, defaults, disabled peers, placeholder keys', () => {
	const p = conf.uciToConf(
		{ private_key: 'generate', addresses: '10.0.0.1/24 fd00::1/64', listen_port: '', fwmark: 'off' },
		[
			{ public_key: K.p1, allowed_ips: '10.0.0.2/32 10.0.0.3/32', endpoint_host: 'h.example' },
			{ public_key: K.p2, disabled: '1' },
			{ public_key: K.p3, persistent_keepalive: '0', allowed_ips: [ '10.0.0.4/32, 10.0.0.5/32' ] }
		]);
	assert.equal(p.interface.privateKey, null);
	assert.deepEqual(p.interface.addresses, [ '10.0.0.1/24', 'fd00::1/64' ]);
	assert.equal(p.interface.listenPort, null);
	assert.equal(p.interface.fwmark, null);
	assert.equal(p.peers.length, 2);
	assert.deepEqual(p.peers[0].allowedIPs, [ '10.0.0.2/32', '10.0.0.3/32' ]);
	assert.equal(p.peers[0].endpointPort, 51820);      // the UCI default
	assert.equal(p.peers[1].persistentKeepalive, null);
	assert.deepEqual(p.peers[1].allowedIPs, [ '10.0.0.4/32', '10.0.0.5/32' ]);
	assert.equal(conf.uciToConf({}, [ { public_key: K.p2, disabled: '1' } ], { includeDisabled: true }).peers.length, 1);
	// the default port becomes explicit on the way back
	assert.equal(conf.confToUci(p).peers[0].endpoint_port, '51820');
});

test('formatAge, formatHandshake and isOnline', () => {
	const cases = [
		[ null, 'never' ], [ undefined, 'never' ], [ -1, 'never' ], [ NaN, 'never' ],
		[ 0, '0 s ago' ], [ 34, '34 s ago' ], [ 59, '59 s ago' ], [ 60, '1 min ago' ],
		[ 303, '5 min 3 s ago' ], [ 3599, '59 min 59 s ago' ], [ 3600, '1 h ago' ],
		[ 7500, '2 h 5 min ago' ], [ 7259, '2 h ago' ], [ 86399, '23 h 59 min ago' ],
		[ 86400, '1 d ago' ], [ 3 * 86400 + 5000, '3 d ago' ]
	];
	for (const [ s, want ] of cases)
		assert.equal(conf.formatAge(s), want, `formatAge(${s})`);

	const now = 1700000000;
	assert.equal(conf.formatHandshake(0, now), 'never');
	assert.equal(conf.formatHandshake(now - 34, now), '34 s ago');
	assert.equal(conf.formatHandshake(now + 5, now), '0 s ago');   // clock skew
	assert.equal(conf.handshakeAge(0, now), null);
	assert.equal(conf.handshakeAge(now - 10, now), 10);

	assert.equal(conf.isOnline(0, now), false);
	assert.equal(conf.isOnline(now - 1, now), true);
	assert.equal(conf.isOnline(now - 179, now), true);
	assert.equal(conf.isOnline(now - 180, now), false);
	assert.equal(conf.isOnline(now - 5000, now), false);
	assert.equal(conf.isOnline(Math.floor(Date.now() / 1000) - 2), true);   // now defaults to the clock
});

test('peerState: online, stale, never connected', () => {
	const now = 1764500000;
	assert.equal(conf.peerState(now - 34, now), 'online');
	assert.equal(conf.peerState(now - 179, now), 'online');
	assert.equal(conf.peerState(now - 180, now), 'stale');
	assert.equal(conf.peerState(now - 900, now), 'stale');
	// latest_handshake 0: the peer never completed a handshake, which is no "stale"
	assert.equal(conf.peerState(0, now), 'never');
	assert.equal(conf.peerState(null, now), 'never');
	assert.equal(conf.peerState(undefined, now), 'never');
	// a clock behind the daemon's: age 0, online
	assert.equal(conf.peerState(now + 5, now), 'online');
});

// DropReason::name() of the daemon, read from its source when the checkout has it.
const fs = require('node:fs');
const path = require('node:path');
const dropReasonRs = path.resolve(__dirname, '../../src/proto/device/drop_reason.rs');

test('dropReasonText: a short text for every drop counter the daemon reports', { skip: fs.existsSync(dropReasonRs) ? false : `${dropReasonRs} not in this checkout` }, () => {
	const src = fs.readFileSync(dropReasonRs, 'utf8');
	const body = (/pub fn name\(self\) -> &'static str \{([\s\S]*?)\n    \}/.exec(src) || [])[1];
	assert.ok(body, 'DropReason::name found in src/proto/device/drop_reason.rs');
	const names = [...body.matchAll(/DropReason::\w+ => "([a-z0-9_]+)"/g)].map((m) => m[1]);
	const all = (/pub const ALL: \[DropReason; (\d+)\]/.exec(src) || [])[1];
	assert.equal(names.length, +all, `every reason of DropReason::ALL has a name (${names.length} of ${all})`);
	assert.deepEqual(Object.keys(conf.dropReasons()).sort(), names.slice().sort(), 'the page knows exactly the daemon\'s reasons');
	const texts = new Set();
	for (const n of names) {
		const t = conf.dropReasonText(n);
		assert.notEqual(t, n, `${n} has a text`);
		assert.ok(t.length <= 45 && !/_/.test(t), `${n}: short human text (${t})`);
		assert.ok(!texts.has(t), `${n}: text not shared with another reason (${t})`);
		texts.add(t);
	}
});

test('dropReasonText: unknown names unchanged, texts translated', () => {
	assert.equal(conf.dropReasonText('unknown_index'), 'No matching session');
	assert.equal(conf.dropReasonText('some_future_reason'), 'some_future_reason');
	assert.equal(conf.dropReasonText('toString'), 'toString');
	const marked = load('solowg/conf.js', (s) => '«' + s + '»');
	assert.equal(marked.dropReasonText('no_route'), '«No peer for the destination»');
});

test('clientDefaults: endpoint from DDNS, else WAN, else the browser; DNS from the LAN', () => {
	const ddns = [
		{ '.name': 'global', '.type': 'ddns', upd_privateip: '0' },
		{ '.name': 'v6', '.type': 'service', enabled: '1', use_ipv6: '1', lookup_host: 'home6.example.org' },
		{ '.name': 'off', '.type': 'service', enabled: '0', lookup_host: 'old.example.org' },
		{ '.name': 'v4', '.type': 'service', enabled: '1', use_ipv6: '0', lookup_host: ' home.example.org ' },
	];
	const wan = { up: true, 'ipv4-address': [ { address: '203.0.113.45', mask: 24 } ] };
	const lan = { '.name': 'lan', proto: 'static', ipaddr: '192.168.1.1', netmask: '255.255.255.0' };
	const base = { ddns, wanStatus: wan, lan, browserHost: '192.168.1.1', listenPort: 51820 };

	// 1. an enabled DDNS service, IPv4 first
	assert.deepEqual(conf.clientDefaults(base),
		{ endpoint: 'home.example.org:51820', host: 'home.example.org', source: 'ddns', ddnsService: 'v4', dns: ['192.168.1.1'] });
	// only an IPv6 service: that one
	assert.equal(conf.clientDefaults({ ...base, ddns: ddns.slice(0, 3) }).endpoint, 'home6.example.org:51820');
	// disabled, without lookup_host or not a host name: skipped
	for (const d of [ [ ddns[2] ], [ { '.type': 'service', enabled: '1' } ], [ { '.type': 'service', enabled: '1', lookup_host: 'bad name;' } ], [], null, undefined ])
		assert.equal(conf.clientDefaults({ ...base, ddns: d }).source, 'wan', JSON.stringify(d));
	// uci sections as an object keyed by name work too
	assert.equal(conf.clientDefaults({ ...base, ddns: { v4: ddns[3] } }).host, 'home.example.org');

	// 2. the WAN's IPv4 address (ddns unreadable: null)
	assert.deepEqual(conf.clientDefaults({ ...base, ddns: null }),
		{ endpoint: '203.0.113.45:51820', host: '203.0.113.45', source: 'wan', ddnsService: null, dns: ['192.168.1.1'] });
	// 3. WAN refused (null), down (no address) or odd: the browser's host
	for (const w of [ null, {}, { up: false, 'ipv4-address': [] }, { 'ipv4-address': [ { address: 'x' } ] } ])
		assert.deepEqual(conf.clientDefaults({ ...base, ddns: null, wanStatus: w }),
			{ endpoint: '192.168.1.1:51820', host: '192.168.1.1', source: 'browser', ddnsService: null, dns: ['192.168.1.1'] }, JSON.stringify(w));
	// the browser's IPv6 host (location.hostname keeps the brackets) and names
	assert.equal(conf.clientDefaults({ browserHost: '[fd00::1]', listenPort: 51820 }).endpoint, '[fd00::1]:51820');
	assert.equal(conf.clientDefaults({ browserHost: 'router.lan', listenPort: '51821' }).endpoint, 'router.lan:51821');
	assert.deepEqual(conf.clientDefaults({ browserHost: '', listenPort: 51820 }),
		{ endpoint: '', host: null, source: null, ddnsService: null, dns: [] });
	// no fixed listen port: no endpoint, whatever the host
	assert.equal(conf.clientDefaults({ ...base, listenPort: 0 }).endpoint, '');
	assert.equal(conf.clientDefaults({ ...base, listenPort: null }).endpoint, '');

	// DNS: the LAN's IPv4 address in either UCI form, nothing without one
	assert.deepEqual(conf.clientDefaults({ lan: { ipaddr: [ '192.168.8.1/24', 'fd00::1/64' ] } }).dns, ['192.168.8.1']);
	assert.deepEqual(conf.clientDefaults({ lan: { ipaddr: '10.1.2.3/16' } }).dns, ['10.1.2.3']);
	assert.deepEqual(conf.clientDefaults({ lan: { proto: 'dhcp' } }).dns, []);
	assert.deepEqual(conf.clientDefaults({ lan: null }).dns, []);
	assert.deepEqual(conf.clientDefaults().dns, []);
});

test('validIp6Prefix and validHostname', () => {
	for (const p of ['fd00:10::/48', '2001:db8::/32', '::/0', 'fd00::1/128'])
		assert.equal(conf.validIp6Prefix(p), true, p);
	for (const p of ['fd00:10::', '10.0.0.0/8', 'fd00::/129', 'fd00::/048', 'x::/48', ''])
		assert.equal(conf.validIp6Prefix(p), false, p);
	for (const h of ['home.example.org', 'a', 'my-router.dyndns.org.', 'x1.y2'])
		assert.equal(conf.validHostname(h), true, h);
	for (const h of ['', '-a.example', 'a..b', 'bad name', 'a_b.example', null])
		assert.equal(conf.validHostname(h), false, String(h));
});

test('formatBytes and formatRate', () => {
	assert.equal(conf.formatBytes(0), '0 B');
	assert.equal(conf.formatBytes(1023), '1023 B');
	assert.equal(conf.formatBytes(1024), '1.0 KiB');
	assert.equal(conf.formatBytes(1536), '1.5 KiB');
	assert.equal(conf.formatBytes(12.3 * 1048576), '12.3 MiB');
	assert.equal(conf.formatBytes(1073741824), '1.0 GiB');
	assert.equal(conf.formatBytes(5 * 1099511627776), '5.0 TiB');
	assert.equal(conf.formatBytes(-3), '0 B');
	assert.equal(conf.formatBytes('2048'), '2.0 KiB');

	assert.equal(conf.formatRate(0), '0 bit/s');
	assert.equal(conf.formatRate(100), '800 bit/s');
	assert.equal(conf.formatRate(1562.5), '12.5 kbit/s');
	assert.equal(conf.formatRate(150000), '1.2 Mbit/s');
	assert.equal(conf.formatRate(125e6), '1.0 Gbit/s');
	assert.equal(conf.formatRate(-5), '0 bit/s');
	assert.equal(conf.formatRate(NaN), '0 bit/s');
});

test('validKey, validCidr and endpoints', () => {
	assert.equal(conf.validKey(K.p1), true);
	assert.equal(conf.validKey(Buffer.alloc(32).toString('base64')), true);
	assert.equal(conf.validKey(Buffer.alloc(32, 255).toString('base64')), true);
	assert.equal(conf.validKey(Buffer.alloc(31).toString('base64')), false);
	assert.equal(conf.validKey(Buffer.alloc(33).toString('base64')), false);
	assert.equal(conf.validKey(K.p1.slice(0, 42) + 'B='), false);   // 2 stray bits
	assert.equal(conf.validKey(K.p1.slice(0, 43)), false);
	assert.equal(conf.validKey(K.p1.replace(/.$/, '')), false);
	assert.equal(conf.validKey('!' + K.p1.slice(1)), false);
	assert.equal(conf.validKey(null), false);
	assert.equal(conf.validKey(' ' + K.p1), false);

	for (const good of [ '10.0.0.1/24', '0.0.0.0/0', '::/0', 'fd00::1/64', '10.0.0.2', '::ffff:10.0.0.1/128', '1:2:3:4:5:6:7:8/128' ])
		assert.equal(conf.validCidr(good), true, good);
	for (const bad of [ '10.0.0.256/24', '10.0.0.1/33', 'fd00::1/129', 'fd00:::1', '1:2:3:4:5:6:7:8:9', 'host', '', '01.2.3.4' ])
		assert.equal(conf.validCidr(bad), false, bad);

	assert.deepEqual(conf.splitEndpoint('[fe80::1]:51820'), { host: 'fe80::1', port: 51820 });
	assert.deepEqual(conf.splitEndpoint('a.example:1'), { host: 'a.example', port: 1 });
	assert.equal(conf.splitEndpoint('a.example'), null);
	assert.equal(conf.splitEndpoint('a.example:0'), null);
	assert.equal(conf.splitEndpoint('a.example:65536'), null);
	assert.equal(conf.splitEndpoint('[nohost]:1'), null);
	assert.equal(conf.formatEndpoint('fe80::1', 5), '[fe80::1]:5');
	assert.equal(conf.formatEndpoint('h.example'), 'h.example:51820');
});

test('user-visible strings go through _()', () => {
	const marked = load('solowg/conf.js', (s) => '«' + s + '»');
	assert.equal(marked.formatAge(null), '«never»');
	assert.equal(marked.formatAge(303), '«5 min 3 s ago»');
	assert.equal(marked.formatBytes(1536), '«1.5 KiB»');
	assert.equal(marked.formatRate(150000), '«1.2 Mbit/s»');
	const p = marked.parseConf('[Peer]\nFoo = 1\n');
	assert.match(p.errors[0], /^«line 2: «unknown key "Foo" in \[Peer\]»»$/);
});

test('module form: LuCI header and baseclass.extend return', () => {
	for (const f of [ 'solowg/conf.js' ]) {
		const src = source(f);
		assert.ok(src.startsWith("'use strict';\n'require baseclass';\n"), f);
		assert.match(src, /\nreturn baseclass\.extend\(\{[\s\S]*\}\);\n$/, f);
		// only require statements and 'use strict' may come before code (LuCI's scanner)
		assert.equal((src.match(/^'require [^']+';$/mg) || []).length, 1, f);
	}
});
