'use strict';
'require baseclass';

/*
 * wg-quick configuration text, UCI conversion and display formatting for
 * luci-app-solowg. Pure functions only: no DOM, no LuCI calls besides the
 * translation function _(). LuCI evaluates this file as a function body and
 * instantiates the returned class.
 *
 * Parsed form (parseConf, toConf, uciToConf):
 *   { interface: { privateKey, addresses: [], listenPort, dns: [], mtu, fwmark },
 *     peers: [ { publicKey, presharedKey, allowedIPs: [], endpointHost,
 *                endpointPort, persistentKeepalive, description } ],
 *     errors: [ 'line N: ...' ], warnings: [ 'line N: ...' ] }
 * Absent single values are null; listenPort, mtu, endpointPort and
 * persistentKeepalive are numbers; fwmark is kept as written ('0x1f', '51820').
 */

var DEFAULT_PORT = 51820;

/* Keys of wg-quick that solowg does not use: accepted with a warning. */
var IGNORED_INTERFACE_KEYS = [ 'table', 'preup', 'postup', 'predown', 'postdown', 'saveconfig' ];

/* Lower-cased keys of wg and wg-quick, used to tell a commented-out setting
 * from a peer's name in the comment line before [Peer]. */
var KNOWN_KEYS = [ 'privatekey', 'address', 'listenport', 'dns', 'mtu', 'fwmark', 'publickey',
	'presharedkey', 'allowedips', 'endpoint', 'persistentkeepalive' ].concat(IGNORED_INTERFACE_KEYS);

/* '%s' and '%d' substitution in order; kept local so the module needs no
 * String.prototype.format (LuCI has one, node does not). */
function fmt(template) {
	var args = Array.prototype.slice.call(arguments, 1), i = 0;
	return String(template).replace(/%([sd%])/g, function(m, t) {
		if (t === '%')
			return '%';
		var v = args[i++];
		return (t === 'd') ? String(Math.floor(+v || 0)) : String(v);
	});
}

/* Base64 of exactly 32 bytes: 43 characters, the last one with its two low
 * bits zero, and one '=' of padding. */
function validKey(b64) {
	return typeof(b64) === 'string' && /^[A-Za-z0-9+\/]{42}[AEIMQUYcgkosw048]=$/.test(b64);
}

function isIPv4(s) {
	var m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
	if (!m)
		return false;
	for (var i = 1; i <= 4; i++)
		if (+m[i] > 255 || (m[i].length > 1 && m[i].charAt(0) === '0'))
			return false;
	return true;
}

function isIPv6(s) {
	if (typeof(s) !== 'string' || s.indexOf(':') < 0 || !/^[0-9A-Fa-f:.]+$/.test(s))
		return false;

	var groups = 8, str = s;

	/* embedded IPv4 at the end counts as two groups */
	var dot = str.lastIndexOf(':');
	if (str.indexOf('.') >= 0) {
		if (!isIPv4(str.substring(dot + 1)))
			return false;
		str = str.substring(0, dot + 1) + '0:0';
	}

	var halves = str.split('::');
	if (halves.length > 2)
		return false;

	function parts(h) {
		return (h === '') ? [] : h.split(':');
	}

	var head = parts(halves[0]), tail = (halves.length === 2) ? parts(halves[1]) : [],
	    all = head.concat(tail);

	for (var i = 0; i < all.length; i++)
		if (!/^[0-9A-Fa-f]{1,4}$/.test(all[i]))
			return false;

	return (halves.length === 2) ? all.length < groups : all.length === groups;
}

/* An address with an optional prefix length: 10.0.0.1/24, fd00::1/64, 10.0.0.2 */
function validCidr(s) {
	var m = /^([^\/]+)(?:\/(\d{1,3}))?$/.exec(String(s));
	if (!m)
		return false;
	if (isIPv4(m[1]))
		return m[2] == null || +m[2] <= 32;
	if (isIPv6(m[1]))
		return m[2] == null || +m[2] <= 128;
	return false;
}

/* 'host:port', '[v6]:port' -> { host, port } or null. A bare IPv6 address
 * without brackets is refused (its port cannot be told apart). */
