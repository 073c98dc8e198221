'use strict';
// QR codes of the status page's client configuration. The page draws them with
// LuCI's uqr module (package luci-lib-uqr): uqr.renderSVG(text, QR_OPTIONS).
// Here that module is the stand-in built by luci-standin/uqr-standin.js from
// the npm package uqr at the version luci-lib-uqr bundles, loaded the way
// LuCI's loader loads it, and called with the QR_OPTIONS of view/solowg/status.js.
// Every symbol it draws is rebuilt from the SVG path, rendered to pixels and
// read back by jsqr, as published and in a strict variant (qr-decode.js): the
// text, the UTF-8 bytes, the version and the error correction level read from
// the symbol are checked, so a wrong bit cannot hide behind the decoder's error
// correction.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { load, source } = require('./load.js');
const { jsQR, jsQRStrict, gridFromPath, render, decodeBoth } = require('./qr-decode.js');
const uqrStandin = require('./luci-standin/uqr-standin.js');

const npmUqr = require('uqr');
const uqr = uqrStandin.instantiate();

// The view's options, read from its source so that the test draws what the page draws.
const VIEW = 'view/solowg/status.js';
const QR_OPTIONS = (() => {
	const m = /^var QR_OPTIONS = (\{[^\n]*\});$/m.exec(source(VIEW));
	assert.ok(m, `${VIEW} declares var QR_OPTIONS = {...};`);
	return new Function(`return ${m[1]};`)();
})();

// The byte-mode model of ISO/IEC 18004, independent of uqr: error correction
// codewords per block and number of blocks (Table 9), index [version - 1].
const ECC_PER_BLOCK = {
	L: [ 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28,
	     28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30 ],
	M: [ 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26,
	     26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28 ],
	Q: [ 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30,
	     28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30 ],
	H: [ 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28,
	     30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30 ]
};
const NUM_BLOCKS = {
	L: [ 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8,
	     8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25 ],
	M: [ 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16,
	     17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49 ],
	Q: [ 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20,
	     23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68 ],
	H: [ 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25,
	     25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81 ]
};

function totalCodewords(v) {
	const n = Math.floor(v / 7) + 2;
	let bits = (16 * v + 128) * v + 64;
	if (v >= 2) bits -= (25 * n - 10) * n - 55;
	if (v >= 7) bits -= 36;
	return Math.floor(bits / 8);
}

// Largest number of bytes a version holds in byte mode at a level
function capacity(v, ecl) {
	const data = totalCodewords(v) - ECC_PER_BLOCK[ecl][v - 1] * NUM_BLOCKS[ecl][v - 1];
	const countBits = v <= 9 ? 8 : 16;
	return Math.floor((data * 8 - 4 - countBits) / 8);
}

// Alignment pattern centres (Annex E)
function alignmentPositions(v) {
	if (v === 1) return [];
	const count = Math.floor(v / 7) + 2, size = 4 * v + 17;
	const step = v === 32 ? 26 : Math.ceil((4 * v + 4) / (2 * count - 2)) * 2;
	const pos = [ 6 ];
	for (let i = count - 2; i >= 0; i--) pos.push(size - 7 - i * step);
	return pos;
}

// What LuCI's uqr.renderSVG returns for the options: the whole symbol with its
// border as one path of module squares on a white rectangle, sized in pixels.
function parseSvg(svg, opts) {
	const m = /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="(\d+)" height="(\d+)"><rect fill="([^"]*)" width="(\d+)" height="(\d+)"\/><path fill="([^"]*)" d="([^"]*)"\/><\/svg>$/.exec(svg);
	assert.ok(m, 'the SVG is <svg width height><rect/><path/></svg>: ' + svg.slice(0, 120));
	const [ width, height, light, rw, rh, dark, d ] = m.slice(1);
	assert.equal(width, height);
	assert.equal(rw, width);
	assert.equal(rh, height);
	assert.equal(light, opts.whiteColor || 'white');
	assert.equal(dark, opts.blackColor || 'black');
	return gridFromPath(d, +width, opts.pixelSize === undefined ? 1 : opts.pixelSize);
}

