'use strict';
'require view';
'require rpc';
'require poll';
'require uci';
'require ui';
'require dom';
'require form';
'require fs';
'require solowg.conf as conf';
'require uqr';

/*
 * Status → solowg: every interface and peer of the daemon, refreshed every
 * POLL_SECONDS through ubus `solowg status`, with a per-peer rx/tx rate graph
 * built from successive samples, a client configuration (text, download,
 * QR code) for each peer, and the daemon's settings (UCI solowg.main).
 *
 * Read-only users (the ACL group granted for read only) see status and
 * settings, never key material: the client configuration shows the peer's
 * stored private key and PSK from /etc/config/network, which the ACL grants
 * only with write access, so this view neither loads network nor offers the
 * dialog (or Reload) unless LuCI reports the page writable.
 *
 * Reload runs the init script's reload as root (rpcd's file exec; the ACL
 * grants that one command line), not ubus `solowg reload`: the daemon runs as
 * its own user and reads only the copy of /etc/config/network that root's
 * `solowg export` hands it, which the init script makes first.
 */

var POLL_SECONDS = 5;
var HISTORY_SECONDS = 300;   /* the graph shows the last five minutes */
var GRAPH_W = 160, GRAPH_H = 40;
var SVG_NS = 'http://www.w3.org/2000/svg';

/* Options of uqr.renderSVG (luci-lib-uqr), whose defaults are level L and a
 * 1-module border: level M still reads with 15 % of the code lost, and a
 * client configuration of about 340 bytes fits version 14; the border is the
 * 4-module quiet zone the standard asks for. tests/qr.test.js and
 * tests/check-dom.js decode what these options draw. */
var QR_OPTIONS = { ecc: 'M', border: 4, pixelSize: 4 };

var callStatus = rpc.declare({
	object: 'solowg',
	method: 'status',
	expect: { '': {} }
});

var callGenkey = rpc.declare({
	object: 'solowg',
	method: 'genkey',
	expect: { '': {} }
});

/* netifd's state of the interface `wan`, for the client configuration's
 * endpoint: its IPv4 address (ipv4-address[].address). */
var callWanStatus = rpc.declare({
	object: 'network.interface.wan',
	method: 'status',
	expect: { '': {} }
});

/* "34 s ago" (conf.formatAge, translatable); nothing without a handshake,
 * which the badge already says ("never connected"). */
function ageText(latest, now) {
	if (!(latest > 0))
		return '';

	return conf.formatAge(Math.max(0, now - latest));
}

/* LuCI's dispatcher marks the page node read-only when the session holds the
 * node's ACL group for read only; L.hasViewPermission() reports that (true
 * only with write). Anything else, an older LuCI included, counts as read-only. */
function pageWritable() {
	return typeof L.hasViewPermission == 'function' && L.hasViewPermission() === true;
}

function shortKey(key) {
	return key ? '%s…%s'.format(key.substr(0, 5), key.substr(-6)) : '';
}

function svgEl(name, attrs) {
	var el = document.createElementNS(SVG_NS, name);

	for (var k in attrs)
		el.setAttribute(k, attrs[k]);

	return el;
}

/* Rates (bytes/s) between successive samples; a counter going backwards
 * (daemon restart, peer re-created) starts the series again. */
function ratesOf(samples) {
	var out = [];

	for (var i = 1; i < samples.length; i++) {
		var a = samples[i - 1], b = samples[i], dt = b.t - a.t;

		if (dt <= 0 || b.rx < a.rx || b.tx < a.tx) {
			out = [];
			continue;
		}

		out.push({ t: b.t, rx: (b.rx - a.rx) / dt, tx: (b.tx - a.tx) / dt });
	}

	return out;
}

function rateLabel(bytesPerSecond) {
	return conf.formatRate(bytesPerSecond);
}