function splitEndpoint(s) {
	var str = String(s).trim(), m;

	if ((m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(str)) != null) {
		if (!isIPv6(m[1]))
			return null;
		return (+m[2] >= 1 && +m[2] <= 65535) ? { host: m[1], port: +m[2] } : null;
	}

	if ((m = /^([^:\[\]\s]+):(\d{1,5})$/.exec(str)) != null)
		return (+m[2] >= 1 && +m[2] <= 65535) ? { host: m[1], port: +m[2] } : null;

	return null;
}

/* Inverse of splitEndpoint; IPv6 addresses get brackets. */
function formatEndpoint(host, port) {
	var h = String(host);
	if (h.indexOf(':') >= 0 && h.charAt(0) !== '[')
		h = '[' + h + ']';
	return h + ':' + ((port != null && port !== '') ? port : DEFAULT_PORT);
}

function splitList(value) {
	return String(value).split(/[\s,]+/).filter(function(e) { return e !== '' });
}

function toArray(val) {
	if (val == null)
		return [];
	if (Array.isArray(val))
		return val.map(String).reduce(function(a, e) { return a.concat(splitList(e)) }, []);
	return splitList(val);
}

function emptyInterface() {
	return { privateKey: null, addresses: [], listenPort: null, dns: [], mtu: null, fwmark: null };
}

function emptyPeer() {
	return {
		publicKey: null, presharedKey: null, allowedIPs: [], endpointHost: null,
		endpointPort: null, persistentKeepalive: null, description: null
	};
}

/* Text of a comment line, or null if the line is no comment. */
function commentText(line) {
	var m = /^\s*#(.*)$/.exec(line);
	return m ? m[1].trim() : null;
}

/*
 * parseConf(text) -> { interface, peers, errors, warnings }
 * Keys are case-insensitive; lists are split on commas (and blanks) and
 * repeated keys add to a list; '#' starts a comment (also after a value);
 * CRLF is accepted. A peer's description comes from a comment '# Name = x'
 * (or 'Description') inside its [Peer] section or just before it, or else
 * from a plain comment line directly before its [Peer] line. Every [Peer]
 * is kept, in order.
 */
