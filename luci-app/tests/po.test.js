// node --test luci-app/tests/po.test.js
//
// Translations in LuCI's layout, po/<lang>/solowg.po next to
// po/templates/solowg.pot: each catalogue has a header naming its language
// and UTF-8, translates every msgid of the .pot (a non-empty msgstr), keeps no
// msgid the .pot no longer has, and keeps the %s/%d placeholders of each
// string in their order (LuCI's String.prototype.format fills them by
// position). German (de) must be there.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const po = path.resolve(__dirname, '..', 'po');

// [{ msgid, msgstr, line }] of a .po/.pot file: msgid/msgstr with "..."
// continuation lines; comments and msgctxt-free entries only (ours have none).
function parsePo(file) {
	const lines = fs.readFileSync(file, 'utf8').split('\n');
	const entries = [];
	let cur = null, field = null;
	const str = (s, n) => {
		try { return JSON.parse(s); }
		catch (e) { throw new Error(`${file}:${n}: not a quoted string: ${s}`); }
	};
	lines.forEach((raw, i) => {
		const line = raw.trim(), n = i + 1;
		let m;
		if (line === '' || line.startsWith('#')) { field = null; return; }
		if ((m = /^msgid (".*")$/.exec(line))) {
			cur = { msgid: str(m[1], n), msgstr: null, line: n };
			entries.push(cur);
			field = 'msgid';
		}
		else if ((m = /^msgstr (".*")$/.exec(line))) {
			assert.ok(cur && cur.msgstr === null, `${file}:${n}: msgstr without msgid`);
			cur.msgstr = str(m[1], n);
			field = 'msgstr';
		}
		else if (/^".*"$/.test(line) && field)
			cur[field] += str(line, n);
		else
			throw new Error(`${file}:${n}: unexpected line: ${raw}`);
	});
	for (const e of entries)
		assert.notEqual(e.msgstr, null, `${file}:${e.line}: msgid without msgstr`);
	return entries;
}

const placeholders = (s) => (s.match(/%[sdxfh%]/g) || []).filter((p) => p !== '%%');

const template = parsePo(path.join(po, 'templates/solowg.pot'));
const msgids = template.filter((e) => e.msgid !== '').map((e) => e.msgid);
const langs = fs.readdirSync(po, { withFileTypes: true })
	.filter((d) => d.isDirectory() && d.name !== 'templates').map((d) => d.name).sort();

test('po/: a German catalogue in LuCI\'s po/<lang>/solowg.po layout', () => {
	assert.ok(langs.includes('de'), `po/de exists (found ${langs.join(', ')})`);
	for (const lang of langs) {
		assert.match(lang, /^[a-z]{2,3}(?:_[A-Za-z]{2,4})?$/, `${lang}: a LuCI language directory name`);
		assert.deepEqual(fs.readdirSync(path.join(po, lang)), ['solowg.po'], `po/${lang} holds solowg.po only`);
	}
});

for (const lang of langs) {
	test(`po/${lang}/solowg.po: header, every msgid of the .pot translated, placeholders kept`, () => {
		const file = path.join(po, lang, 'solowg.po');
		const entries = parsePo(file);

		const header = entries.find((e) => e.msgid === '');
		assert.ok(header && entries[0] === header, 'starts with the header entry');
		const fields = Object.fromEntries(header.msgstr.split('\n').filter(Boolean).map((l) => {
			const i = l.indexOf(':');
			return [l.slice(0, i), l.slice(i + 1).trim()];
		}));
		assert.equal(fields.Language, lang, 'header Language');
		assert.equal(fields['Content-Type'], 'text/plain; charset=UTF-8', 'header Content-Type');
		assert.equal(fields['MIME-Version'], '1.0', 'header MIME-Version');
		assert.match(fields['Plural-Forms'] || '', /^nplurals=\d+; plural=.+;$/, 'header Plural-Forms');

		const seen = new Map();
		for (const e of entries.filter((x) => x.msgid !== '')) {
			assert.ok(!seen.has(e.msgid), `${lang}:${e.line}: msgid ${JSON.stringify(e.msgid)} twice`);
			seen.set(e.msgid, e);
		}

		const untranslated = msgids.filter((id) => !seen.has(id) || seen.get(id).msgstr === '');
		assert.deepEqual(untranslated, [], `every msgid of solowg.pot has a msgstr in ${lang}/solowg.po`);

		const stale = [...seen.keys()].filter((id) => !msgids.includes(id));
		assert.deepEqual(stale, [], `no msgid that solowg.pot no longer has`);

		for (const [id, e] of seen)
			assert.deepEqual(placeholders(e.msgstr), placeholders(id), `${lang}:${e.line}: placeholders of ${JSON.stringify(id)}`);
	});
}

test('the .pot parser reads continuation lines and escapes', () => {
	const tmp = path.join(require('node:os').tmpdir(), `solowg-po-${process.pid}.po`);
	fs.writeFileSync(tmp, 'msgid ""\nmsgstr ""\n"Language: de\\n"\n\n#: x.js:1\nmsgid "a \\"b\\"\\n"\n"c"\nmsgstr "d"\n');
	try {
		assert.deepEqual(parsePo(tmp).map((e) => [e.msgid, e.msgstr]), [['', 'Language: de\n'], ['a "b"\nc', 'd']]);
	}
	finally {
		fs.unlinkSync(tmp);
	}
});
