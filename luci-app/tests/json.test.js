// node --test luci-app/tests/json.test.js
//
// The menu and ACL files are valid JSON shaped as LuCI/rpcd read them; every
// ubus method the pages declare (rpc.declare({object, method})) is granted by
// the ACL, the ACL grants exactly those, and each one exists in the real
// daemon: the test starts ubusd (cargo install ubusd) and
// `solowg --uci --config-dir EMPTY` on a private socket and reads
// `ubus-client list solowg`. Without those binaries that part is skipped,
// unless SOLOWG_REQUIRE_UBUS=1 (CI), which makes it fail instead.
// The command lines the pages run with fs.exec are granted in the ACL's file
// scope exactly, and nothing else is. Also: po/templates/solowg.pot is what
// tools/gen-pot.js generates now; a read-only session, built from the ACL by
// the rules rpcd applies (luci-standin/acl-model.js, a stand-in of rpcd and
// the dispatcher), reaches status and settings but no key and runs nothing,
// while a writer reaches both and may run the service's reload only.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');

const app = path.resolve(__dirname, '..');
const repo = path.resolve(app, '..');
const readJson = (p) => JSON.parse(fs.readFileSync(path.join(app, p), 'utf8'));
const menu = readJson('root/usr/share/luci/menu.d/luci-app-solowg.json');
const acl = readJson('root/usr/share/rpcd/acl.d/luci-app-solowg.json');
const benchAcl = readJson('root/usr/share/rpcd/acl.d/luci-app-solowg-bench.json');
// every group of the package's acl.d files, by name
const aclGroups = { ...acl, ...benchAcl };
const BENCH = '/usr/sbin/solowg bench --detach --state-file /var/run/solowg-bench.json --json';
const BENCH_STATE = '/var/run/solowg-bench.json';
const benchLines = ['5', '10', '30'].flatMap((n) => [`${BENCH} --seconds ${n}`, `${BENCH} --seconds ${n} --impls solowg,solowg`]);
const aclModel = require('./luci-standin/acl-model.js');

function jsFiles(dir, out = []) {
	for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
		const p = path.join(dir, e.name);
		if (e.isDirectory()) jsFiles(p, out);
		else if (e.name.endsWith('.js')) out.push(p);
	}
	return out;
}

// { 'solowg.status': ['view/solowg/status.js', ...], ... }
function declaredMethods() {
	const found = {};
	for (const file of jsFiles(path.join(app, 'htdocs'))) {
		const src = fs.readFileSync(file, 'utf8');
		for (const m of src.matchAll(/rpc\.declare\(\s*\{([^}]*)\}/g)) {
			const obj = m[1].match(/object\s*:\s*'([^']+)'/);
			const meth = m[1].match(/method\s*:\s*'([^']+)'/);
			assert.ok(obj && meth, `rpc.declare without literal object/method in ${file}`);
			(found[`${obj[1]}.${meth[1]}`] ??= []).push(path.relative(app, file));
		}
	}
	return found;
}

// { '/var/run/solowg-bench.json': ['view/solowg/bench.js'] }: every fs.read('<path>')
function readPaths() {
	const found = {};
	for (const file of jsFiles(path.join(app, 'htdocs'))) {
		const src = fs.readFileSync(file, 'utf8');
		for (const m of src.matchAll(/\bfs\.read\(([^)]*)\)/g)) {
			let p = m[1].trim();
			// a constant of the same file: var NAME = '<path>';
			const c = new RegExp(`\\b${p}\\s*=\\s*'([^']+)'`).exec(src);
			if (/^[A-Z_]+$/.test(p) && c) p = c[1];
			else {
				const lit = p.match(/^'([^']+)'$/);
				assert.ok(lit, `fs.read without a literal path or constant in ${file}: ${m[0]}`);
				p = lit[1];
			}
			(found[p] ??= []).push(path.relative(app, file));
		}
	}
	return found;
}

