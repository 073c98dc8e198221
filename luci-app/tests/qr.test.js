'use strict';
// Tests of htdocs/luci-static/resources/solowg/qr.js, loaded as shipped. Every
// symbol is rendered to pixels and read back by an independent decoder, the
// npm package jsqr (1.4.0), twice: as published, and in a strict variant of
// the same file that refuses what the published decoder forgives (format or
// version information not matching exactly in both copies, any Reed-Solomon
// correction, a mirrored symbol), so a wrong bit in our encoder cannot hide
// behind the decoder's error correction. The strict variant also corrects
// jsQR's table of alignment pattern centres for version 23: jsQR 1.4.0 has
// 6, 30, 54, 74, 102 where ISO/IEC 18004 (Annex E) has 6, 30, 54, 78, 102
// (cozmo/jsQR#251), so as published it reads the modules of that pattern as
// data and only its error correction saves it.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { load } = require('./load.js');

const qr = load('solowg/qr.js');
const jsQR = require('jsqr');

const JSQR_FILE = require.resolve('jsqr');

function strictDecoder() {
	let src = fs.readFileSync(JSQR_FILE, 'utf8');
	const patches = [
		// Reed-Solomon: any non-zero syndrome is a failure
		[ 'if (!error) {\n        return outputBytes;\n    }\n',
		  'if (!error) {\n        return outputBytes;\n    }\n    return null;\n' ],
		// no second attempt with the symbol mirrored
		[ '    return decodeMatrix(matrix);\n}\nexports.decode = decode;',
		  '    return null;\n}\nexports.decode = decode;' ],
		// format information: both copies exactly one valid code word
		[ 'if (bits === topLeftFormatInfoBits || bits === topRightBottomRightFormatInfoBits) {',
		  'if (bits === topLeftFormatInfoBits && bits === topRightBottomRightFormatInfoBits) {' ],
		[ 'if (bestDifference <= 3) {\n        return bestFormatInfo;',
		  'if (false) {\n        return bestFormatInfo;' ],
		// version information (version 7 and up): both copies exact
		[ 'if (version.infoBits === topRightVersionBits || version.infoBits === bottomLeftVersionBits) {',
		  'if (version.infoBits === topRightVersionBits && version.infoBits === bottomLeftVersionBits) {' ],
		[ 'if (bestDifference <= 3) {\n        return bestVersion;',
		  'if (false) {\n        return bestVersion;' ],
		// jsQR's version 23 alignment centres, as in the standard
		[ 'alignmentPatternCenters: [6, 30, 54, 74, 102],',
		  'alignmentPatternCenters: [6, 30, 54, 78, 102],' ],
	];
	for (const [ from, to ] of patches) {
		const at = src.indexOf(from);
		assert.ok(at >= 0 && src.indexOf(from, at + 1) < 0, 'strict jsQR patch applies once: ' + from.slice(0, 60));
		src = src.slice(0, at) + to + src.slice(at + from.length);
	}
	const module = { exports: {} };
	new Function('module', 'exports', src)(module, module.exports);
	return module.exports.default || module.exports;
}

const jsQRStrict = strictDecoder();

// modules -> RGBA pixels, `scale` pixels a module, `margin` modules of quiet zone
function render(modules, scale = 4, margin = 4) {
	const size = modules.length, dim = (size + 2 * margin) * scale;
	const data = new Uint8ClampedArray(dim * dim * 4).fill(255);
	for (let y = 0; y < size; y++)
		for (let x = 0; x < size; x++)
			if (modules[y][x])
				for (let dy = 0; dy < scale; dy++)
					for (let dx = 0; dx < scale; dx++) {
						const i = (((y + margin) * scale + dy) * dim + (x + margin) * scale + dx) * 4;
						data[i] = data[i + 1] = data[i + 2] = 0;
					}
	return { data, width: dim, height: dim };
}

function decodeBoth(symbol) {
	const img = render(symbol.modules);
	const plain = jsQR(img.data, img.width, img.height);
	const strict = jsQRStrict(img.data, img.width, img.height);
	return { plain, strict };
}

