'use strict';
'require baseclass';

/*
 * QR Code encoder (ISO/IEC 18004) for luci-app-solowg.
 *
 * Byte mode (the text is encoded as UTF-8), error correction levels L, M, Q
 * and H, smallest version 1-40 that holds the text, Reed-Solomon error
 * correction over GF(256) (polynomial x^8+x^4+x^3+x^2+1), block interleaving,
 * all eight data masks scored with the four penalty rules, format and version
 * information (BCH codes). Written for this package from the standard; no
 * other package is needed on the router or in the browser.
 *
 * Pure functions only: no DOM, no LuCI calls. LuCI evaluates this file as a
 * function body and instantiates the returned class.
 */

/* Error correction codewords per block, index [level][version - 1]. */
var ECC_PER_BLOCK = {
	L: [ 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28,
	     28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30 ],
	M: [ 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26,
	     26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28 ],
	Q: [ 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30,
	     28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30 ],
	H: [ 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28,
	     30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30 ]
};

/* Number of error correction blocks, index [level][version - 1]. */
var NUM_BLOCKS = {
	L: [ 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8,
	     8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25 ],
	M: [ 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16,
	     17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49 ],
	Q: [ 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20,
	     23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68 ],
	H: [ 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25,
	     25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81 ]
};

/* The two format-information bits of each level. */
var LEVEL_BITS = { L: 1, M: 0, Q: 3, H: 2 };

/* GF(256) exponent and logarithm tables. */
var GF_EXP = new Array(512), GF_LOG = new Array(256);

(function() {
	var x = 1;
	for (var i = 0; i < 255; i++) {
		GF_EXP[i] = x;
		GF_LOG[x] = i;
		x <<= 1;
		if (x & 0x100)
			x ^= 0x11d;
	}
	for (var j = 255; j < 512; j++)
		GF_EXP[j] = GF_EXP[j - 255];
})();

function gfMul(a, b) {
	return (a === 0 || b === 0) ? 0 : GF_EXP[GF_LOG[a] + GF_LOG[b]];
}

/* Generator polynomial of the given degree: prod (x - a^i), i = 0 .. degree-1.
 * Coefficients from the highest power down, the leading 1 left out. */
var generatorCache = {};

function generator(degree) {
	if (generatorCache[degree])
		return generatorCache[degree];

	var poly = [ 1 ];
	for (var i = 0; i < degree; i++) {
		var next = new Array(poly.length + 1);
		for (var k = 0; k < next.length; k++)
			next[k] = 0;
		for (var j = 0; j < poly.length; j++) {
			next[j] ^= poly[j];
			next[j + 1] ^= gfMul(poly[j], GF_EXP[i]);
		}
		poly = next;
	}

	return (generatorCache[degree] = poly.slice(1));
}

/* Remainder of data(x) * x^degree divided by the generator: the ECC bytes. */
function reedSolomon(data, degree) {
	var gen = generator(degree), rem = [];
	for (var i = 0; i < degree; i++)
		rem.push(0);

	for (var d = 0; d < data.length; d++) {
		var factor = data[d] ^ rem.shift();
		rem.push(0);
		for (var k = 0; k < degree; k++)
			rem[k] ^= gfMul(gen[k], factor);
	}

	return rem;
}

function checkVersion(version) {
	if (!(version >= 1 && version <= 40 && version === Math.floor(version)))
		throw new RangeError(_('QR code version must be 1 to 40'));
}

function checkLevel(ecl) {
	var level = String(ecl == null ? 'M' : ecl).toUpperCase();
	if (!LEVEL_BITS.hasOwnProperty(level))
		throw new RangeError(_('QR code error correction level must be L, M, Q or H'));
	return level;
}

/* Positions (row = column) of alignment pattern centres. */
function alignmentPositions(version) {
	if (version === 1)
		return [];

	var count = Math.floor(version / 7) + 2,
	    size = version * 4 + 17,
	    step = (version === 32) ? 26 : Math.ceil((version * 4 + 4) / (count * 2 - 2)) * 2,
	    pos = [];

	/* evenly spaced back from the last one at size - 7; the first is at 6 */
	for (var i = 0; i < count - 1; i++)
		pos.unshift(size - 7 - i * step);
	pos.unshift(6);

	return pos;
}