// { '/etc/init.d/solowg reload': ['view/solowg/status.js'], ... }: every
// fs.exec('<command>', [ '<arg>', ... ]) of the pages, as rpcd joins it
function execCommandLines() {
	const found = {};
	for (const file of jsFiles(path.join(app, 'htdocs'))) {
		const src = fs.readFileSync(file, 'utf8');
		for (const m of src.matchAll(/\bfs\.exec\(([^)]*)\)/g)) {
			const lit = m[1].match(/^\s*'([^']+)'\s*(?:,\s*\[([^\]]*)\]\s*)?$/);
			assert.ok(lit, `fs.exec without a literal command and argument list in ${file}: ${m[0]}`);
			const args = lit[2] ? [...lit[2].matchAll(/'([^']*)'/g)].map((a) => a[1]) : [];
			(found[[lit[1], ...args].join(' ')] ??= []).push(path.relative(app, file));
		}
	}
	return found;
}

function granted() {
	const out = new Set();
	for (const group of Object.values(aclGroups))
		for (const mode of ['read', 'write'])
			for (const [obj, methods] of Object.entries(group[mode]?.ubus ?? {}))
				for (const m of methods) out.add(`${obj}.${m}`);
	return out;
}

test('menu.d: Status → solowg with two tabs, status and benchmark, shaped as LuCI expects', () => {
	assert.deepEqual(Object.keys(menu), ['admin/status/solowg', 'admin/status/solowg/status', 'admin/status/solowg/bench']);
	const node = menu['admin/status/solowg'];
	assert.equal(typeof node.title, 'string');
	assert.equal(typeof node.order, 'number');
	// the first tab the session may open: the status page, at the same address as before
	assert.deepEqual(node.action, { type: 'firstchild' });
	for (const [p, view] of [['admin/status/solowg/status', 'solowg/status'], ['admin/status/solowg/bench', 'solowg/bench']]) {
		assert.equal(typeof menu[p].title, 'string');
		assert.deepEqual(menu[p].action, { type: 'view', path: view });
		assert.ok(fs.existsSync(path.join(app, 'htdocs/luci-static/resources/view', `${view}.js`)), `${view}.js exists`);
	}
	assert.ok(menu['admin/status/solowg/status'].order < menu['admin/status/solowg/bench'].order, 'status is the first tab');
	assert.deepEqual(node.depends.acl, ['luci-app-solowg']);
	// the status tab inherits the parent's group; the benchmark needs its own besides
	assert.equal(menu['admin/status/solowg/status'].depends, undefined);
	assert.deepEqual(menu['admin/status/solowg/bench'].depends, { acl: ['luci-app-solowg-bench'] });
	for (const n of Object.values(menu))
		assert.ok((n.depends?.acl ?? []).every((g) => g in aclGroups), 'depends on an ACL group this package defines');
	// The dispatcher checks uci depends as root (does the config have a
	// section?): the daemon's own config says solowg is installed, and
	// unlike network it is readable by the page's read-only users too.
	assert.deepEqual(node.depends.uci, { solowg: true });
});

test('acl.d: the benchmark group grants its command lines and state file, for write only', () => {
	assert.deepEqual(Object.keys(benchAcl), ['luci-app-solowg-bench']);
	const g = benchAcl['luci-app-solowg-bench'];
	assert.equal(typeof g.description, 'string');
	// no read section: a read-only account given the group gets nothing from it
	assert.deepEqual(Object.keys(g).sort(), ['description', 'write']);
	assert.deepEqual(g.write, {
		file: { ...Object.fromEntries(benchLines.map((l) => [l, ['exec']])), [BENCH_STATE]: ['read'] },
		ubus: { file: ['exec', 'read'] },
	});
});