function parseConf(text) {
	var res = { interface: emptyInterface(), peers: [], errors: [], warnings: [] },
	    lines = String(text == null ? '' : text).replace(/^\uFEFF/, '').split(/\r\n|\r|\n/),
	    section = null,           /* 'interface', 'peer', 'other' or null */
	    peer = null,
	    peerLine = 0,
	    seenInterface = false,
	    seen = {},                /* single-valued keys seen in the current section */
	    pendingName = null,       /* '# Name = x' before a [Peer] */
	    lastComment = null;       /* plain comment on the line before */

	function err(n, msg) { res.errors.push(fmt(_('line %d: %s'), n, msg)) }
	function warn(n, msg) { res.warnings.push(fmt(_('line %d: %s'), n, msg)) }

	function finishPeer() {
		if (peer && !peer.publicKey)
			err(peerLine, _('[Peer] without PublicKey'));
		peer = null;
	}

	function once(n, key, name) {
		if (seen[key])
			warn(n, fmt(_('%s given twice, the last one is used'), name));
		seen[key] = true;
	}

	for (var i = 0; i < lines.length; i++) {
		var n = i + 1,
		    raw = lines[i],
		    comment = commentText(raw);

		if (comment != null) {
			var named = /^(?:name|description)\s*[=:]\s*(.*)$/i.exec(comment);
			if (named) {
				pendingName = named[1].trim();
				lastComment = null;
			}
			else {
				/* a commented-out setting is no name */
				var kv = /^([A-Za-z]+)\s*=/.exec(comment);
				lastComment = (comment !== '' && !(kv && KNOWN_KEYS.indexOf(kv[1].toLowerCase()) >= 0))
					? comment : null;
			}
			continue;
		}

		/* strip a trailing comment, then blanks */
		var line = raw.replace(/#.*$/, '').trim();

		if (line === '') {
			lastComment = null;     /* a plain comment must be right before [Peer] */
			continue;
		}

		var sec = /^\[\s*([^\]]*?)\s*\]$/.exec(line);
		if (sec) {
			var name = sec[1].toLowerCase();
			finishPeer();
			seen = {};

			if (name === 'interface') {
				if (seenInterface)
					err(n, _('more than one [Interface] section'));
				seenInterface = true;
				section = 'interface';
			}
			else if (name === 'peer') {
				section = 'peer';
				peer = emptyPeer();
				peer.description = pendingName || lastComment || null;
				pendingName = null;
				peerLine = n;
				res.peers.push(peer);
			}
			else {
				err(n, fmt(_('unknown section [%s]'), sec[1]));
				section = 'other';
			}

			pendingName = null;
			lastComment = null;
			continue;
		}

		/* '# Name = x' inside a [Peer] section names that peer */
		if (pendingName != null && section === 'peer' && peer)
			peer.description = pendingName || null;
		pendingName = null;
		lastComment = null;

		var m = /^([A-Za-z0-9_]+)\s*=\s*(.*)$/.exec(line);
		if (!m) {
			err(n, _('expected "Key = Value"'));
			continue;
		}

		var key = m[1], lkey = key.toLowerCase(), value = m[2].trim();

		if (section === null) {
			err(n, fmt(_('%s outside of a section'), key));
			continue;
		}
		if (section === 'other')
			continue;

		var iface = res.interface, list, j, num;

		if (section === 'interface') {
			switch (lkey) {
			case 'privatekey':
				once(n, lkey, 'PrivateKey');
				if (!validKey(value))
					err(n, _('PrivateKey is not a valid key'));
				iface.privateKey = value;
				break;

			case 'address':
				list = splitList(value);
				for (j = 0; j < list.length; j++) {
					if (!validCidr(list[j]))
						err(n, fmt(_('invalid address "%s"'), list[j]));
					iface.addresses.push(list[j]);
				}
				break;

			case 'listenport':
				once(n, lkey, 'ListenPort');
				num = /^\d{1,5}$/.test(value) ? +value : NaN;
				if (!(num >= 0 && num <= 65535))
					err(n, fmt(_('invalid ListenPort "%s"'), value));
				else
					iface.listenPort = num;
				break;

			case 'dns':
				list = splitList(value);
				for (j = 0; j < list.length; j++)
					iface.dns.push(list[j]);
				break;

			case 'mtu':
				once(n, lkey, 'MTU');
				num = /^\d{1,5}$/.test(value) ? +value : NaN;
				if (!(num >= 68 && num <= 65535))
					err(n, fmt(_('invalid MTU "%s"'), value));
				else
					iface.mtu = num;
				break;

			case 'fwmark':
				once(n, lkey, 'FwMark');
				if (/^off$/i.test(value) || /^(?:0x0*|0+)$/i.test(value))
					iface.fwmark = null;
				else if (/^0x[0-9a-f]{1,8}$/i.test(value) ||
				         (/^\d{1,10}$/.test(value) && +value <= 4294967295))
					iface.fwmark = value;
				else
					err(n, fmt(_('invalid FwMark "%s"'), value));
				break;

			default:
				if (IGNORED_INTERFACE_KEYS.indexOf(lkey) >= 0)
					warn(n, fmt(_('%s is not used by solowg and was ignored'), key));
				else
					err(n, fmt(_('unknown key "%s" in [Interface]'), key));
			}
		}
		else {
			switch (lkey) {
			case 'publickey':
				once(n, lkey, 'PublicKey');
				if (!validKey(value))
					err(n, _('PublicKey is not a valid key'));
				peer.publicKey = value;
				break;

			case 'presharedkey':
				once(n, lkey, 'PresharedKey');
				if (!validKey(value))
					err(n, _('PresharedKey is not a valid key'));
				peer.presharedKey = value;
				break;

			case 'allowedips':
				list = splitList(value);
				for (j = 0; j < list.length; j++) {
					if (!validCidr(list[j]))
						err(n, fmt(_('invalid allowed IP "%s"'), list[j]));
					peer.allowedIPs.push(list[j]);
				}
				break;

			case 'endpoint':
				once(n, lkey, 'Endpoint');
				var ep = splitEndpoint(value);
				if (!ep) {
					err(n, fmt(_('invalid Endpoint "%s" (host:port, IPv6 as [address]:port)'), value));
				}
				else {
					peer.endpointHost = ep.host;
					peer.endpointPort = ep.port;
				}
				break;

			case 'persistentkeepalive':
				once(n, lkey, 'PersistentKeepalive');
				num = /^\d{1,5}$/.test(value) ? +value : NaN;
				if (/^off$/i.test(value) || num === 0)
					peer.persistentKeepalive = null;
				else if (num >= 1 && num <= 65535)
					peer.persistentKeepalive = num;
				else
					err(n, fmt(_('invalid PersistentKeepalive "%s"'), value));
				break;

			default:
				err(n, fmt(_('unknown key "%s" in [Peer]'), key));
			}
		}
	}

	if (pendingName != null && section === 'peer' && peer)
		peer.description = pendingName || null;
	finishPeer();

	return res;
}

