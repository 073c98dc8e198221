#!/usr/bin/env node
// Writes po/templates/solowg.pot: every _('...') / _("...") string of the
// app's JavaScript (first argument only; all of ours are single literals) and
// every menu title of root/usr/share/luci/menu.d/*.json, with file:line
// references, sorted by first appearance.
//   node luci-app/tools/gen-pot.js            (rewrites the .pot)
//   node luci-app/tools/gen-pot.js --stdout   (prints it; used by the tests)
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const app = path.resolve(__dirname, '..');

function walk(dir, ext, out = []) {
	for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
		const p = path.join(dir, e.name);
		if (e.isDirectory()) walk(p, ext, out);
		else if (e.name.endsWith(ext)) out.push(p);
	}
	return out;
}

// A JavaScript string literal's value (the escapes our sources use).
function unquote(lit) {
	return lit.slice(1, -1).replace(/\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)/g, (m, e) => {
		if (e[0] === 'u' || e[0] === 'x') return String.fromCharCode(parseInt(e.slice(1), 16));
		return { n: '\n', t: '\t', r: '\r' }[e] ?? e;
	});
}

function poString(s) {
	return '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t') + '"';
}

function extract() {
	const entries = new Map();
	const add = (msgid, ref) => {
		if (!entries.has(msgid)) entries.set(msgid, []);
		entries.get(msgid).push(ref);
	};
	const re = /(?<![A-Za-z0-9_$.])_\(\s*('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")\s*[,)]/g;
	for (const file of walk(path.join(app, 'htdocs'), '.js')) {
		const src = fs.readFileSync(file, 'utf8');
		const rel = path.relative(app, file);
		for (const m of src.matchAll(re)) {
			const line = src.slice(0, m.index).split('\n').length;
			add(unquote(m[1]), `${rel}:${line}`);
		}
	}
	const menuDir = path.join(app, 'root/usr/share/luci/menu.d');
	for (const file of walk(menuDir, '.json')) {
		const menu = JSON.parse(fs.readFileSync(file, 'utf8'));
		for (const node of Object.values(menu))
			if (node.title) add(node.title, path.relative(app, file));
	}
	return entries;
}

function render(entries) {
	let out = 'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8"\n';
	for (const [msgid, refs] of entries) {
		if (msgid === '') continue;
		out += `\n#: ${refs.join(' ')}\nmsgid ${poString(msgid)}\nmsgstr ""\n`;
	}
	return out;
}

if (require.main === module) {
	const text = render(extract());
	if (process.argv.includes('--stdout')) process.stdout.write(text);
	else {
		fs.mkdirSync(path.join(app, 'po/templates'), { recursive: true });
		fs.writeFileSync(path.join(app, 'po/templates/solowg.pot'), text);
		console.error(`po/templates/solowg.pot: ${extract().size} strings`);
	}
}
module.exports = { extract, render };