test('acl.d: who may run the benchmark (rpcd rules, acl-model.js)', () => {
	const files = [aclModel.baseAcl, acl, benchAcl];
	const isFile = (p) => aclModel.canonicalPath(p) === '/usr/sbin/solowg';
	const exec = (ses, line) => { const [cmd, ...args] = line.split(' '); return aclModel.fileExec(ses, cmd, args, null, isFile); };
	const tab = { ...menu['admin/status/solowg/bench'], depends: { acl: ['luci-app-solowg', 'luci-app-solowg-bench'] } };
	const yes = () => true;
	const root = aclModel.login(aclModel.users.root, files);
	for (const l of benchLines) assert.equal(exec(root, l), 0, `root: ${l}`);
	for (const l of [`${BENCH}`, `${BENCH} --seconds 5 --impls kernel`, `${BENCH} --seconds 7`, `${BENCH} --seconds 5 --output /etc/passwd`,
		'/usr/sbin/solowg bench --seconds 5', '/usr/sbin/solowg genkey', '/usr/sbin/solowg'])
		assert.equal(exec(root, l), 6, `root: ${l} refused`);
	assert.equal(root.access('file', BENCH_STATE, 'read'), true, 'root: the state file');
	assert.equal(root.access('file', '/var/run/solowg/interfaces', 'read'), false, 'root: no other file');
	assert.equal(aclModel.nodespec(tab, root, yes).readonly, false);
	// the read-only account, even when given this group for read: no exec, no file, no tab
	const ro = aclModel.login({ ...aclModel.users.readonly, read: [...aclModel.users.readonly.read, 'luci-app-solowg-bench'] }, files);
	assert.equal(ro.access('ubus', 'file', 'exec'), false);
	assert.equal(ro.access('ubus', 'file', 'read'), false);
	for (const l of benchLines) assert.equal(exec(ro, l), 6, `read-only: ${l}`);
	assert.equal(ro.access('file', BENCH_STATE, 'read'), false);
	assert.equal(aclModel.nodespec(tab, ro, yes).satisfied, false, 'read-only: the dispatcher refuses the tab');
	// a writer of luci-app-solowg without the benchmark group: no tab, nothing run
	const w = aclModel.login({ read: ['unauthenticated', 'luci-base'], write: ['luci-app-solowg'] }, files);
	assert.equal(aclModel.nodespec(tab, w, yes).satisfied, false);
	for (const l of benchLines) assert.equal(exec(w, l), 6, `writer of luci-app-solowg only: ${l}`);
});

test('acl.d: exactly the grants the pages need', () => {
	assert.deepEqual(Object.keys(acl), ['luci-app-solowg']);
	const g = acl['luci-app-solowg'];
	assert.equal(typeof g.description, 'string');
	assert.deepEqual(Object.keys(g).sort(), ['description', 'read', 'write']);
	// read: status (no private key or PSK in it) and the daemon settings
	assert.deepEqual(g.read, { ubus: { solowg: ['status'] }, uci: ['solowg'] });
	// write: keys and network, whose peer sections hold the private keys and
	// PSKs. In a "write" section rpcd grants a config listed as an array for
	// "write" only and uci get needs "read": the table form grants both.
	// network.interface.wan status: the WAN address, the client configuration's
	// default endpoint; the dialog is for writers only, so is the grant. No uci
	// ddns: it holds the DDNS accounts' passwords (luci-app-ddns grants it).
	// Reload: the init script's reload as root, which hands the daemon a fresh
	// copy of the configuration first; uhttpd needs ubus `file exec` to pass
	// the call on, rpcd then the command line in the file scope. Not the
	// daemon's own ubus reload, which only re-applies the last copy.
	assert.deepEqual(g.write, {
		file: { '/etc/init.d/solowg reload': ['exec'] },
		ubus: { file: ['exec'], solowg: ['genkey', 'pubkey', 'genpsk'], 'network.interface.wan': ['status'] },
		uci: { network: ['read', 'write'], solowg: ['write'] },
	});
});