/* Modules available for data and ECC (all but the function patterns). */
function rawDataModules(version) {
	var size = version * 4 + 17,
	    n = size * size;

	n -= 3 * 64;                        /* finders with separators */
	n -= 2 * (size - 16);               /* timing patterns */
	n -= 31;                            /* format information (2 x 15) + dark module */

	var a = alignmentPositions(version).length;
	if (a > 0) {
		n -= (a * a - 3) * 25;          /* alignment patterns */
		n += 2 * (a - 2) * 5;           /* ... those on the timing lines were counted twice */
	}

	if (version >= 7)
		n -= 36;                        /* version information (2 x 18) */

	return n;
}

function totalCodewords(version) {
	return Math.floor(rawDataModules(version) / 8);
}

function dataCodewords(version, level) {
	return totalCodewords(version) -
		ECC_PER_BLOCK[level][version - 1] * NUM_BLOCKS[level][version - 1];
}

function countBits(version) {
	return version <= 9 ? 8 : 16;
}

/* Largest number of bytes a version holds in byte mode at a level. */
function capacity(version, ecl) {
	checkVersion(version);
	var level = checkLevel(ecl),
	    bits = dataCodewords(version, level) * 8 - 4 - countBits(version);
	return Math.min(Math.floor(bits / 8), (1 << countBits(version)) - 1);
}

/* UTF-8 bytes of a JavaScript string (lone surrogates become U+FFFD). */
function utf8(text) {
	var out = [], s = String(text);

	for (var i = 0; i < s.length; i++) {
		var c = s.charCodeAt(i);

		if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
			var d = s.charCodeAt(i + 1);
			if (d >= 0xdc00 && d <= 0xdfff) {
				c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
				i++;
			}
		}
		if (c >= 0xd800 && c <= 0xdfff)
			c = 0xfffd;

		if (c < 0x80)
			out.push(c);
		else if (c < 0x800)
			out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
		else if (c < 0x10000)
			out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
		else
			out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
	}

	return out;
}

/* Smallest version at least minVersion holding n bytes, or 0. */
function chooseVersion(n, level, minVersion) {
	for (var v = Math.max(1, minVersion || 1); v <= 40; v++)
		if (capacity(v, level) >= n)
			return v;
	return 0;
}

/* Data codewords: mode, count, bytes, terminator, bit padding, pad bytes. */
function dataStream(bytes, version, level) {
	var bits = [], cap = dataCodewords(version, level) * 8;

	function put(value, len) {
		for (var i = len - 1; i >= 0; i--)
			bits.push((value >>> i) & 1);
	}

	put(4, 4);                          /* byte mode indicator 0100 */
	put(bytes.length, countBits(version));
	for (var i = 0; i < bytes.length; i++)
		put(bytes[i], 8);

	put(0, Math.min(4, cap - bits.length));
	put(0, (8 - bits.length % 8) % 8);

	var out = [];
	for (var b = 0; b < bits.length; b += 8) {
		var byte = 0;
		for (var k = 0; k < 8; k++)
			byte = (byte << 1) | bits[b + k];
		out.push(byte);
	}

	for (var pad = 0; out.length < cap / 8; pad ^= 1)
		out.push(pad ? 0x11 : 0xec);

	return out;
}

/* Split into blocks, add ECC, interleave. */
function interleave(data, version, level) {
	var nBlocks = NUM_BLOCKS[level][version - 1],
	    eccLen = ECC_PER_BLOCK[level][version - 1],
	    total = totalCodewords(version),
	    nShort = nBlocks - total % nBlocks,
	    shortData = Math.floor(total / nBlocks) - eccLen,
	    blocks = [], eccs = [], off = 0;

	for (var i = 0; i < nBlocks; i++) {
		var len = shortData + (i < nShort ? 0 : 1),
		    block = data.slice(off, off + len);
		off += len;
		blocks.push(block);
		eccs.push(reedSolomon(block, eccLen));
	}

	var out = [];
	for (var col = 0; col <= shortData; col++)
		for (var b = 0; b < nBlocks; b++)
			if (col < blocks[b].length)
				out.push(blocks[b][col]);
	for (var e = 0; e < eccLen; e++)
		for (var b2 = 0; b2 < nBlocks; b2++)
			out.push(eccs[b2][e]);

	return out;
}