function oneLine(s) {
	return String(s).replace(/[\r\n]+/g, ' ').trim();
}

function interfaceLines(iface) {
	var out = [];
	if (iface.privateKey)
		out.push('PrivateKey = ' + iface.privateKey);
	if (iface.addresses && iface.addresses.length)
		out.push('Address = ' + iface.addresses.join(', '));
	if (iface.listenPort != null && iface.listenPort !== '')
		out.push('ListenPort = ' + iface.listenPort);
	if (iface.dns && iface.dns.length)
		out.push('DNS = ' + iface.dns.join(', '));
	if (iface.mtu != null && iface.mtu !== '')
		out.push('MTU = ' + iface.mtu);
	if (iface.fwmark != null && iface.fwmark !== '')
		out.push('FwMark = ' + iface.fwmark);
	return out;
}

function peerLines(p) {
	var out = [ '[Peer]' ];
	if (p.description)
		out.push('# Name = ' + oneLine(p.description));
	if (p.publicKey)
		out.push('PublicKey = ' + p.publicKey);
	if (p.presharedKey)
		out.push('PresharedKey = ' + p.presharedKey);
	if (p.allowedIPs && p.allowedIPs.length)
		out.push('AllowedIPs = ' + p.allowedIPs.join(', '));
	if (p.endpointHost)
		out.push('Endpoint = ' + formatEndpoint(p.endpointHost, p.endpointPort));
	if (p.persistentKeepalive)
		out.push('PersistentKeepalive = ' + p.persistentKeepalive);
	return out;
}

/* toConf(parsed) -> wg-quick text ('\n' line ends, blank line between sections) */
function toConf(parsed) {
	var blocks = [], iface = (parsed && parsed.interface) || emptyInterface(),
	    il = interfaceLines(iface);

	if (il.length)
		blocks.push([ '[Interface]' ].concat(il).join('\n'));

	((parsed && parsed.peers) || []).forEach(function(p) {
		blocks.push(peerLines(p).join('\n'));
	});

	return blocks.length ? blocks.join('\n\n') + '\n' : '';
}

/*
 * clientConfig({ privateKey, addresses, dns, serverPublicKey, presharedKey,
 *   endpoint, allowedIPs, persistentKeepalive, description }) -> wg-quick text
 * for the device at the other end of a peer. endpoint is 'host:port' or
 * { host, port }; allowedIPs defaults to all traffic (0.0.0.0/0, ::/0).
 * Absent values are left out.
 */
function clientConfig(o) {
	o = o || {};

	var ep = null;
	if (o.endpoint != null && typeof(o.endpoint) === 'object' && o.endpoint.host)
		ep = formatEndpoint(o.endpoint.host, o.endpoint.port);
	else if (o.endpoint)
		ep = String(o.endpoint).trim();

	var allowed = toArray(o.allowedIPs);
	if (!allowed.length)
		allowed = [ '0.0.0.0/0', '::/0' ];

	var head = [ '[Interface]' ].concat(interfaceLines({
		privateKey: o.privateKey || null,
		addresses: toArray(o.addresses),
		dns: toArray(o.dns)
	}));

	var peer = [ '[Peer]' ];
	if (o.description)
		peer.push('# Name = ' + oneLine(o.description));
	if (o.serverPublicKey)
		peer.push('PublicKey = ' + o.serverPublicKey);
	if (o.presharedKey)
		peer.push('PresharedKey = ' + o.presharedKey);
	peer.push('AllowedIPs = ' + allowed.join(', '));
	if (ep)
		peer.push('Endpoint = ' + ep);
	if (+o.persistentKeepalive > 0)
		peer.push('PersistentKeepalive = ' + Math.floor(+o.persistentKeepalive));

	return head.join('\n') + '\n\n' + peer.join('\n') + '\n';
}

/*
 * confToUci(parsed) -> { iface: { private_key, listen_port, addresses: [],
 *   mtu, fwmark, dns: [] }, peers: [ { public_key, preshared_key,
 *   allowed_ips: [], endpoint_host, endpoint_port, persistent_keepalive,
 *   description, route_allowed_ips: '1' } ] }
 * Values are UCI strings; options without a value are left out (lists too).
 * endpoint_port is written whenever there is an endpoint.
 */