test('acl.d: what a read-only and a full session may do (rpcd rules, acl-model.js)', () => {
	const files = [aclModel.baseAcl, acl];
	const ro = aclModel.login(aclModel.users.readonly, files);
	const root = aclModel.login(aclModel.users.root, files);
	const node = menu['admin/status/solowg'];
	const hasSections = (c) => c === 'solowg';

	const isFile = (p) => aclModel.canonicalPath(p) === '/etc/init.d/solowg';   // stat() resolves the path
	const exec = (ses, cmd, args, env) => aclModel.fileExec(ses, cmd, args, env, isFile);

	assert.equal(ro.access('ubus', 'solowg', 'status'), true);
	assert.equal(ro.access('uci', 'solowg', 'read'), true);
	for (const m of ['genkey', 'pubkey', 'genpsk', 'reload'])
		assert.equal(ro.access('ubus', 'solowg', m), false, `read-only: ${m}`);
	assert.equal(ro.access('ubus', 'file', 'exec'), false, 'read-only: ubus file exec');
	assert.equal(exec(ro, '/etc/init.d/solowg', ['reload']), 6, 'read-only: rpcd refuses the reload too');
	assert.equal(ro.access('ubus', 'network.interface.wan', 'status'), false, 'read-only: wan status');
	assert.equal(ro.access('uci', 'ddns', 'read'), false, 'read-only: uci ddns');
	for (const f of ['read', 'write'])
		assert.equal(ro.access('uci', 'network', f), false, `read-only: uci network ${f}`);
	assert.equal(ro.access('uci', 'solowg', 'write'), false);
	assert.deepEqual(aclModel.nodespec(node, ro, hasSections), { ...node, satisfied: true, readonly: true });

	for (const m of ['status', 'genkey', 'pubkey', 'genpsk'])
		assert.equal(root.access('ubus', 'solowg', m), true, `root: ${m}`);
	assert.equal(root.access('ubus', 'solowg', 'reload'), false, 'root: no ubus solowg reload (the init script runs it)');
	// the service's reload and nothing else: rpcd matches "<executable> <args>"
	// when the bare executable is not granted (UBUS_STATUS_PERMISSION_DENIED 6)
	assert.equal(root.access('ubus', 'file', 'exec'), true, 'root: ubus file exec');
	assert.equal(exec(root, '/etc/init.d/solowg', ['reload']), 0, 'root: /etc/init.d/solowg reload');
	assert.equal(exec(root, '/etc//init.d/./solowg', ['reload']), 0, 'root: the canonical path is matched');
	for (const args of [['stop'], ['restart'], ['start'], ['disable'], ['enable'], ['reload', 'x'], [], null])
		assert.equal(exec(root, '/etc/init.d/solowg', args), 6, `root: /etc/init.d/solowg ${JSON.stringify(args)}`);
	assert.equal(exec(root, '/etc/init.d/solowg', ['reload'], { PATH: '/tmp' }), 6, 'root: no environment');
	assert.equal(exec(root, '/etc/init.d/solowg reload', null), 4, 'root: a command is a file, not a command line');
	assert.equal(exec(root, '/bin/sh', ['-c', 'reload']), 4, 'root: nothing else (not even found here)');
	assert.equal(aclModel.fileExec(root, '/bin/sh', ['/etc/init.d/solowg', 'reload'], null, (p) => p === '/bin/sh'), 6,
		'root: no other executable');
	for (const [c, f] of [['network', 'read'], ['network', 'write'], ['solowg', 'read'], ['solowg', 'write']])
		assert.equal(root.access('uci', c, f), true, `root: uci ${c} ${f}`);
	assert.deepEqual(aclModel.nodespec(node, root, hasSections), { ...node, satisfied: true, readonly: false });
	assert.equal(root.access('ubus', 'network.interface.wan', 'status'), true, 'root: wan status');
	assert.equal(root.access('ubus', 'network.interface.lan', 'status'), false, 'root: only the wan interface');
	// /etc/config/ddns: readable only through another package's group (luci-app-ddns)
	assert.equal(root.access('uci', 'ddns', 'read'), false, 'root without luci-app-ddns: no uci ddns');
	const rootDdns = aclModel.login(aclModel.users.root, [...files, aclModel.ddnsAcl]);
	assert.equal(rootDdns.access('uci', 'ddns', 'read'), true, 'root with luci-app-ddns: uci ddns');

	// without the group the dispatcher refuses the page; without solowg's config it hides it
	const none = aclModel.login({ read: ['unauthenticated'], write: [] }, files);
	assert.equal(aclModel.nodespec(node, none, hasSections).satisfied, false);
	assert.equal(aclModel.nodespec(node, root, () => false).satisfied, false);
});