function formatBits(level, mask) {
	var data = (LEVEL_BITS[level] << 3) | mask, rem = data;
	for (var i = 0; i < 10; i++)
		rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
	return ((data << 10) | (rem & 0x3ff)) ^ 0x5412;
}

function versionBits(version) {
	var rem = version;
	for (var i = 0; i < 12; i++)
		rem = (rem << 1) ^ ((rem >>> 11) * 0x1f25);
	return (version << 12) | (rem & 0xfff);
}

var MASKS = [
	function(y, x) { return (y + x) % 2 === 0 },
	function(y, x) { return y % 2 === 0 },
	function(y, x) { return x % 3 === 0 },
	function(y, x) { return (y + x) % 3 === 0 },
	function(y, x) { return (Math.floor(y / 2) + Math.floor(x / 3)) % 2 === 0 },
	function(y, x) { return (y * x) % 2 + (y * x) % 3 === 0 },
	function(y, x) { return ((y * x) % 2 + (y * x) % 3) % 2 === 0 },
	function(y, x) { return ((y + x) % 2 + (y * x) % 3) % 2 === 0 }
];

/* A symbol under construction: modules[y][x] and which are function modules. */
function Matrix(version) {
	this.version = version;
	this.size = version * 4 + 17;
	this.modules = [];
	this.isFunction = [];
	for (var y = 0; y < this.size; y++) {
		this.modules.push([]);
		this.isFunction.push([]);
		for (var x = 0; x < this.size; x++) {
			this.modules[y].push(false);
			this.isFunction[y].push(false);
		}
	}
}

Matrix.prototype.setFunction = function(x, y, dark) {
	this.modules[y][x] = !!dark;
	this.isFunction[y][x] = true;
};

Matrix.prototype.drawFunctionPatterns = function() {
	var size = this.size, x, y;

	/* timing patterns (finders drawn afterwards overwrite their ends) */
	for (var i = 0; i < size; i++) {
		this.setFunction(6, i, i % 2 === 0);
		this.setFunction(i, 6, i % 2 === 0);
	}

	/* finder patterns with their light separators */
	var corners = [ [ 3, 3 ], [ size - 4, 3 ], [ 3, size - 4 ] ];
	for (var c = 0; c < corners.length; c++) {
		for (var dy = -4; dy <= 4; dy++) {
			for (var dx = -4; dx <= 4; dx++) {
				x = corners[c][0] + dx;
				y = corners[c][1] + dy;
				if (x < 0 || y < 0 || x >= size || y >= size)
					continue;
				var d = Math.max(Math.abs(dx), Math.abs(dy));
				this.setFunction(x, y, d !== 2 && d !== 4);
			}
		}
	}

	/* alignment patterns, except where they would overlap a finder */
	var pos = alignmentPositions(this.version), n = pos.length;
	for (var a = 0; a < n; a++) {
		for (var b = 0; b < n; b++) {
			if ((a === 0 && b === 0) || (a === 0 && b === n - 1) || (a === n - 1 && b === 0))
				continue;
			for (var ay = -2; ay <= 2; ay++)
				for (var ax = -2; ax <= 2; ax++)
					this.setFunction(pos[a] + ax, pos[b] + ay,
						Math.max(Math.abs(ax), Math.abs(ay)) !== 1);
		}
	}

	/* reserve format areas now (real bits come after masking) */
	this.drawFormat(0, 'M');

	if (this.version >= 7) {
		var vb = versionBits(this.version);
		for (var k = 0; k < 18; k++) {
			var bit = (vb >>> k) & 1, p = size - 11 + k % 3, q = Math.floor(k / 3);
			this.setFunction(p, q, bit);    /* top right, 6 rows x 3 columns */
			this.setFunction(q, p, bit);    /* bottom left, 3 rows x 6 columns */
		}
	}
};

