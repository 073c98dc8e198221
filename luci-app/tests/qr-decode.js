'use strict';
// Reads QR codes drawn by LuCI's uqr back to text, for qr.test.js and
// check-dom.js: the SVG path becomes a module grid, the grid pixels, and the
// pixels are decoded by the npm package jsqr (1.4.0), both as published and
// in a strict variant of the same file that refuses what the published
// decoder forgives (format or version information not matching exactly in
// both copies, any Reed-Solomon correction, a mirrored symbol), so a wrong bit
// cannot hide behind the decoder's error correction. The strict variant also
// reports the format information it read (error correction level and mask),
// and corrects jsQR's table of alignment pattern centres for version 23:
// jsQR 1.4.0 has 6, 30, 54, 74, 102 where ISO/IEC 18004 (Annex E) has 6, 30,
// 54, 78, 102 (cozmo/jsQR#251), so as published it reads the modules of that
// pattern as data and only its error correction saves it.

const assert = require('node:assert/strict');
const fs = require('node:fs');

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
		// report the format information that was read
		[ 'return decodeData_1.decode(resultBytes, version.versionNumber);',
		  'return Object.assign(decodeData_1.decode(resultBytes, version.versionNumber), { formatInfo: formatInfo });' ],
		[ 'version: decoded.version,',
		  'version: decoded.version, formatInfo: decoded.formatInfo,' ],
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

// jsQR's errorCorrectionLevel indexes its tables, which list L, M, Q, H; its
// format table maps each 15-bit format word of the standard to that index
const LEVELS = [ 'L', 'M', 'Q', 'H' ];

// Module grid (grid[y][x], true = dark) from the d attribute of the path LuCI's
// uqr draws: one 'M{x},{y}h{p}v{p}h-{p}z' square of side pixelSize per dark
// module, nothing else. Throws on any other command, an off-grid square, one
// drawn twice, or one outside dim x dim pixels.
function gridFromPath(d, dim, pixelSize) {
	const n = dim / pixelSize;
	assert.ok(Number.isInteger(n) && n > 0, `${dim} px is a whole number of ${pixelSize} px modules`);
	const grid = Array.from({ length: n }, () => Array(n).fill(false));
	const re = /M(\d+),(\d+)h(\d+)v(\d+)h-(\d+)z/g;
	let m, consumed = 0;
	while ((m = re.exec(d)) !== null) {
		assert.equal(m.index, consumed, `path command at ${consumed}`);
		const [ x, y, h, v, back ] = m.slice(1).map(Number);
		assert.ok(h === pixelSize && v === pixelSize && back === pixelSize, `square of ${pixelSize} px: ${m[0]}`);
		assert.ok(x % pixelSize === 0 && y % pixelSize === 0 && x < dim && y < dim, `on the module grid: ${m[0]}`);
		assert.equal(grid[y / pixelSize][x / pixelSize], false, `drawn once: ${m[0]}`);
		grid[y / pixelSize][x / pixelSize] = true;
		consumed += m[0].length;
	}
	assert.equal(consumed, d.length, 'the path is only module squares');
	return grid;
}

// grid -> RGBA pixels, `scale` pixels a module, `margin` extra light modules around
function render(grid, scale = 4, margin = 0) {
	const size = grid.length, dim = (size + 2 * margin) * scale;
	const data = new Uint8ClampedArray(dim * dim * 4).fill(255);
	for (let y = 0; y < size; y++)
		for (let x = 0; x < size; x++)
			if (grid[y][x])
				for (let dy = 0; dy < scale; dy++)
					for (let dx = 0; dx < scale; dx++) {
						const i = (((y + margin) * scale + dy) * dim + (x + margin) * scale + dx) * 4;
						data[i] = data[i + 1] = data[i + 2] = 0;
					}
	return { data, width: dim, height: dim };
}

// Both decoders on one grid (which must bring its own quiet zone).
function decodeBoth(grid) {
	const img = render(grid);
	const plain = jsQR(img.data, img.width, img.height);
	const strict = jsQRStrict(img.data, img.width, img.height);
	if (strict)
		strict.level = LEVELS[strict.formatInfo.errorCorrectionLevel];
	return { plain, strict };
}

module.exports = { jsQR, jsQRStrict, gridFromPath, render, decodeBoth };