function assertRoundTrip(text, ecl, opts) {
	const s = qr.encode(text, ecl, opts);
	assert.equal(s.size, s.version * 4 + 17);
	assert.equal(s.modules.length, s.size);
	assert.ok(s.modules.every((row) => row.length === s.size && row.every((m) => typeof m === 'boolean')));
	const { plain, strict } = decodeBoth(s);
	assert.ok(plain, `jsQR read the symbol (v${s.version}-${s.ecl} mask ${s.mask})`);
	assert.equal(plain.data, text);
	assert.ok(strict, `strict jsQR read the symbol (v${s.version}-${s.ecl} mask ${s.mask})`);
	assert.equal(strict.data, text);
	assert.equal(strict.version, s.version);
	assert.deepEqual(Array.from(strict.binaryData), qr.utf8(text));
	return s;
}

function key(seed) {
	return Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 53 + seed * 29 + 3) & 255)).toString('base64');
}

const CLIENT_CONF = `[Interface]
PrivateKey = ${key(1)}
Address = 10.0.0.2/32, fd00:abcd::2/128
DNS = 10.0.0.1

[Peer]
PublicKey = ${key(2)}
PresharedKey = ${key(3)}
AllowedIPs = 0.0.0.0/0, ::/0
Endpoint = vpn.example.net:51820
PersistentKeepalive = 25
`;

test('a realistic client configuration (~300 bytes) reads back exactly, at M and L', () => {
	assert.equal(CLIENT_CONF.length, 337);
	const m = assertRoundTrip(CLIENT_CONF, 'M');
	assert.equal(m.ecl, 'M');
	assert.equal(m.version, 14);            // 13-M holds 331 bytes, 14-M 362
	const l = assertRoundTrip(CLIENT_CONF, 'L');
	assert.equal(l.version, 12);            // 11-L holds 321 bytes, 12-L 367
	// the default level is M
	assert.deepEqual(qr.encode(CLIENT_CONF).modules, m.modules);
	// and the real conf.js output for it too
	const conf = load('solowg/conf.js');
	const text = conf.clientConfig({
		privateKey: key(4), addresses: [ '10.0.0.3/32' ], dns: [ '10.0.0.1' ], serverPublicKey: key(5),
		presharedKey: key(6), endpoint: { host: '2001:db8::1', port: 51820 }, persistentKeepalive: 25
	});
	assertRoundTrip(text, 'M');
});

test('short texts', () => {
	for (const t of [ 'a', 'hello', 'openwrt.org', '0123456789', 'x'.repeat(14) ]) {
		const s = assertRoundTrip(t, 'M');
		assert.equal(s.version, 1, t);
		assert.equal(s.size, 21);
	}
	assert.equal(assertRoundTrip('x'.repeat(15), 'M').version, 2);
	assert.equal(assertRoundTrip('x'.repeat(17), 'L').version, 1);
	assert.equal(assertRoundTrip('', 'M').version, 1);
	for (const ecl of [ 'L', 'M', 'Q', 'H', 'm', 'l' ])
		assertRoundTrip('solowg ' + ecl, ecl);
});

test('long texts need large versions (10, 20, 40)', () => {
	let seed = 7;
	const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
	const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \n[]#.:,';
	const text = (n) => Array.from({ length: n }, () => chars[Math.floor(rnd() * chars.length)]).join('');

	const a = assertRoundTrip(text(400), 'M');
	assert.ok(a.version >= 10, String(a.version));
	assert.equal(a.version, 15);            // 14-M holds 362, 15-M 412
	const b = assertRoundTrip(text(1000), 'M');
	assert.equal(b.version, 26);            // 25-M holds 997, 26-M 1062
	const c = assertRoundTrip(text(2331), 'M');
	assert.equal(c.version, 40);
	assert.equal(c.size, 177);
	const d = assertRoundTrip(text(2953), 'L');
	assert.equal(d.version, 40);
	assert.throws(() => qr.encode(text(2332), 'M'), RangeError);
	assert.throws(() => qr.encode(text(2954), 'L'), RangeError);
});