// Draws text the page's way (or with other options), checks the SVG against
// uqr's own matrix, reads it back with both decoders and checks what they read.
function assertRoundTrip(text, opts = QR_OPTIONS) {
	const svg = uqr.renderSVG(text, opts);
	const grid = parseSvg(svg, opts);
	const enc = npmUqr.encode(text, opts);
	const border = opts.border === undefined ? 1 : opts.border;
	assert.equal(enc.size, enc.version * 4 + 17 + 2 * border);
	assert.deepEqual(grid, enc.data, 'the SVG draws exactly the matrix of uqr.encode');
	for (let i = 0; i < border; i++)
		for (let j = 0; j < enc.size; j++)
			assert.ok(!grid[i][j] && !grid[enc.size - 1 - i][j] && !grid[j][i] && !grid[j][enc.size - 1 - i], 'quiet zone is light');

	const { plain, strict } = decodeBoth(grid);
	const what = `v${enc.version}-${opts.ecc} mask ${enc.maskPattern}`;
	assert.ok(plain, `jsQR read the symbol (${what})`);
	assert.equal(plain.data, text);
	assert.ok(strict, `strict jsQR read the symbol (${what})`);
	assert.equal(strict.data, text);
	assert.equal(strict.version, enc.version);
	assert.equal(strict.level, opts.ecc || 'L', 'error correction level in the format information');
	assert.equal(strict.formatInfo.dataMask, enc.maskPattern, 'mask in the format information');
	assert.deepEqual(Array.from(strict.binaryData), Array.from(Buffer.from(text, 'utf8')));
	return { svg, grid, version: enc.version, mask: enc.maskPattern, size: enc.size };
}

const at = (ecc, extra) => Object.assign({}, QR_OPTIONS, { ecc }, extra);

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