function confToUci(parsed) {
	var i = (parsed && parsed.interface) || emptyInterface(), iface = {};

	if (i.privateKey)
		iface.private_key = String(i.privateKey);
	if (i.listenPort != null && i.listenPort !== '')
		iface.listen_port = String(i.listenPort);
	if (i.addresses && i.addresses.length)
		iface.addresses = i.addresses.map(String);
	if (i.mtu != null && i.mtu !== '')
		iface.mtu = String(i.mtu);
	if (i.fwmark != null && i.fwmark !== '')
		iface.fwmark = String(i.fwmark);
	if (i.dns && i.dns.length)
		iface.dns = i.dns.map(String);

	var peers = ((parsed && parsed.peers) || []).map(function(p) {
		var s = {};
		if (p.publicKey)
			s.public_key = String(p.publicKey);
		if (p.presharedKey)
			s.preshared_key = String(p.presharedKey);
		if (p.allowedIPs && p.allowedIPs.length)
			s.allowed_ips = p.allowedIPs.map(String);
		if (p.endpointHost) {
			s.endpoint_host = String(p.endpointHost);
			s.endpoint_port = String(p.endpointPort != null && p.endpointPort !== '' ? p.endpointPort : DEFAULT_PORT);
		}
		if (p.persistentKeepalive)
			s.persistent_keepalive = String(p.persistentKeepalive);
		if (p.description)
			s.description = String(p.description);
		s.route_allowed_ips = '1';
		return s;
	});

	return { iface: iface, peers: peers };
}

function intOrNull(v) {
	if (v == null || v === '')
		return null;
	var n = parseInt(v, 10);
	return isNaN(n) ? null : n;
}

function isTrue(v) {
	return [ '1', 'yes', 'on', 'true', 'enabled' ].indexOf(String(v).toLowerCase()) >= 0;
}

/*
 * uciToConf(iface, peers, opts) -> parsed form (see toConf). iface is the
 * interface section and peers the solowg_<if> sections, as LuCI's uci.get()
 * returns them (lists as arrays or as blank-separated strings). Peers with
 * disabled=1 are left out unless opts.includeDisabled. A private_key that is
 * no key (empty or 'generate') is left out.
 */
function uciToConf(iface, peers, opts) {
	var s = iface || {}, o = opts || {}, ka;

	var parsed = {
		interface: {
			privateKey: validKey(s.private_key) ? s.private_key : null,
			addresses: toArray(s.addresses),
			listenPort: intOrNull(s.listen_port),
			dns: toArray(s.dns),
			mtu: intOrNull(s.mtu),
			fwmark: (s.fwmark != null && s.fwmark !== '' && !/^(?:off|0x0*|0+)$/i.test(s.fwmark))
				? String(s.fwmark) : null
		},
		peers: [],
		errors: [],
		warnings: []
	};

	(peers || []).forEach(function(p) {
		if (!p || (isTrue(p.disabled) && !o.includeDisabled))
			return;
		ka = intOrNull(p.persistent_keepalive);
		parsed.peers.push({
			publicKey: p.public_key || null,
			presharedKey: p.preshared_key || null,
			allowedIPs: toArray(p.allowed_ips),
			endpointHost: p.endpoint_host || null,
			endpointPort: p.endpoint_host ? (intOrNull(p.endpoint_port) || DEFAULT_PORT) : null,
			persistentKeepalive: ka > 0 ? ka : null,
			description: p.description || null
		});
	});

	return parsed;
}

/* Seconds since the latest handshake, or null for never (0). */
function handshakeAge(latestHandshake, now) {
	var t = +latestHandshake;
	if (!(t > 0))
		return null;
	var n = (now != null) ? +now : Date.now() / 1000;
	return Math.max(0, Math.floor(n - t));
}

/* formatAge(seconds) -> 'never' (null, undefined, negative), '34 s ago',
 * '5 min 3 s ago', '2 h 5 min ago', '3 d ago' */