Matrix.prototype.drawFormat = function(mask, level) {
	var fb = formatBits(level, mask), size = this.size, i;

	function bit(k) { return (fb >>> k) & 1 }

	/* around the top left finder */
	for (i = 0; i <= 5; i++)
		this.setFunction(8, i, bit(i));
	this.setFunction(8, 7, bit(6));
	this.setFunction(8, 8, bit(7));
	this.setFunction(7, 8, bit(8));
	for (i = 9; i < 15; i++)
		this.setFunction(14 - i, 8, bit(i));

	/* second copy: below the top right and beside the bottom left finder */
	for (i = 0; i < 8; i++)
		this.setFunction(size - 1 - i, 8, bit(i));
	for (i = 8; i < 15; i++)
		this.setFunction(8, size - 15 + i, bit(i));

	this.setFunction(8, size - 8, true);   /* the dark module */
};

/* Place codewords in the two-column zigzag, from the bottom right corner. */
Matrix.prototype.placeCodewords = function(codewords) {
	var size = this.size, bitIndex = 0, nBits = codewords.length * 8, upward = true;

	for (var right = size - 1; right >= 1; right -= 2) {
		if (right === 6)
			right = 5;                      /* skip the vertical timing column */

		for (var v = 0; v < size; v++) {
			var y = upward ? size - 1 - v : v;
			for (var j = 0; j < 2; j++) {
				var x = right - j;
				if (this.isFunction[y][x])
					continue;
				if (bitIndex < nBits)
					this.modules[y][x] = ((codewords[bitIndex >>> 3] >>> (7 - (bitIndex & 7))) & 1) === 1;
				bitIndex++;                 /* remainder bits stay light */
			}
		}

		upward = !upward;
	}
};

Matrix.prototype.applyMask = function(mask) {
	var fn = MASKS[mask];
	for (var y = 0; y < this.size; y++)
		for (var x = 0; x < this.size; x++)
			if (!this.isFunction[y][x] && fn(y, x))
				this.modules[y][x] = !this.modules[y][x];
};

/* Penalty score of a finished symbol (rules N1 to N4). */
function penalty(modules) {
	var size = modules.length, score = 0, dark = 0, x, y;

	function line(get) {
		var s = 0, run = 0, color = null, i;

		/* N1: five or more same-coloured modules in a row: 3 + (run - 5) */
		for (i = 0; i < size; i++) {
			var m = get(i);
			if (m === color) {
				run++;
			}
			else {
				if (run >= 5)
					s += run - 2;
				color = m;
				run = 1;
			}
		}
		if (run >= 5)
			s += run - 2;

		/* N3: 1:1:3:1:1 finder-like pattern with four light modules on
		 * either side; outside the symbol counts as light (quiet zone) */
		for (i = -10; i < size; i++) {
			var w = '';
			for (var k = 0; k < 11; k++) {
				var p = i + k;
				w += (p >= 0 && p < size && get(p)) ? '1' : '0';
			}
			if (w === '10111010000' || w === '00001011101')
				s += 40;
		}

		return s;
	}

	for (y = 0; y < size; y++)
		score += line(function(i) { return modules[y][i] });
	for (x = 0; x < size; x++)
		score += line(function(i) { return modules[i][x] });

	/* N2: each 2x2 block of one colour: 3 */
	for (y = 0; y + 1 < size; y++)
		for (x = 0; x + 1 < size; x++) {
			var c = modules[y][x];
			if (c === modules[y][x + 1] && c === modules[y + 1][x] && c === modules[y + 1][x + 1])
				score += 3;
		}

	/* N4: 10 for each full 5 % the dark proportion is away from 50 % */
	for (y = 0; y < size; y++)
		for (x = 0; x < size; x++)
			if (modules[y][x])
				dark++;
	score += Math.floor(Math.abs(dark * 20 - size * size * 10) / (size * size)) * 10;

	return score;
}