test('the stand-in is built from the npm uqr release that luci-lib-uqr bundles', () => {
	// luci-lib-uqr's uqr.js is a minified uqr 0.1.2 (the release with both the
	// string-or-binary check and the class-field helpers); package.json pins it
	assert.equal(uqrStandin.PINNED, '0.1.2');
	assert.equal(uqrStandin.installedVersion(), uqrStandin.PINNED);
	const src = uqrStandin.source();
	assert.match(src, /^'use strict';\n/);
	assert.match(src, /\nreturn L\.Class\.extend\(\{\n\trenderSVG: function\(data, options\) \{/);
	assert.equal(typeof uqr.renderSVG, 'function');
	// LuCI's renderSVG: pixelSize 1 by default, width/height and no viewBox
	assert.match(uqr.renderSVG('x', {}), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="23" height="23"><rect/);
	assert.ok(!uqr.renderSVG('x', {}).includes('viewBox'));
});

test("the page's options: level M, a quiet zone of 4 modules", () => {
	assert.equal(QR_OPTIONS.ecc, 'M');
	assert.ok(QR_OPTIONS.border >= 4, 'ISO/IEC 18004 asks for 4 light modules around the symbol');
	assert.ok(!QR_OPTIONS.boostEcc, 'the level stays the one asked for');
	assert.ok(Number.isInteger(QR_OPTIONS.pixelSize) && QR_OPTIONS.pixelSize >= 1);
	assert.match(source(VIEW), /^'require uqr';$/m);
	assert.match(source(VIEW), /uqr\.renderSVG\(text, QR_OPTIONS\)/);
});

test('a realistic client configuration (~300 bytes) reads back exactly, at M and L', () => {
	assert.equal(CLIENT_CONF.length, 337);
	const m = assertRoundTrip(CLIENT_CONF);
	assert.equal(m.version, 14);            // 13-M holds 331 bytes, 14-M 362
	assert.equal(m.size, 73 + 8);
	assert.match(m.svg, /^<svg [^>]*width="324" height="324">/);   // 81 modules of 4 px
	const l = assertRoundTrip(CLIENT_CONF, at('L'));
	assert.equal(l.version, 12);            // 11-L holds 321 bytes, 12-L 367
	// and the real conf.js output for it too
	const conf = load('solowg/conf.js');
	const text = conf.clientConfig({
		privateKey: key(4), addresses: [ '10.0.0.3/32' ], dns: [ '10.0.0.1' ], serverPublicKey: key(5),
		presharedKey: key(6), endpoint: { host: '2001:db8::1', port: 51820 }, persistentKeepalive: 25
	});
	assertRoundTrip(text);
});

test('short texts', () => {
	for (const t of [ 'a', 'hello', 'openwrt.org', 'x'.repeat(14) ]) {
		const s = assertRoundTrip(t);
		assert.equal(s.version, 1, t);
		assert.equal(s.size, 21 + 8);
	}
	assert.equal(assertRoundTrip('x'.repeat(15)).version, 2);
	assert.equal(assertRoundTrip('x'.repeat(17), at('L')).version, 1);
	// uqr picks numeric and alphanumeric mode for such texts; they read back the same
	assert.equal(assertRoundTrip('0123456789').version, 1);
	assert.equal(assertRoundTrip('HELLO WORLD').version, 1);
	assert.equal(assertRoundTrip('').version, 1);
	for (const ecc of [ 'L', 'M', 'Q', 'H' ])
		assertRoundTrip('solowg ' + ecc, at(ecc));
	// boostEcc is off unless asked for: a short text keeps level L, not H
	assert.equal(decodeBoth(npmUqr.encode('hi', { ecc: 'L', border: 4 }).data).strict.level, 'L');
	assert.equal(decodeBoth(npmUqr.encode('hi', { ecc: 'L', border: 4, boostEcc: true }).data).strict.level, 'H');
});

test('long texts need large versions (10, 20, 40); past version 40 renderSVG throws', () => {
	let seed = 7;
	const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
	const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \n[]#.:,';
	const text = (n) => Array.from({ length: n }, () => chars[Math.floor(rnd() * chars.length)]).join('');

	assert.equal(assertRoundTrip(text(400)).version, 15);        // 14-M holds 362, 15-M 412
	assert.equal(assertRoundTrip(text(1000)).version, 26);       // 25-M holds 997, 26-M 1062
	const c = assertRoundTrip(text(2331));
	assert.equal(c.version, 40);
	assert.equal(c.size, 177 + 8);
	assert.equal(assertRoundTrip(text(2953), at('L')).version, 40);
	// the page shows the message of what renderSVG throws
	assert.throws(() => uqr.renderSVG(text(2332), QR_OPTIONS), { name: 'RangeError', message: 'Data too long' });
	assert.throws(() => uqr.renderSVG(text(2954), at('L')), RangeError);
});

test('UTF-8 text', () => {
	const texts = [
		'# Name = Jürgen’s Handy\nEndpoint = vpn.example.net:51820',
		'Grüße aus Köln — 東京 — Ελλάδα — 😀🚀',
		'ключ = ' + key(9),
	];
	for (const t of texts)
		assertRoundTrip(t);
	// capacity counts bytes, not characters
	assert.equal(assertRoundTrip('é'.repeat(7)).version, 1);    // 14 bytes
	assert.equal(assertRoundTrip('é'.repeat(8)).version, 2);    // 16 bytes
	// uqr encodes with encodeURI, which refuses a lone surrogate; the page shows the error
	assert.throws(() => uqr.renderSVG('\ud800x', QR_OPTIONS), URIError);
});

test('every mask reads back, with and without version information', () => {
	for (const [ text, ecc ] of [ [ 'mask test', 'M' ], [ CLIENT_CONF, 'L' ], [ 'v'.repeat(120), 'Q' ] ]) {
		const forced = [];
		for (let mask = 0; mask < 8; mask++) {
			const s = assertRoundTrip(text, at(ecc, { maskPattern: mask }));
			assert.equal(s.mask, mask);
			forced.push(s.svg);
		}
		// the automatic choice is one of the eight, drawn the same
		const auto = assertRoundTrip(text, at(ecc));
		assert.equal(auto.svg, forced[auto.mask]);
	}
	assert.throws(() => uqr.renderSVG('x', at('M', { maskPattern: 8 })), RangeError);
});

test('version selection bounds for every version, at L and M', () => {
	// byte-mode capacities of the standard's table (Table 7)
	const known = {
		1: { L: 17, M: 14, Q: 11, H: 7 }, 2: { L: 32, M: 26, Q: 20, H: 14 },
		7: { L: 154, M: 122, Q: 86, H: 64 }, 10: { L: 271, M: 213, Q: 151, H: 119 },
		40: { L: 2953, M: 2331, Q: 1663, H: 1273 }
	};
	for (const v of Object.keys(known))
		for (const ecl of 'LMQH')
			assert.equal(capacity(+v, ecl), known[v][ecl], `capacity ${v}-${ecl}`);
	const totals = { 1: 26, 2: 44, 7: 196, 10: 346, 40: 3706 };
	for (const v of Object.keys(totals))
		assert.equal(totalCodewords(+v), totals[v], `codewords of version ${v}`);
	assert.equal(capacity(13, 'M'), 331);
	assert.equal(capacity(14, 'M'), 362);
	assert.equal(capacity(11, 'L'), 321);
	assert.equal(capacity(12, 'L'), 367);

	for (const ecc of 'LM') {
		let prev = 0;
		for (let v = 1; v <= 40; v++) {
			const cap = capacity(v, ecc);
			assert.ok(cap > prev, `capacity grows at ${v}-${ecc}`);
			prev = cap;
			const fits = npmUqr.encode('z'.repeat(cap), { ecc, border: 0, maskPattern: 0 });
			assert.equal(fits.version, v, `${cap} bytes at ${ecc} -> version ${v}`);
			assert.equal(fits.size, 17 + 4 * v);
			if (v < 40)
				assert.equal(npmUqr.encode('z'.repeat(cap + 1), { ecc, border: 0, maskPattern: 0 }).version, v + 1);
		}
	}
	// a larger version may be asked for
	assert.equal(assertRoundTrip('hi', at('M', { minVersion: 8 })).version, 8);
});

test('alignment patterns where the standard puts them', () => {
	assert.deepEqual(alignmentPositions(2), [ 6, 18 ]);
	assert.deepEqual(alignmentPositions(7), [ 6, 22, 38 ]);
	assert.deepEqual(alignmentPositions(15), [ 6, 26, 48, 70 ]);
	assert.deepEqual(alignmentPositions(23), [ 6, 30, 54, 78, 102 ]);
	assert.deepEqual(alignmentPositions(32), [ 6, 34, 60, 86, 112, 138 ]);
	assert.deepEqual(alignmentPositions(40), [ 6, 30, 58, 86, 114, 142, 170 ]);
	for (let v = 1; v <= 40; v++) {
		const grid = npmUqr.encode('a', { ecc: 'M', border: 0, minVersion: v, maskPattern: v % 8 }).data;
		const pos = alignmentPositions(v), last = pos.length - 1;
		for (let i = 0; i <= last; i++)
			for (let j = 0; j <= last; j++) {
				if ((i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0))
					continue;   // the finder patterns' corners
				for (let dy = -2; dy <= 2; dy++)
					for (let dx = -2; dx <= 2; dx++)
						assert.equal(grid[pos[i] + dy][pos[j] + dx], Math.max(Math.abs(dx), Math.abs(dy)) !== 1,
							`alignment pattern of version ${v} at (${pos[j]}, ${pos[i]})`);
			}
	}
});

test('the strict decoder refuses a damaged symbol that plain jsQR corrects', () => {
	const grid = parseSvg(uqr.renderSVG('damage me', QR_OPTIONS), QR_OPTIONS);
	const last = grid.length - 1 - QR_OPTIONS.border;
	const bad = grid.map((row) => row.slice());
	bad[last][last] = !bad[last][last];   // first data bit
	const img = render(bad);
	assert.equal(jsQR(img.data, img.width, img.height).data, 'damage me');
	assert.equal(jsQRStrict(img.data, img.width, img.height), null);
	// a mirrored (transposed) symbol: plain jsQR reads it, strict does not
	const t = grid.map((row, y) => row.map((_, x) => grid[x][y]));
	const timg = render(t);
	assert.equal(jsQR(timg.data, timg.width, timg.height).data, 'damage me');
	assert.equal(jsQRStrict(timg.data, timg.width, timg.height), null);
});

test("renderSVG's picture: pixelSize, colours, border", () => {
	const s = assertRoundTrip(CLIENT_CONF);
	const px = (s.size * QR_OPTIONS.pixelSize).toString();
	assert.ok(s.svg.startsWith(`<svg xmlns="http://www.w3.org/2000/svg" width="${px}" height="${px}">`));
	// drawn at 1 px a module, the same modules
	assert.deepEqual(parseSvg(uqr.renderSVG(CLIENT_CONF, at('M', { pixelSize: 1 })), at('M', { pixelSize: 1 })), s.grid);
	const small = uqr.renderSVG('x', { ecc: 'M', border: 0, pixelSize: 2, whiteColor: 'none', blackColor: '#123' });
	assert.ok(small.includes('width="42" height="42"'));
	assert.ok(small.includes('<rect fill="none"') && small.includes('<path fill="#123"'));
	assert.equal(parseSvg(small, { pixelSize: 2, whiteColor: 'none', blackColor: '#123' }).length, 21);
});

test('every version 1 to 40 reads back (strict), filled to capacity at M', () => {
	for (let v = 1; v <= 40; v++) {
		const n = capacity(v, 'M');
		// printable ASCII with lowercase letters, so uqr takes byte mode
		const text = Array.from({ length: n }, (_, i) => String.fromCharCode(33 + (i * 7 + v) % 94)).join('');
		const s = assertRoundTrip(text, at('M', { maskPattern: v % 8 }));
		assert.equal(s.version, v);
	}
});

test('no QR encoder of our own is shipped: luci-lib-uqr provides it', () => {
	const resources = path.join(__dirname, '..', 'htdocs', 'luci-static', 'resources');
	assert.ok(!fs.existsSync(path.join(resources, 'solowg', 'qr.js')));
	assert.ok(!fs.existsSync(path.join(resources, 'uqr.js')), 'uqr.js belongs to luci-lib-uqr');
	const makefile = fs.readFileSync(path.join(__dirname, '..', 'Makefile'), 'utf8');
	assert.match(makefile, /^LUCI_DEPENDS:=.*\+luci-lib-uqr\b/m);
});