test('every declared ubus method is granted, and every grant is used', () => {
	const declared = declaredMethods();
	const execs = execCommandLines();
	const reads = readPaths();
	const grants = granted();
	assert.ok(Object.keys(declared).length > 0, 'found rpc.declare calls');
	// fs.exec and fs.read are LuCI's calls of rpcd's ubus `file exec` and `file read`
	if (Object.keys(execs).length)
		declared['file.exec'] = [...new Set(Object.values(execs).flat())];
	if (Object.keys(reads).length)
		declared['file.read'] = [...new Set(Object.values(reads).flat())];
	for (const [m, files] of Object.entries(declared))
		assert.ok(grants.has(m), `${m} (used in ${files.join(', ')}) is not granted by the ACL`);
	for (const m of grants)
		assert.ok(m in declared, `the ACL grants ${m} but no page calls it`);
});

test('every fs.exec command line and fs.read path is granted exactly, for write, and every file grant is used', () => {
	const execs = execCommandLines();
	const reads = readPaths();
	assert.deepEqual(Object.keys(execs).sort(), ['/etc/init.d/solowg reload', ...benchLines].sort(),
		'the pages run the service\'s reload and the benchmark only');
	assert.deepEqual(Object.keys(reads), [BENCH_STATE], 'the pages read the benchmark\'s state file only');
	const fileGrants = {};
	for (const group of Object.values(aclGroups))
		for (const mode of ['read', 'write'])
			for (const [p, perms] of Object.entries(group[mode]?.file ?? {})) {
				assert.ok(!(p in fileGrants), `${p} granted once`);
				fileGrants[p] = { mode, perms };
			}
	for (const [line, perm] of [...Object.keys(execs).map((l) => [l, 'exec']), ...Object.keys(reads).map((p) => [p, 'read'])]) {
		assert.deepEqual(fileGrants[line], { mode: 'write', perms: [perm] }, `${line}: granted for ${perm} in "write"`);
		assert.ok(!/[*?[]/.test(line), `${line}: no glob characters, so the grant matches this line only`);
	}
	for (const p of Object.keys(fileGrants))
		assert.ok(p in execs || p in reads, `the ACL grants file ${p} but no page uses it`);
});

test('po/templates/solowg.pot is up to date (node tools/gen-pot.js)', () => {
	const fresh = execFileSync(process.execPath, [path.join(app, 'tools/gen-pot.js'), '--stdout'], { encoding: 'utf8' });
	assert.equal(fs.readFileSync(path.join(app, 'po/templates/solowg.pot'), 'utf8'), fresh);
	assert.match(fresh, /msgid "Client configuration"/);
});

// --- the real daemon's method list over a private ubus broker -------------
const cargoBin = path.join(process.env.CARGO_HOME || path.join(os.homedir(), '.cargo'), 'bin');
const bins = {
	ubusd: process.env.UBUSD_BIN || path.join(cargoBin, 'ubusd'),
	client: process.env.UBUS_CLIENT_BIN || path.join(cargoBin, 'ubus-client'),
	solowg: process.env.SOLOWG_BIN || path.join(repo, 'target/release/solowg'),
};
const missing = Object.values(bins).filter((b) => !fs.existsSync(b));
const require_ubus = process.env.SOLOWG_REQUIRE_UBUS === '1';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('the benchmark\'s command lines use options the real solowg bench has',
	{ skip: !fs.existsSync(bins.solowg) && !require_ubus ? `missing ${bins.solowg}` : false, timeout: 10000 },
	() => {
		const help = execFileSync(bins.solowg, ['bench', '--help'], { encoding: 'utf8', timeout: 5000 });
		for (const opt of ['--detach', '--state-file PATH', '--json', '--seconds N', '--impls LIST'])
			assert.ok(help.includes(opt), `solowg bench --help lists ${opt}`);
		const range = /--seconds N\s+seconds per run \((\d+)-(\d+)/.exec(help);
		assert.ok(range, 'the help gives the range of --seconds');
		for (const l of benchLines) {
			const n = +/--seconds (\d+)/.exec(l)[1];
			assert.ok(n >= +range[1] && n <= +range[2], `${l}: --seconds within ${range[1]}-${range[2]}`);
		}
	});

test('every declared method exists in the real solowg ubus object',
	{ skip: missing.length && !require_ubus ? `missing ${missing.join(', ')} (build with .ci/build; cargo install ubusd)` : false, timeout: 30000 },
	async () => {
		assert.deepEqual(missing, [], 'binaries present');
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'solowg-acl-'));
		const sock = path.join(dir, 'ubus.sock');
		const cfg = path.join(dir, 'config');
		fs.mkdirSync(cfg);
		const started = [];
		const start = (bin, args, env) => {
			const p = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
			p.stderrText = '';
			p.stderr.on('data', (d) => { p.stderrText += d; });
			started.push(p);
			return p;
		};
		try {
			start(bins.ubusd, [`--socket=${sock}`]);
			for (let i = 0; i < 50 && !fs.existsSync(sock); i++) await sleep(100);
			assert.ok(fs.existsSync(sock), 'ubusd created its socket');
			const daemon = start(bins.solowg, ['--uci', '--config-dir', cfg], { UBUS_SOCKET: sock, LOG_LEVEL: 'error' });
			execFileSync(bins.client, ['-s', sock, '-t', '10', 'wait_for', 'solowg'], { encoding: 'utf8', timeout: 15000 });
			const listed = JSON.parse(execFileSync(bins.client, ['-s', sock, '-t', '5', 'list', 'solowg'], { encoding: 'utf8', timeout: 10000 }));
			// ubus-client prints [{id, path, methods: {name: {arg: type}}}]
			const obj = listed.find((o) => o.path === 'solowg');
			assert.ok(obj, `solowg listed (daemon stderr: ${daemon.stderrText})`);
			const methods = Object.keys(obj.methods);
			// the daemon's methods; network.interface.wan is netifd's
			const others = ['network.interface.wan.status'];
			for (const m of Object.keys(declaredMethods())) {
				const o = m.slice(0, m.lastIndexOf('.')), meth = m.slice(m.lastIndexOf('.') + 1);
				if (others.includes(m)) continue;
				assert.equal(o, 'solowg', `${m}: only the solowg object is used besides ${others.join(', ')}`);
				assert.ok(methods.includes(meth), `${m} is not a method of the daemon (it has ${methods.join(', ')})`);
			}
			// pubkey takes the argument name the protocol page sends.
			assert.ok('private_key' in obj.methods.pubkey, 'pubkey takes private_key');
			// genkey answers with the fields the pages read.
			const k = JSON.parse(execFileSync(bins.client, ['-s', sock, '-t', '5', 'call', 'solowg', 'genkey', '{}'], { encoding: 'utf8', timeout: 10000 }));
			assert.match(k.private_key, /^[A-Za-z0-9+/]{43}=$/);
			const pub = JSON.parse(execFileSync(bins.client, ['-s', sock, '-t', '5', 'call', 'solowg', 'pubkey', JSON.stringify({ private_key: k.private_key })], { encoding: 'utf8', timeout: 10000 }));
			assert.equal(pub.public_key, k.public_key);
			const psk = JSON.parse(execFileSync(bins.client, ['-s', sock, '-t', '5', 'call', 'solowg', 'genpsk', '{}'], { encoding: 'utf8', timeout: 10000 }));
			assert.match(psk.preshared_key, /^[A-Za-z0-9+/]{43}=$/);
			const st = JSON.parse(execFileSync(bins.client, ['-s', sock, '-t', '5', 'call', 'solowg', 'status', '{}'], { encoding: 'utf8', timeout: 10000 }));
			assert.ok(Array.isArray(st.interfaces) && typeof st.time === 'number', 'status has interfaces[] and time');
			// read-only users get this reply: a PSK only as "is set", no private key
			// (with no tunnel up here the walk covers the top level only)
			const walk = (v, where) => {
				if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${where}[${i}]`));
				else if (v && typeof v === 'object')
					for (const [k, x] of Object.entries(v)) {
						assert.ok(!/private/.test(k), `${where}.${k}: no private key in status`);
						if (k === 'preshared_key') assert.equal(typeof x, 'boolean', `${where}.${k} is a flag`);
						walk(x, `${where}.${k}`);
					}
			};
			walk(st, 'status');
			if ('packet_tx' in st) assert.equal(typeof st.packet_tx, 'boolean', 'status.packet_tx is a boolean');
		} finally {
			for (const p of started.reverse()) {
				p.kill('SIGTERM');
				await new Promise((r) => { if (p.exitCode !== null || p.signalCode) r(); else { p.once('exit', r); setTimeout(r, 2000); } });
			}
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});
