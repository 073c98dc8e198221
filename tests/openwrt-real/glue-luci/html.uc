// A stand-in for ucode-mod-html (LuCI's contrib/package, not in ../shared/openwrt-src): the
// two functions LuCI's dispatcher imports from it, written for the tests.
'use strict';

// Text made safe for an element's content or a quoted attribute.
export function entityencode(s) {
	s = `${s ?? ''}`;
	for (let p in [ [ '&', '&amp;' ], [ '<', '&lt;' ], [ '>', '&gt;' ], [ '"', '&#34;' ], [ "'", '&#39;' ] ])
		s = replace(s, p[0], p[1]);
	return s;
}

// Text without its tags (for titles and translations that carry markup).
export function striptags(s) {
	return replace(`${s ?? ''}`, /<[^>]*>/g, '');
}