function renderGraph(samples, now) {
	var rates = ratesOf(samples),
	    svg = svgEl('svg', {
	    	'class': 'solowg-graph',
	    	'width': GRAPH_W, 'height': GRAPH_H,
	    	'viewBox': '0 0 %d %d'.format(GRAPH_W, GRAPH_H),
	    	'role': 'img'
	    }),
	    max = 1;

	svg.appendChild(svgEl('rect', {
		x: 0.5, y: 0.5, width: GRAPH_W - 1, height: GRAPH_H - 1,
		fill: 'none', stroke: '#ccc'
	}));

	rates.forEach(function(r) { max = Math.max(max, r.rx, r.tx); });

	[ [ 'rx', '#2a9d3f' ], [ 'tx', '#2364aa' ] ].forEach(function(series) {
		var pts = rates.map(function(r) {
			var x = GRAPH_W - 1 - (now - r.t) * (GRAPH_W - 2) / HISTORY_SECONDS,
			    y = GRAPH_H - 2 - r[series[0]] * (GRAPH_H - 4) / max;

			return '%.1f,%.1f'.format(Math.max(1, x), y);
		});

		if (pts.length == 1)
			pts.unshift(pts[0]);

		svg.appendChild(svgEl('polyline', {
			'class': 'solowg-graph-' + series[0],
			'points': pts.join(' '),
			'fill': 'none',
			'stroke': series[1],
			'stroke-width': 1.5
		}));
	});

	var last = rates.length ? rates[rates.length - 1] : null,
	    title = svgEl('title', {});

	title.textContent = last
		? _('Receive %s, transmit %s; scale up to %s').format(rateLabel(last.rx), rateLabel(last.tx), rateLabel(max))
		: _('Collecting samples…');
	svg.appendChild(title);

	return E('div', { 'class': 'solowg-graph-box' }, [
		svg,
		E('div', { 'style': 'font-size:80%' }, last ? [
			E('span', { 'style': 'color:#2a9d3f' }, [ '↓ ' + rateLabel(last.rx) ]), ' ',
			E('span', { 'style': 'color:#2364aa' }, [ '↑ ' + rateLabel(last.tx) ])
		] : [ _('Collecting samples…') ])
	]);
}

/* online (handshake younger than 180 s), stale (older), never (no handshake
 * since the peer was set up or the daemon started: wrong key, unreachable,
 * or not tried yet) */
var BADGE_COLORS = { online: '#2a9d3f', stale: '#b35c00', never: '#777' };

function badge(state) {
	var text = { online: _('online'), stale: _('stale'), never: _('never connected') }[state],
	    title = { online: _('Latest handshake less than 180 seconds ago'),
	              stale: _('No handshake in the last 180 seconds'),
	              never: _('No handshake since this peer was set up or solowg started') }[state];

	return E('span', {
		'class': 'solowg-badge solowg-' + state,
		'title': title,
		'style': 'display:inline-block;padding:0 .5em;border-radius:.8em;color:#fff;font-size:85%;background:' + BADGE_COLORS[state]
	}, text);
}

/* Turns a string into a file name a phone or a PC accepts. */
function fileName(s) {
	var n = String(s || '').replace(/[^A-Za-z0-9_.-]+/g, '_').replace(/^[._]+/, '').substr(0, 32);

	return (n || 'solowg-peer') + '.conf';
}

function download(text, name) {
	var url = URL.createObjectURL(new Blob([ text ], { type: 'text/plain' })),
	    a = E('a', { 'href': url, 'download': name, 'style': 'display:none' });

	document.body.appendChild(a);
	a.click();
	document.body.removeChild(a);
	window.setTimeout(function() { URL.revokeObjectURL(url); }, 1000);
}

function svgNode(markup) {
	var doc = new DOMParser().parseFromString(markup, 'image/svg+xml'),
	    svg = document.importNode(doc.documentElement, true);

	/* uqr sizes its SVG in pixels without a viewBox; one lets CSS scale it */
	if (!svg.hasAttribute('viewBox') && svg.hasAttribute('width') && svg.hasAttribute('height'))
		svg.setAttribute('viewBox', '0 0 %d %d'.format(svg.getAttribute('width'), svg.getAttribute('height')));

	/* no anti-aliased seams between neighbouring modules once scaled */
	svg.setAttribute('shape-rendering', 'crispEdges');
	svg.setAttribute('style', 'width:100%;height:auto;display:block');

	return svg;
}