test('UTF-8 text', () => {
	const texts = [
		'# Name = Jürgen’s Handy\nEndpoint = vpn.example.net:51820',
		'Grüße aus Köln — 東京 — Ελλάδα — 😀🚀',
		'ключ = ' + key(9),
	];
	for (const t of texts)
		assertRoundTrip(t, 'M');
	assert.deepEqual(qr.utf8('é😀'), [ 0xc3, 0xa9, 0xf0, 0x9f, 0x98, 0x80 ]);
	assert.deepEqual(qr.utf8('\ud800x'), [ 0xef, 0xbf, 0xbd, 0x78 ]);   // lone surrogate
	// capacity counts bytes, not characters
	assert.equal(qr.encode('é'.repeat(7), 'M').version, 1);    // 14 bytes
	assert.equal(qr.encode('é'.repeat(8), 'M').version, 2);    // 16 bytes
});

test('every mask reads back, with and without version information', () => {
	for (const [ text, ecl ] of [ [ 'mask test', 'M' ], [ CLIENT_CONF, 'L' ], [ 'v'.repeat(120), 'Q' ] ]) {
		const scores = [];
		for (let mask = 0; mask < 8; mask++) {
			const s = assertRoundTrip(text, ecl, { mask });
			assert.equal(s.mask, mask);
			scores.push(qr.penalty(s.modules));
		}
		// the automatic choice is a mask with the lowest penalty
		const auto = qr.encode(text, ecl);
		assert.equal(qr.penalty(auto.modules), Math.min(...scores));
		assert.equal(scores[auto.mask], Math.min(...scores));
	}
	assert.throws(() => qr.encode('x', 'M', { mask: 8 }), RangeError);
});

test('version selection bounds for every version and level', () => {
	// byte-mode capacities from the standard's table
	const known = {
		1: { L: 17, M: 14, Q: 11, H: 7 }, 2: { L: 32, M: 26, Q: 20, H: 14 },
		7: { L: 154, M: 122, Q: 86, H: 64 }, 10: { L: 271, M: 213, Q: 151, H: 119 },
		40: { L: 2953, M: 2331, Q: 1663, H: 1273 }
	};
	for (const v of Object.keys(known))
		for (const ecl of 'LMQH')
			assert.equal(qr.capacity(+v, ecl), known[v][ecl], `capacity ${v}-${ecl}`);

	const totals = { 1: 26, 2: 44, 7: 196, 10: 346, 40: 3706 };
	assert.equal(qr.capacity(13, 'M'), 331);
	assert.equal(qr.capacity(14, 'M'), 362);
	assert.equal(qr.capacity(11, 'L'), 321);
	assert.equal(qr.capacity(12, 'L'), 367);
	for (const v of Object.keys(totals))
		assert.equal(qr.totalCodewords(+v), totals[v], `codewords of version ${v}`);

	for (const ecl of 'LM') {
		let prev = 0;
		for (let v = 1; v <= 40; v++) {
			const cap = qr.capacity(v, ecl);
			assert.ok(cap > prev, `capacity grows at ${v}-${ecl}`);
			prev = cap;
			const fits = qr.encode('z'.repeat(cap), ecl, { mask: 0 });
			assert.equal(fits.version, v, `${cap} bytes at ${ecl} -> version ${v}`);
			assert.equal(fits.size, 17 + 4 * v);
			if (v < 40)
				assert.equal(qr.encode('z'.repeat(cap + 1), ecl, { mask: 0 }).version, v + 1);
		}
	}
	assert.throws(() => qr.encode('x', 'X'), RangeError);
	assert.throws(() => qr.capacity(41, 'M'), RangeError);
	assert.throws(() => qr.capacity(0, 'M'), RangeError);
	// a larger version may be asked for
	assert.equal(assertRoundTrip('hi', 'M', { minVersion: 8 }).version, 8);
});