function formatAge(seconds) {
	if (seconds == null || seconds === '' || !isFinite(+seconds) || +seconds < 0)
		return _('never');

	var s = Math.floor(+seconds);

	if (s < 60)
		return fmt(_('%d s ago'), s);
	if (s < 3600)
		return (s % 60) ? fmt(_('%d min %d s ago'), s / 60, s % 60) : fmt(_('%d min ago'), s / 60);
	if (s < 86400)
		return (s % 3600 >= 60)
			? fmt(_('%d h %d min ago'), s / 3600, (s % 3600) / 60)
			: fmt(_('%d h ago'), s / 3600);
	return fmt(_('%d d ago'), s / 86400);
}

/* The age text of a status latest_handshake (unix seconds, 0 = never). */
function formatHandshake(latestHandshake, now) {
	return formatAge(handshakeAge(latestHandshake, now));
}

/* A peer is online when its latest handshake is younger than 180 s. */
function isOnline(latestHandshake, now) {
	var age = handshakeAge(latestHandshake, now);
	return age != null && age < 180;
}

/* peerState(latestHandshake, now) -> 'online' (handshake younger than 180 s),
 * 'stale' (an older one) or 'never' (no handshake since the peer was set up). */
function peerState(latestHandshake, now) {
	var age = handshakeAge(latestHandshake, now);

	if (age == null)
		return 'never';

	return age < 180 ? 'online' : 'stale';
}

/* Short texts for the drop counters of ubus `solowg status` (interfaces[].drops),
 * one per name of DropReason::name() in the daemon (src/proto/device/drop_reason.rs). Built
 * on each call so that _() is the caller's. */
function dropReasons() {
	return {
		malformed: _('Malformed packet'),
		bad_mac1: _('Not for this interface (bad MAC)'),
		cookie_required: _('Under load: cookie required'),
		rate_limited: _('Handshake rate limit'),
		no_identity: _('No private key'),
		unknown_peer: _('Handshake from an unknown key'),
		handshake_failed: _('Handshake failed or replayed'),
		unknown_index: _('No matching session'),
		expired_keypair: _('Session expired'),
		replay: _('Replayed or too old'),
		decrypt_failed: _('Decryption failed'),
		invalid_inner: _('Not an IP packet inside'),
		disallowed_source: _('Source not in the peer\'s allowed IPs'),
		no_route: _('No peer for the destination'),
		no_endpoint: _('Peer endpoint unknown'),
		not_ip: _('Outgoing packet is not IP'),
		staged_overflow: _('Queue full while waiting for a handshake'),
		too_big: _('Packet too big')
	};
}

/* dropReasonText('unknown_index') -> 'No matching session'; a name this
 * module does not know (a newer daemon) is returned as it is. */
function dropReasonText(name) {
	var texts = dropReasons();

	return Object.prototype.hasOwnProperty.call(texts, name) ? texts[name] : String(name);
}

/* A host name as DDNS services and DNS use them (letters, digits, '-', '.'). */
function validHostname(s) {
	return typeof(s) === 'string' && s.length <= 253 &&
		/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/.test(s);
}

/* The sections of a loaded UCI config, as an array (uci.sections gives one;
 * an object keyed by section name is accepted too). */
function sectionList(v) {
	if (!v)
		return [];
	if (Array.isArray(v))
		return v.filter(function(s) { return s && typeof(s) === 'object'; });
	return Object.keys(v).map(function(k) { return v[k]; })
		.filter(function(s) { return s && typeof(s) === 'object'; });
}

/* The first IPv4 address of a UCI interface section's ipaddr, which is
 * '192.168.1.1' (with netmask) or a list of '192.168.1.1/24'; or null. */
function uciIPv4(section) {
	var list = toArray(section && section.ipaddr);

	for (var i = 0; i < list.length; i++) {
		var a = list[i].replace(/\/\d{1,2}$/, '');
		if (isIPv4(a))
			return a;
	}

	return null;
}

/*
 * clientDefaults({ ddns, wanStatus, lan, browserHost, listenPort }) ->
 *   { endpoint: 'host:port' or '', host, source: 'ddns'|'wan'|'browser'|null,
 *     ddnsService: section name or null, dns: [ address ] or [] }
 * The defaults of the client configuration dialog. The endpoint's host is, in
 * order: the lookup_host of an enabled service of /etc/config/ddns (ddns: its
 * sections, null when it could not be read; an IPv4 service first), the first
 * IPv4 address of `ubus call network.interface.wan status` (wanStatus, null
 * when not allowed), the host the browser used (browserHost). No listenPort:
 * no endpoint (the port is random). dns is the LAN's IPv4 address (lan: the
 * network.lan section).
 */
