'use strict';
// Loads a shipped LuCI module file the way LuCI does: the file is the body of
// a function whose parameters are window, document, L and the required
// classes; the module returns baseclass.extend({...}). Here baseclass is a
// stand-in whose extend returns the properties object itself, and `_` (LuCI's
// translation function) returns its argument.

const fs = require('node:fs');
const path = require('node:path');

const RESOURCES = path.join(__dirname, '..', 'htdocs', 'luci-static', 'resources');

function load(relPath, translate) {
	const file = path.join(RESOURCES, relPath);
	const source = fs.readFileSync(file, 'utf8');
	const baseclass = { extend: (o) => o };
	translate = translate || ((s) => s);
	const factory = new Function('window', 'document', 'L', 'baseclass', '_', 'N_',
		source + '\n//# sourceURL=' + file);
	return factory(undefined, undefined, undefined, baseclass, translate, (n, s) => s);
}

function source(relPath) {
	return fs.readFileSync(path.join(RESOURCES, relPath), 'utf8');
}

module.exports = { load, source, RESOURCES };