return view.extend({
	history: {},
	box: null,
	writable: false,

	load: function() {
		this.writable = pageWritable();

		return Promise.all([
			callStatus(),
			/* stored client keys and PSKs: only for writers (see top) */
			this.writable ? L.resolveDefault(uci.load('network'), null) : null
		]);
	},

	/* Keeps the samples of the last HISTORY_SECONDS for every peer. */
	record: function(status) {
		var now = status.time || Math.floor(Date.now() / 1000),
		    seen = {};

		(status.interfaces || []).forEach(L.bind(function(ifc) {
			(ifc.peers || []).forEach(L.bind(function(p) {
				var id = ifc.name + '/' + p.public_key,
				    h = this.history[id] || (this.history[id] = []);

				seen[id] = true;

				if (!h.length || h[h.length - 1].t < now)
					h.push({ t: now, rx: p.rx_bytes || 0, tx: p.tx_bytes || 0 });

				while (h.length && h[0].t < now - HISTORY_SECONDS - POLL_SECONDS)
					h.shift();
			}, this));
		}, this));

		for (var id in this.history)
			if (!seen[id])
				delete this.history[id];
	},

	peerSection: function(ifname, pubkey) {
		var found = null;

		if (!this.writable)
			return null;

		[ 'solowg_' + ifname, 'wireguard_' + ifname ].forEach(function(type) {
			uci.sections('network', type, function(s) {
				if (!found && s.public_key == pubkey)
					found = s;
			});
		});

		return found;
	},

	/* Reads the status again and redraws it; resolves to the status. */
	refresh: function() {
		return Promise.all([
			callStatus(),
			this.writable ? L.resolveDefault(uci.load('network'), null) : null
		]).then(L.bind(function(res) {
			var status = res[0] || {};

			this.record(status);
			dom.content(this.box, this.renderStatus(status));

			return status;
		}, this));
	},

	/* `/etc/init.d/solowg reload` prints one line per problem (the export
	 * failed, a key was not saved, each error the daemon reported) and
	 * nothing when all went well. */
	handleReload: function(ev) {
		return fs.exec('/etc/init.d/solowg', [ 'reload' ]).then(L.bind(function(res) {
			var problems = String(res.stdout || '').split('\n')
				.map(function(l) { return l.trim(); })
				.filter(function(l) { return l.length; });

			/* the reload may have changed the tunnels even when it reports problems */
			return L.resolveDefault(this.refresh(), null).then(function(status) {
				if (problems.length)
					return ui.addNotification(_('solowg reported problems while reloading'),
						E('ul', {}, problems.map(function(l) { return E('li', {}, [ l ]); })), 'warning');

				/* nothing printed, yet a failure code: the script itself failed */
				if (res.code !== 0)
					throw new Error(String(res.stderr || '').trim() || _('exit code %d').format(res.code));

				ui.addNotification(null, E('p', {}, [ status
					? _('Configuration reloaded: %s').format((status.interfaces || [])
						.map(function(i) { return i.name; }).join(', ') || _('no interface'))
					: _('Configuration reloaded.') ]), 'info');
			});
		}, this)).catch(function(err) {
			ui.addNotification(null, E('p', {}, [ _('Reload failed: %s').format(err.message || err) ]), 'error');
		});
	},

	/* The wg-quick configuration of the peer's side of the tunnel. */
	handleClientConfig: function(ifc, peer, ev) {
		/* the button is not drawn for read-only users; refuse anyway */
		if (!this.writable)
			return Promise.resolve();

		var s = this.peerSection(ifc.name, peer.public_key) || {},
		    keyPromise;

		if (s.private_key && conf.validKey(s.private_key))
			keyPromise = Promise.resolve({ private_key: s.private_key, fresh: false });
		else
			keyPromise = callGenkey().then(function(k) {
				return { private_key: k.private_key, public_key: k.public_key, fresh: true };
			});

		return Promise.all([
			keyPromise,
			/* a dynamic DNS name, when the session may read /etc/config/ddns
			 * (luci-app-ddns's group grants it; this app's does not: it holds
			 * the DDNS account passwords) */
			L.resolveDefault(uci.load('ddns').then(function() { return uci.sections('ddns', 'service'); }), null),
			/* else the WAN address; null when refused or there is no wan */
			L.resolveDefault(callWanStatus(), null)
		]).then(L.bind(function(res) {
			var keys = res[0],
			    defaults = conf.clientDefaults({
			    	ddns: res[1],
			    	wanStatus: res[2],
			    	lan: uci.get('network', 'lan'),
			    	browserHost: window.location.hostname,
			    	listenPort: ifc.listen_port
			    }),
			    sourceText = {
			    	ddns: _('From the dynamic DNS service %s.').format(defaults.ddnsService || ''),
			    	wan: _('The current IPv4 address of the WAN interface.'),
			    	browser: _('The address this page was opened with; from the Internet the router may have another one.')
			    }[defaults.source] || '';

			var fields = {
				endpoint: E('input', {
					'class': 'cbi-input-text solowg-client-endpoint', 'style': 'width:100%',
					'data-source': defaults.source || '',
					'value': defaults.endpoint
				}),
				allowed: E('input', { 'class': 'cbi-input-text', 'style': 'width:100%', 'value': '0.0.0.0/0, ::/0' }),
				dns: E('input', { 'class': 'cbi-input-text solowg-client-dns', 'style': 'width:100%', 'value': defaults.dns.join(', ') })
			},
			    pre = E('pre', { 'class': 'solowg-client-conf', 'style': 'white-space:pre-wrap;word-break:break-all;font-size:85%' }),
			    qrBox = E('div', { 'class': 'solowg-qr', 'style': 'max-width:320px;margin:0 auto' }),
			    text = '';

			var update = function() {
				var list = function(v) {
					return String(v || '').split(/[\s,]+/).filter(function(x) { return x.length; });
				};

				text = conf.clientConfig({
					privateKey: keys.private_key,
					addresses: L.toArray(s.allowed_ips).length ? L.toArray(s.allowed_ips) : peer.allowed_ips,
					dns: list(fields.dns.value),
					serverPublicKey: ifc.public_key,
					presharedKey: s.preshared_key || null,
					endpoint: fields.endpoint.value.trim(),
					allowedIPs: list(fields.allowed.value),
					persistentKeepalive: +s.persistent_keepalive || +peer.persistent_keepalive || 0
				});

				pre.textContent = text;

				try {
					dom.content(qrBox, svgNode(uqr.renderSVG(text, QR_OPTIONS)));
				}
				catch (e) {
					dom.content(qrBox, E('em', {}, [ _('The QR code could not be made: %s').format(e.message || e) ]));
				}
			};

			[ fields.endpoint, fields.allowed, fields.dns ].forEach(function(f) {
				f.addEventListener('input', update);
			});

			update();

			var notes = [];

			if (keys.fresh)
				notes.push(E('div', { 'class': 'alert-message warning solowg-fresh-key' }, [
					E('p', {}, _('This peer has no stored client private key, so a new key pair was generated for this configuration. The tunnel works only once this peer\'s public key on the router is the new one:')),
					E('p', {}, E('code', { 'class': 'solowg-fresh-pub' }, [ keys.public_key ])),
					E('p', {}, _('Use "Store key pair on this peer" to stage that change, then Save & Apply. Closing this dialog forgets the generated private key.')),
					E('button', {
						'class': 'btn cbi-button cbi-button-action',
						'click': ui.createHandlerFn(this, function() {
							if (!s['.name'])
								return ui.addNotification(null, E('p', {}, [ _('No configuration section for this peer was found.') ]), 'error');

							uci.set('network', s['.name'], 'public_key', keys.public_key);
							uci.set('network', s['.name'], 'private_key', keys.private_key);

							return uci.save().then(function() {
								ui.addNotification(null, E('p', {}, [ _('Key pair staged for this peer; apply the unsaved changes to use it.') ]), 'info');
							});
						})
					}, _('Store key pair on this peer'))
				]));

			if (!ifc.listen_port)
				notes.push(E('div', { 'class': 'alert-message warning' },
					[ _('Interface %s has no fixed listen port; the client cannot reach it reliably.').format(ifc.name) ]));

			ui.showModal(_('Client configuration'), [
				E('div', { 'class': 'solowg-client' }, [
					E('p', {}, [ _('Configuration for the other end of peer %s on interface %s.').format(peer.description || shortKey(peer.public_key), ifc.name) ])
				].concat(notes).concat([
					E('div', { 'class': 'cbi-value' }, [ E('label', { 'class': 'cbi-value-title' }, _('Endpoint of this router')), E('div', { 'class': 'cbi-value-field' }, [
						fields.endpoint,
						sourceText ? E('div', { 'class': 'cbi-value-description solowg-endpoint-source' }, [ sourceText ]) : ''
					]) ]),
					E('div', { 'class': 'cbi-value' }, [ E('label', { 'class': 'cbi-value-title' }, _('Routed through the tunnel')), E('div', { 'class': 'cbi-value-field' }, fields.allowed) ]),
					E('div', { 'class': 'cbi-value' }, [ E('label', { 'class': 'cbi-value-title' }, _('DNS servers (optional)')), E('div', { 'class': 'cbi-value-field' }, fields.dns) ]),
					qrBox,
					E('p', { 'style': 'text-align:center' }, _('Scan with the WireGuard app on a phone, or download the file.')),
					pre
				])),
				E('div', { 'class': 'right' }, [
					E('button', {
						'class': 'btn cbi-button cbi-button-save solowg-download',
						'click': function() { download(text, fileName(peer.description || ifc.name)); }
					}, _('Download')),
					' ',
					E('button', { 'class': 'btn cbi-button', 'click': ui.hideModal }, _('Close'))
				])
			]);
		}, this)).catch(function(err) {
			ui.addNotification(null, E('p', {}, [ _('Could not make the client configuration: %s').format(err.message || err) ]), 'error');
		});
	},

	renderPeer: function(ifc, peer, now) {
		var state = conf.peerState(peer.latest_handshake, now),
		    allowed = L.toArray(peer.allowed_ips);

		return E('tr', { 'class': 'tr solowg-peer', 'data-public-key': peer.public_key }, [
			E('td', { 'class': 'td', 'data-title': _('Peer') }, [
				E('strong', {}, [ peer.description || _('(no description)') ]), E('br'),
				E('code', { 'title': peer.public_key }, [ shortKey(peer.public_key) ]),
				peer.preshared_key ? E('span', { 'class': 'solowg-psk', 'title': _('A preshared key is set'), 'style': 'font-size:75%;margin-left:.4em;border:1px solid #999;border-radius:.3em;padding:0 .2em' }, [ _('PSK') ]) : ''
			]),
			E('td', { 'class': 'td', 'data-title': _('Endpoint') }, [
				peer.endpoint ? String(peer.endpoint) : E('em', {}, _('none')),
				(peer.endpoint_host && peer.endpoint_host != peer.endpoint) ? E('div', { 'style': 'font-size:85%' }, [ peer.endpoint_host ]) : ''
			]),
			E('td', { 'class': 'td', 'data-title': _('Latest handshake') }, [
				badge(state), ' ',
				E('span', { 'class': 'solowg-age', 'title': peer.latest_handshake ? new Date(peer.latest_handshake * 1000).toLocaleString() : '' },
					[ ageText(peer.latest_handshake, now) ])
			]),
			E('td', { 'class': 'td', 'data-title': _('Transfer') }, [
				_('Received: %s').format(conf.formatBytes(peer.rx_bytes || 0)), E('br'),
				_('Sent: %s').format(conf.formatBytes(peer.tx_bytes || 0))
			]),
			E('td', { 'class': 'td', 'data-title': _('Rate') },
				renderGraph(this.history[ifc.name + '/' + peer.public_key] || [], now)),
			E('td', { 'class': 'td', 'data-title': _('Allowed IPs') },
				allowed.length ? allowed.map(function(a) { return E('div', {}, [ a ]); }) : E('em', {}, _('none'))),
			E('td', { 'class': 'td cbi-section-actions' }, this.writable ? E('button', {
				'class': 'btn cbi-button cbi-button-action solowg-client-button',
				'click': ui.createHandlerFn(this, 'handleClientConfig', ifc, peer)
			}, _('Client configuration')) : '')
		]);
	},

	renderInterface: function(ifc, now) {
		var drops = ifc.drops || {},
		    /* the daemon's counter names (no_route, ...) as short texts; the
		     * name stays in the tooltip for logs and bug reports */
		    dropList = Object.keys(drops).filter(function(k) { return drops[k] > 0; })
		    	.map(function(k) {
		    		return E('div', { 'class': 'solowg-drop', 'data-reason': k, 'title': k },
		    			[ '%s: %d'.format(conf.dropReasonText(k), drops[k]) ]);
		    	}),
		    peers = ifc.peers || [];

		return E('div', { 'class': 'cbi-section solowg-interface', 'data-interface': ifc.name }, [
			E('h3', {}, [ _('Interface %s').format(ifc.name) ]),
			E('table', { 'class': 'table' }, [
				[ _('Public key'), E('code', {}, [ ifc.public_key || '' ]) ],
				[ _('Listen port'), ifc.listen_port || _('none') ],
				[ _('MTU'), ifc.mtu || '' ],
				[ _('Firewall mark'), ifc.fwmark ? '0x%x'.format(ifc.fwmark) : _('off') ],
				[ _('Dropped packets'), dropList.length ? E('div', {}, dropList) : _('none') ]
			].map(function(row) {
				return E('tr', { 'class': 'tr' }, [
					E('td', { 'class': 'td left', 'width': '25%' }, row[0]),
					E('td', { 'class': 'td left' }, [ row[1] ])
				]);
			})),
			E('table', { 'class': 'table solowg-peers' }, [
				E('tr', { 'class': 'tr table-titles' }, [
					E('th', { 'class': 'th' }, _('Peer')),
					E('th', { 'class': 'th' }, _('Endpoint')),
					E('th', { 'class': 'th' }, _('Latest handshake')),
					E('th', { 'class': 'th' }, _('Transfer')),
					E('th', { 'class': 'th' }, _('Rate (last 5 minutes)')),
					E('th', { 'class': 'th' }, _('Allowed IPs')),
					E('th', { 'class': 'th cbi-section-actions' }, '')
				])
			].concat(peers.length ? peers.map(L.bind(function(p) { return this.renderPeer(ifc, p, now); }, this))
				: [ E('tr', { 'class': 'tr placeholder' }, E('td', { 'class': 'td' }, E('em', {}, _('No peers configured.')))) ]))
		]);
	},

	renderStatus: function(status) {
		var now = status.time || Math.floor(Date.now() / 1000),
		    ifaces = status.interfaces || [],
		    /* `packet_tx` is true when the running daemon may send data through
		     * its packet socket; older daemons do not report it: UDP socket */
		    txPath = E('p', { 'class': 'solowg-txpath' }, [
		    	_('Transmit path: %s').format(status.packet_tx === true
		    		? _('packet socket where the NIC has no checksum offload')
		    		: _('UDP socket'))
		    ]);

		if (!ifaces.length)
			return E('div', {}, [ txPath, E('div', { 'class': 'cbi-section' }, E('em', {}, _('No solowg interface is up.'))) ]);

		return E('div', {}, [ txPath ].concat(ifaces.map(L.bind(function(ifc) { return this.renderInterface(ifc, now); }, this))));
	},

	/* solowg.main, read by the init script when the service starts. The map
	 * turns itself read-only when the session may not write solowg. */
	renderSettings: function() {
		var m = new form.Map('solowg', _('Daemon settings')),
		    s = m.section(form.NamedSection, 'main', 'solowg'),
		    o;

		o = s.option(form.Flag, 'packet_tx', _('Packet socket transmit'),
			_('Where the NIC has no checksum offload, send tunnel data through a packet socket: faster on such routers, but these datagrams pass no netfilter output or postrouting rule (no SNAT or masquerade, no kill-switch or counting rules, no marks set by output rules such as mwan3 or pbr). solowg stays on the UDP socket where it finds firewall-mark policy routing. Takes effect when the solowg service restarts.'));
		o.default = '0';
		/* always write 0 or 1: LuCI drops an option equal to its default, and
		 * the init script's default for a missing one need not be ours */
		o.rmempty = false;

		o = s.option(form.ListValue, 'log_level', _('Log level'),
			_('Takes effect when the solowg service restarts.'));
		o.value('info', _('Info'));
		o.value('verbose', _('Verbose'));
		o.value('error', _('Errors only'));
		o.value('silent', _('Silent'));
		o.default = 'info';
		o.rmempty = false;

		return m.render().catch(function(err) {
			return E('div', { 'class': 'cbi-section solowg-settings-error' }, E('em', {}, [
				_('The daemon settings could not be loaded: %s').format(err.message || err) ]));
		});
	},

	render: function(data) {
		var status = data[0] || {},
		    box = this.box = E('div', { 'id': 'solowg-status' });

		this.record(status);
		dom.content(box, this.renderStatus(status));

		poll.add(L.bind(this.refresh, this), POLL_SECONDS);

		var statusMap = E('div', { 'class': 'cbi-map solowg-status' }, [
			E('h2', {}, _('solowg')),
			E('div', { 'class': 'cbi-map-descr' }, [
				_('Tunnels of the solowg daemon. A peer is online when its latest handshake is younger than 180 seconds.'), ' ',
				this.writable ? E('button', {
					'class': 'btn cbi-button cbi-button-reload',
					'click': ui.createHandlerFn(this, 'handleReload')
				}, _('Reload configuration')) : E('p', { 'class': 'solowg-readonly-note' }, [
					_('You have read-only access: client configurations, keys and Reload need write access.') ])
			]),
			box
		]);

		/* the page footer's Save & Apply acts on the settings map only */
		return this.renderSettings().then(function(settings) {
			return E('div', {}, [ statusMap, settings ]);
		});
	}
});
