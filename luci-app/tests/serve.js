#!/usr/bin/env node
// Static server for the browser test: the app's htdocs under /luci-static,
// the LuCI stand-in under /standin. solowg/conf.js is the shipped one (or
// $SOLOWG_PURE_DIR's); the server refuses to start without it.
// /luci-static/resources/uqr.js, which luci-lib-uqr provides on a router, is
// the stand-in that luci-standin/uqr-standin.js builds from the pinned npm uqr.
// /app-root/usr/share/... are the app's own menu.d and acl.d files, which the
// stand-in reads as the dispatcher and rpcd do.
// Usage: node serve.js PORTFILE   (writes the chosen port to PORTFILE)
'use strict';
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const uqrStandin = require('./luci-standin/uqr-standin.js');

const app = path.resolve(__dirname, '..');
const htdocs = path.join(app, 'htdocs');
const standin = path.join(__dirname, 'luci-standin');
const realPure = process.env.SOLOWG_PURE_DIR || path.join(htdocs, 'luci-static/resources/solowg');

const confSource = path.join(realPure, 'conf.js');
if (!fs.existsSync(confSource)) {
	console.error(`serve.js: ${confSource} is missing`);
	process.exit(1);
}
// built once at start, so a missing or wrong uqr stops the test here
const uqrSource = uqrStandin.source();
const pureLabel = `conf.js=real uqr.js=stand-in(npm uqr ${uqrStandin.installedVersion()})`;

const types = { '.js': 'text/javascript', '.html': 'text/html', '.css': 'text/css', '.svg': 'image/svg+xml', '.json': 'application/json' };

function send(res, file) {
	fs.readFile(file, (err, data) => {
		if (err) { res.writeHead(404); res.end('not found'); return; }
		res.writeHead(200, { 'content-type': (types[path.extname(file)] || 'application/octet-stream') + '; charset=utf-8', 'cache-control': 'no-store' });
		res.end(data);
	});
}

const server = http.createServer((req, res) => {
	const url = new URL(req.url, 'http://x');
	const p = decodeURIComponent(url.pathname);
	if (p.includes('..')) { res.writeHead(400); res.end(); return; }
	if (p === '/' || p === '/index.html') return send(res, path.join(standin, 'index.html'));
	if (p === '/standin/pure-source.js') {
		res.writeHead(200, { 'content-type': 'text/javascript' });
		res.end(`window.STANDIN_PURE = ${JSON.stringify(pureLabel)};\n`);
		return;
	}
	if (p.startsWith('/standin/')) return send(res, path.join(standin, p.slice(9)));
	if (p.startsWith('/app-root/usr/share/') && p.endsWith('.json')) return send(res, path.join(app, 'root', p.slice(10)));
	if (p === '/luci-static/resources/solowg/conf.js') return send(res, confSource);
	if (p === '/luci-static/resources/uqr.js') {
		res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' });
		res.end(uqrSource);
		return;
	}
	if (p.startsWith('/luci-static/')) return send(res, path.join(htdocs, p));
	res.writeHead(404); res.end('not found');
});

server.listen(0, '127.0.0.1', () => {
	const port = server.address().port;
	process.stderr.write(`serving on ${port}; ${pureLabel}\n`);
	if (process.argv[2]) fs.writeFileSync(process.argv[2], String(port));
});