test('alignment pattern positions and Reed-Solomon against the standard', () => {
	assert.deepEqual(qr.alignmentPositions(1), []);
	assert.deepEqual(qr.alignmentPositions(2), [ 6, 18 ]);
	assert.deepEqual(qr.alignmentPositions(7), [ 6, 22, 38 ]);
	assert.deepEqual(qr.alignmentPositions(15), [ 6, 26, 48, 70 ]);
	assert.deepEqual(qr.alignmentPositions(23), [ 6, 30, 54, 78, 102 ]);
	assert.deepEqual(qr.alignmentPositions(32), [ 6, 34, 60, 86, 112, 138 ]);
	assert.deepEqual(qr.alignmentPositions(40), [ 6, 30, 58, 86, 114, 142, 170 ]);
	// "HELLO WORLD" as 1-M (alphanumeric) data codewords and their 10 ECC codewords
	const data = [ 32, 91, 11, 120, 209, 114, 220, 77, 67, 64, 236, 17, 236, 17, 236, 17 ];
	assert.deepEqual(qr.reedSolomon(data, 10), [ 196, 35, 39, 119, 235, 215, 231, 226, 93, 23 ]);
});

test('the strict decoder refuses a damaged symbol that plain jsQR corrects', () => {
	const s = qr.encode('damage me', 'M');
	const bad = s.modules.map((row) => row.slice());
	bad[s.size - 1][s.size - 1] = !bad[s.size - 1][s.size - 1];   // first data bit
	const img = render(bad);
	assert.equal(jsQR(img.data, img.width, img.height).data, 'damage me');
	assert.equal(jsQRStrict(img.data, img.width, img.height), null);
	// a mirrored (transposed) symbol: plain jsQR reads it, strict does not
	const t = s.modules.map((row, y) => row.map((_, x) => s.modules[x][y]));
	const timg = render(t);
	assert.equal(jsQR(timg.data, timg.width, timg.height).data, 'damage me');
	assert.equal(jsQRStrict(timg.data, timg.width, timg.height), null);
});

test('toSVG draws the same modules with a quiet zone of 4', () => {
	const text = CLIENT_CONF;
	const s = qr.encode(text, 'M');
	const svg = qr.toSVG(text, { ecl: 'M', title: 'a <b> & "c"' });
	const dim = s.size + 8;
	assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>[\s\S]*<\/svg>$/);
	assert.ok(svg.includes(`viewBox="0 0 ${dim} ${dim}"`));
	assert.ok(svg.includes(`width="${dim * 4}" height="${dim * 4}"`));
	assert.ok(svg.includes('<title>a &lt;b&gt; &amp; &quot;c&quot;</title>'));
	// rebuild the matrix from the path runs
	const d = /<path d="([^"]*)"/.exec(svg)[1];
	const grid = Array.from({ length: dim }, () => Array(dim).fill(false));
	const re = /M(\d+),(\d+)h(\d+)v1h-(\d+)z/g;
	let m, consumed = 0;
	while ((m = re.exec(d)) !== null) {
		assert.equal(m[3], m[4]);
		for (let i = 0; i < +m[3]; i++)
			grid[+m[2]][+m[1] + i] = true;
		consumed += m[0].length;
	}
	assert.equal(consumed, d.length);
	for (let y = 0; y < dim; y++)
		for (let x = 0; x < dim; x++) {
			const inside = x >= 4 && y >= 4 && x < s.size + 4 && y < s.size + 4;
			assert.equal(grid[y][x], inside ? s.modules[y - 4][x - 4] : false);
		}
	// and that grid, drawn as pixels, reads back
	const img = render(grid, 4, 0);
	assert.equal(jsQRStrict(img.data, img.width, img.height).data, text);
	// options
	const small = qr.toSVG('x', { margin: 0, scale: 2, dark: '#123', light: 'none' });
	assert.ok(small.includes('viewBox="0 0 21 21"') && small.includes('width="42"'));
	assert.ok(small.includes('fill="#123"') && small.includes('fill="none"'));
});

test('every version 1 to 40 reads back (strict), filled to capacity at M', () => {
	for (let v = 1; v <= 40; v++) {
		const n = qr.capacity(v, 'M');
		const text = Array.from({ length: n }, (_, i) => String.fromCharCode(33 + (i * 7 + v) % 94)).join('');
		const s = assertRoundTrip(text, 'M', { mask: v % 8 });
		assert.equal(s.version, v);
	}
});