/*
 * encode(text, ecl, opts) -> { size, modules: [[bool]] (modules[y][x], true = dark),
 *   version, ecl, mask }
 * ecl: 'L', 'M' (default), 'Q' or 'H'. opts (optional): { minVersion, mask }
 * to force a larger version or one mask (for tests). Throws a RangeError when
 * the text does not fit into version 40.
 */
function encode(text, ecl, opts) {
	var level = checkLevel(ecl),
	    bytes = utf8(text),
	    o = opts || {},
	    version = chooseVersion(bytes.length, level, o.minVersion);

	if (!version)
		throw new RangeError(_('Text too long for a QR code'));

	var codewords = interleave(dataStream(bytes, version, level), version, level),
	    base = new Matrix(version);

	base.drawFunctionPatterns();
	base.placeCodewords(codewords);

	var masks = (o.mask != null) ? [ +o.mask ] : [ 0, 1, 2, 3, 4, 5, 6, 7 ],
	    best = null, bestScore = Infinity;

	for (var i = 0; i < masks.length; i++) {
		if (!(masks[i] >= 0 && masks[i] <= 7))
			throw new RangeError(_('QR code mask must be 0 to 7'));

		var m = new Matrix(version);
		m.modules = base.modules.map(function(row) { return row.slice() });
		m.isFunction = base.isFunction;
		m.applyMask(masks[i]);
		m.drawFormat(masks[i], level);

		var score = penalty(m.modules);
		if (score < bestScore) {
			best = { matrix: m, mask: masks[i] };
			bestScore = score;
		}
	}

	return {
		size: best.matrix.size,
		modules: best.matrix.modules,
		version: version,
		ecl: level,
		mask: best.mask
	};
}

function xmlEscape(s) {
	return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;')
		.replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/*
 * toSVG(text, opts) -> '<svg ...>...</svg>'
 * opts: { ecl: 'M', margin: 4 (quiet zone in modules), scale: 4 (pixels per
 * module for width/height), dark: '#000', light: '#fff', title }
 * One path of horizontal runs of dark modules; the viewBox is in modules.
 */
function toSVG(text, opts) {
	var o = opts || {},
	    qr = encode(text, o.ecl || 'M'),
	    margin = (o.margin != null) ? Math.max(0, Math.floor(+o.margin)) : 4,
	    scale = (o.scale != null) ? +o.scale : 4,
	    dim = qr.size + margin * 2,
	    d = [];

	for (var y = 0; y < qr.size; y++) {
		for (var x = 0; x < qr.size; x++) {
			if (!qr.modules[y][x])
				continue;
			var run = 1;
			while (x + run < qr.size && qr.modules[y][x + run])
				run++;
			d.push('M' + (x + margin) + ',' + (y + margin) + 'h' + run + 'v1h-' + run + 'z');
			x += run - 1;
		}
	}

	return '<svg xmlns="http://www.w3.org/2000/svg" version="1.1" viewBox="0 0 ' + dim + ' ' + dim +
		'" width="' + (dim * scale) + '" height="' + (dim * scale) + '" shape-rendering="crispEdges">' +
		(o.title ? '<title>' + xmlEscape(o.title) + '</title>' : '') +
		'<rect width="' + dim + '" height="' + dim + '" fill="' + xmlEscape(o.light || '#fff') + '"/>' +
		'<path d="' + d.join('') + '" fill="' + xmlEscape(o.dark || '#000') + '"/>' +
		'</svg>';
}

return baseclass.extend({
	__name__: 'solowg.qr',

	encode: encode,
	toSVG: toSVG,

	/* helpers exposed for tests and callers that need them */
	capacity: capacity,
	utf8: utf8,
	penalty: penalty,
	alignmentPositions: alignmentPositions,
	totalCodewords: totalCodewords,
	dataCodewords: function(version, ecl) {
		checkVersion(version);
		return dataCodewords(version, checkLevel(ecl));
	},
	reedSolomon: reedSolomon
});