function clientDefaults(o) {
	o = o || {};

	var host = null, source = null, service = null, v6Service = null;

	sectionList(o.ddns).forEach(function(s) {
		var h = (s.lookup_host != null) ? String(s.lookup_host).trim() : '';

		if ((s['.type'] != null && s['.type'] !== 'service') || !isTrue(s.enabled) || !validHostname(h))
			return;

		if (!isTrue(s.use_ipv6)) {
			if (!service)
				service = { name: s['.name'] || null, host: h };
		}
		else if (!v6Service)
			v6Service = { name: s['.name'] || null, host: h };
	});

	service = service || v6Service;

	if (service) {
		host = service.host;
		source = 'ddns';
	}

	if (!host && o.wanStatus && Array.isArray(o.wanStatus['ipv4-address'])) {
		var addrs = o.wanStatus['ipv4-address'];

		for (var i = 0; i < addrs.length; i++)
			if (addrs[i] && isIPv4(String(addrs[i].address))) {
				host = String(addrs[i].address);
				source = 'wan';
				break;
			}
	}

	if (!host && o.browserHost) {
		var b = String(o.browserHost).replace(/^\[(.*)\]$/, '$1');

		if (isIPv4(b) || isIPv6(b) || validHostname(b)) {
			host = b;
			source = 'browser';
		}
	}

	var port = intOrNull(o.listenPort),
	    lan = uciIPv4(o.lan);

	return {
		endpoint: (host && port > 0) ? formatEndpoint(host, port) : '',
		host: host,
		source: source,
		ddnsService: source === 'ddns' ? service.name : null,
		dns: lan ? [ lan ] : []
	};
}

/* An IPv6 prefix with its length, as ip6prefix takes it: fd00:10::/48 */
function validIp6Prefix(s) {
	var m = /^([^\/]+)\/(\d{1,3})$/.exec(String(s));
	return !!m && isIPv6(m[1]) && !(m[2].length > 1 && m[2].charAt(0) === '0') && +m[2] <= 128;
}

/* formatBytes(n) -> '512 B', '1.5 KiB', '12.3 MiB', '1.0 GiB', '2.0 TiB' */
function formatBytes(n) {
	var v = +n, units = [ _('%s KiB'), _('%s MiB'), _('%s GiB'), _('%s TiB') ], u = -1;

	if (!isFinite(v) || v < 0)
		v = 0;
	if (v < 1024)
		return fmt(_('%s B'), Math.floor(v));

	while (v >= 1024 && u < units.length - 1) {
		v /= 1024;
		u++;
	}

	return fmt(units[u], v.toFixed(1));
}

/* formatRate(bytesPerSecond) -> '800 bit/s', '12.5 kbit/s', '1.2 Mbit/s', '1.0 Gbit/s' */
function formatRate(bytesPerSecond) {
	var bits = (+bytesPerSecond) * 8, units = [ _('%s kbit/s'), _('%s Mbit/s'), _('%s Gbit/s') ], u = -1;

	if (!isFinite(bits) || bits < 0)
		bits = 0;
	if (bits < 1000)
		return fmt(_('%s bit/s'), Math.round(bits));

	while (bits >= 1000 && u < units.length - 1) {
		bits /= 1000;
		u++;
	}

	return fmt(units[u], bits.toFixed(1));
}

return baseclass.extend({
	__name__: 'solowg.conf',

	DEFAULT_PORT: DEFAULT_PORT,

	parseConf: parseConf,
	toConf: toConf,
	clientConfig: clientConfig,
	confToUci: confToUci,
	uciToConf: uciToConf,

	formatAge: formatAge,
	formatHandshake: formatHandshake,
	handshakeAge: handshakeAge,
	isOnline: isOnline,
	peerState: peerState,
	dropReasons: dropReasons,
	dropReasonText: dropReasonText,
	clientDefaults: clientDefaults,
	formatBytes: formatBytes,
	formatRate: formatRate,

	validKey: validKey,
	validCidr: validCidr,
	validIp6Prefix: validIp6Prefix,
	validHostname: validHostname,
	splitEndpoint: splitEndpoint,
	formatEndpoint: formatEndpoint,
	fmt: fmt
});
