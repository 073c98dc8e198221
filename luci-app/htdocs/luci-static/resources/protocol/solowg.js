'use strict';
'require form';
'require network';
'require rpc';
'require uci';
'require ui';
'require solowg.conf as conf';

/*
 * Network → Interfaces → Add → "solowg": the interface form (keys, port,
 * addresses, MTU, fwmark, host routes, bound interface, IPv6 prefixes), its
 * peers (config solowg_<ifname>, and the wireguard_<ifname> sections of an
 * interface moved over from kernel WireGuard, which the daemon uses too) and
 * the import of a wg-quick .conf file. Keys come from the daemon (ubus solowg genkey,
 * pubkey, genpsk), so neither wireguard-tools nor the kernel module is needed.
 */

var callGenkey = rpc.declare({
	object: 'solowg',
	method: 'genkey',
	expect: { '': {} }
});

var callPubkey = rpc.declare({
	object: 'solowg',
	method: 'pubkey',
	params: [ 'private_key' ],
	expect: { '': {} }
});

var callGenpsk = rpc.declare({
	object: 'solowg',
	method: 'genpsk',
	expect: { '': {} }
});

function validateKey(section_id, value) {
	if (value == null || value === '')
		return true;

	return conf.validKey(value) ? true : _('Expected a 44-character base64 key ending in "="');
}

function validateCidr(section_id, value) {
	if (value == null || value === '')
		return true;

	var m = String(value).match(/^([^/]+)(?:\/(\d{1,3}))?$/),
	    v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

	if (m) {
		var a = m[1].match(v4);

		if (a && a.slice(1).every(function(o) { return +o <= 255; }) && (m[2] == null || +m[2] <= 32))
			return true;

		if (!a && m[1].indexOf(':') >= 0 && /^[0-9a-fA-F:.]+$/.test(m[1]) && (m[2] == null || +m[2] <= 128))
			return true;
	}

	return _('Expected an IPv4 or IPv6 address with an optional prefix length, e.g. 10.0.0.2/32');
}

/* The derived public key of whatever private key the form holds now. */
function showPublicKey(map, section_id, privateKey) {
	var target = map.lookupOption('_public_key', section_id),
	    widget = target ? target[0].getUIElement(section_id) : null;

	if (!widget)
		return Promise.resolve();

	if (!privateKey || !conf.validKey(privateKey)) {
		widget.setValue('');
		return Promise.resolve();
	}

	return callPubkey(privateKey).then(function(res) {
		widget.setValue((res && res.public_key) || '');
	}).catch(function() {
		widget.setValue('');
	});
}

function setWidget(map, name, section_id, value) {
	var found = map.lookupOption(name, section_id),
	    widget = found ? found[0].getUIElement(section_id) : null;

	if (widget)
		widget.setValue(value);
}

/* The UCI section types holding the peers of interface `ifname`: solowg's own
 * and kernel WireGuard's, which the daemon reads as well (an interface moved
 * from proto wireguard keeps its peers). */
function peerTypes(ifname) {
	return [ 'solowg_%s'.format(ifname), 'wireguard_%s'.format(ifname) ];
}

function removePeers(ifname) {
	peerTypes(ifname).forEach(function(type) {
		uci.sections('network', type, function(s) {
			uci.remove('network', s['.name']);
		});
	});
}

/* The peer options of a grid; the same for both section types. */
function addPeerOptions(ss) {
	var o;

	o = ss.option(form.Flag, 'disabled', _('Disabled'), _('Keep this peer configured but unused.'));
	o.editable = true;
	o.optional = true;

	o = ss.option(form.Value, 'description', _('Description'), _('A name for this peer, shown on the status page.'));
	o.placeholder = _('e.g. Phone');

	o = ss.option(form.Value, 'public_key', _('Public key'), _('The public key of the other end.'));
	o.validate = function(section_id, value) {
		if (!value)
			return _('A public key is required');

		return validateKey(section_id, value);
	};
	o.textvalue = function(section_id) {
		var v = this.cfgvalue(section_id) || '';

		return E('code', { 'title': v }, [ v ? '%s…%s'.format(v.substr(0, 5), v.substr(-6)) : '' ]);
	};

	o = ss.option(form.Value, 'preshared_key', _('Preshared key'),
		_('Optional extra symmetric key; both ends must have the same one.'));
	o.password = true;
	o.modalonly = true;
	o.optional = true;
	o.validate = validateKey;

	o = ss.option(form.Button, '_generate_psk', _('Generate preshared key'));
	o.inputtitle = _('Generate PSK');
	o.inputstyle = 'apply';
	o.modalonly = true;
	o.onclick = function(ev, section_id) {
		var map = this.map;

		return callGenpsk().then(function(res) {
			setWidget(map, 'preshared_key', section_id, res.preshared_key);
		}).catch(function(err) {
			ui.addNotification(null, E('p', {}, [ _('Key generation failed: %s').format(err.message || err) ]), 'error');
		});
	};

	o = ss.option(form.DynamicList, 'allowed_ips', _('Allowed IPs'),
		_('Addresses this peer may send from and that are sent to it, e.g. 10.0.0.2/32 or 0.0.0.0/0.'));
	o.validate = validateCidr;
	o.textvalue = function(section_id) {
		return L.toArray(this.cfgvalue(section_id)).join(', ');
	};

	o = ss.option(form.Flag, 'route_allowed_ips', _('Route allowed IPs'),
		_('Add routes for the allowed IPs through this interface.'));
	o.optional = true;

	o = ss.option(form.Value, 'endpoint_host', _('Endpoint host'),
		_('Address or host name of the peer; a name is resolved again when the peer goes quiet (dynamic DNS).'));
	o.datatype = 'host';
	o.optional = true;

	o = ss.option(form.Value, 'endpoint_port', _('Endpoint port'));
	o.datatype = 'port';
	o.placeholder = '51820';
	o.optional = true;

	o = ss.option(form.Value, 'persistent_keepalive', _('Persistent keepalive'),
		_('Seconds between keepalive packets, for peers behind NAT (25 is usual); empty: off.'));
	o.datatype = 'range(0,65535)';
	o.placeholder = '25';
	o.optional = true;
	o.modalonly = true;

	o = ss.option(form.Value, 'private_key', _('Client private key'),
		_('Optional: the private key of the other end, kept only so the status page can show its configuration and QR code again.'));
	o.password = true;
	o.optional = true;
	o.modalonly = true;
	o.validate = validateKey;
}

return network.registerProtocol('solowg', {
	getI18n: function() {
		return _('solowg (WireGuard-compatible VPN)');
	},

	getIfname: function() {
		return this._ubus('l3_device') || this.sid;
	},

	getPackageName: function() {
		return 'solowg';
	},

	/* Name used by LuCI releases older than getPackageName. */
	getOpkgPackage: function() {
		return 'solowg';
	},

	isFloating: function() {
		return true;
	},

	isVirtual: function() {
		return true;
	},

	getDevices: function() {
		return null;
	},

	containsDevice: function(ifname) {
		return (network.getIfnameOf(ifname) == this.getIfname());
	},

	/* Only solowg's own peers: wireguard_<ifname> sections belong to kernel
	 * WireGuard's protocol as well (its deleteConfiguration removes them), and
	 * an interface switched back to proto wireguard still needs them. */
	deleteConfiguration: function() {
		uci.sections('network', 'solowg_%s'.format(this.sid), function(s) {
			uci.remove('network', s['.name']);
		});
	},

	/* The import panel: paste, pick or drop a wg-quick .conf. It opens inline below
	 * the button, inside the interface dialog: LuCI has one modal, and opening another
	 * (ui.showModal) would replace the form and unregister its widgets. */
	handleImport: function(map, section_id, anchor) {
		var host = anchor && anchor.parentNode,
		    open = host && host.querySelector('.solowg-import-panel');

		if (open) {
			open.parentNode.removeChild(open);
			return Promise.resolve();
		}

		var area = E('textarea', {
			'class': 'cbi-input-textarea solowg-import-text',
			'style': 'width:100%;font-family:monospace',
			'rows': 14,
			'spellcheck': 'false',
			'placeholder': _('[Interface]\nPrivateKey = …\nAddress = 10.0.0.1/24\n\n[Peer]\nPublicKey = …\nAllowedIPs = 10.0.0.2/32')
		}),
		    file = E('input', { 'type': 'file', 'accept': '.conf,text/plain' }),
		    replace = E('input', { 'type': 'checkbox', 'checked': 'checked' }),
		    problems = E('div', {}),
		    panel,
		    read = function(f) {
		    	if (f)
		    		f.text().then(function(t) { area.value = t; });
		    },
		    close = function() {
		    	if (panel.parentNode)
		    		panel.parentNode.removeChild(panel);
		    };

		file.addEventListener('change', function() { read(file.files[0]); });
		area.addEventListener('dragover', function(ev) { ev.preventDefault(); });
		area.addEventListener('drop', function(ev) {
			ev.preventDefault();
			if (ev.dataTransfer && ev.dataTransfer.files.length)
				read(ev.dataTransfer.files[0]);
		});

		panel = E('div', { 'class': 'solowg-import-panel', 'style': 'margin-top:1em' }, [
			E('p', {}, _('Paste the contents of a wg-quick .conf file, drop the file on the text box or choose it. The [Interface] section fills this interface; every [Peer] section becomes a peer.')),
			area,
			E('p', {}, file),
			E('p', {}, E('label', {}, [ replace, ' ', _('Remove the peers this interface has now') ])),
			problems,
			E('div', {}, [
				E('button', {
					'class': 'btn cbi-button',
					'click': function(ev) { ev.preventDefault(); close(); }
				}, _('Cancel')),
				' ',
				E('button', {
					'class': 'btn cbi-button cbi-button-action important solowg-import-apply',
					'click': ui.createHandlerFn(this, function() {
						var parsed, u;

						try {
							parsed = conf.parseConf(area.value);
						}
						catch (e) {
							parsed = { errors: [ String(e.message || e) ] };
						}

						if (parsed.errors && parsed.errors.length) {
							while (problems.firstChild)
								problems.removeChild(problems.firstChild);
							problems.appendChild(E('div', { 'class': 'alert-message error' }, [
								E('p', {}, _('This is not a usable WireGuard configuration')),
								E('ul', {}, parsed.errors.map(function(e) { return E('li', {}, [ String(e) ]); }))
							]));
							return;
						}

						u = conf.confToUci(parsed);

						return this.applyImport(map, section_id, u, replace.checked).then(function(n) {
							var warnings = parsed.warnings || [];

							close();
							ui.addNotification(null, [
								E('p', {}, [ _('Imported the interface settings and %d peer(s); review them, then Save & Apply.').format(n) ])
							].concat(warnings.length ? [ E('ul', {}, warnings.map(function(w) { return E('li', {}, [ String(w) ]); })) ] : []), 'info');
						});
					})
				}, _('Import'))
			])
		]);

		host.appendChild(panel);
		return Promise.resolve();
	},

	/* Puts confToUci's result into the form (interface options) and into the
	 * staged UCI changes (peer sections), then redraws the form. */
	applyImport: function(map, section_id, u, replacePeers) {
		var type = 'solowg_%s'.format(section_id),
		    ifc = u.iface || {};

		[ 'private_key', 'listen_port', 'mtu', 'fwmark' ].forEach(function(opt) {
			if (ifc[opt] != null && ifc[opt] !== '')
				setWidget(map, opt, section_id, String(ifc[opt]));
		});

		if (ifc.addresses && ifc.addresses.length)
			setWidget(map, 'addresses', section_id, L.toArray(ifc.addresses));

		/* netifd's own per-interface DNS option; the form has no field for it. */
		if (ifc.dns && ifc.dns.length)
			uci.set('network', section_id, 'dns', L.toArray(ifc.dns));

		/* both types: kernel WireGuard's peers are as active as solowg's */
		if (replacePeers)
			removePeers(section_id);

		(u.peers || []).forEach(function(p) {
			var sid = uci.add('network', type);

			Object.keys(p).forEach(function(opt) {
				var v = p[opt];

				if (v == null || v === '' || (Array.isArray(v) && !v.length))
					return;

				uci.set('network', sid, opt, Array.isArray(v) ? v.map(String) : String(v));
			});
		});

		return showPublicKey(map, section_id, ifc.private_key).then(function() {
			return map.save(null, true);
		}).then(function() {
			return (u.peers || []).length;
		});
	},

	renderFormOptions: function(s) {
		var proto = this, o, ss;

		s.tab('peers', _('Peers'), _('The other ends of this tunnel. A peer is reachable once it has a public key and allowed IPs; give an endpoint for peers this router should contact itself.'));

		/* general: keys and addresses */
		o = s.taboption('general', form.Value, 'private_key', _('Private key'),
			_('The private key of this interface. Leave empty and solowg generates and saves one when the interface comes up.'));
		o.password = true;
		o.validate = validateKey;
		o.rmempty = true;
		o.onchange = function(ev, section_id, value) {
			return showPublicKey(this.map, section_id, value);
		};

		o = s.taboption('general', form.Button, '_generate_key', _('Generate a key pair'));
		o.inputtitle = _('Generate new key pair');
		o.inputstyle = 'apply';
		o.onclick = function(ev, section_id) {
			var map = this.map;

			return callGenkey().then(function(k) {
				setWidget(map, 'private_key', section_id, k.private_key);
				setWidget(map, '_public_key', section_id, k.public_key);
			}).catch(function(err) {
				ui.addNotification(null, E('p', {}, [ _('Key generation failed: %s').format(err.message || err) ]), 'error');
			});
		};

		o = s.taboption('general', form.Value, '_public_key', _('Public key'),
			_('Derived from the private key; give it to the peers.'));
		o.readonly = true;
		o.load = function(section_id) {
			var priv = uci.get('network', section_id, 'private_key');

			if (!priv || !conf.validKey(priv))
				return Promise.resolve('');

			return callPubkey(priv).then(function(res) {
				return (res && res.public_key) || '';
			}).catch(function() { return ''; });
		};
		o.write = function() {};
		o.remove = function() {};

		o = s.taboption('general', form.Value, 'listen_port', _('Listen port'),
			_('UDP port of this interface; needed when peers connect to this router. Empty: a random port.'));
		o.datatype = 'port';
		o.placeholder = '51820';
		o.optional = true;

		o = s.taboption('general', form.DynamicList, 'addresses', _('IP addresses'),
			_('Addresses of this interface in the tunnel, e.g. 10.0.0.1/24.'));
		o.validate = validateCidr;
		o.optional = true;

		o = s.taboption('general', form.Button, '_import', _('Import configuration'),
			_('Fill this interface and create its peers from a wg-quick .conf file.'));
		o.inputtitle = _('Import configuration…');
		o.inputstyle = 'action';
		o.onclick = function(ev, section_id) {
			return proto.handleImport(this.map, section_id, ev.currentTarget || ev.target);
		};

		/* advanced */
		o = s.taboption('advanced', form.Value, 'mtu', _('MTU'), _('Empty: 1420.'));
		o.datatype = 'range(1280,9200)';
		o.placeholder = '1420';
		o.optional = true;

		o = s.taboption('advanced', form.Value, 'fwmark', _('Firewall mark'),
			_('Mark put on the encrypted packets, as a hexadecimal number (e.g. 0x1234); empty: none.'));
		o.optional = true;
		o.validate = function(section_id, value) {
			if (value == null || value === '' || /^(0x[0-9a-fA-F]{1,8}|[0-9]{1,10})$/.test(value))
				return true;

			return _('Expected a number, decimal or hexadecimal (0x…)');
		};

		o = s.taboption('advanced', form.Flag, 'nohostroute', _('No host routes'),
			_('Do not add routes to the peers\' endpoints through the uplink. Needed only when the endpoints are reached through this tunnel or another one.'));
		o.optional = true;

		o = s.taboption('advanced', form.Value, 'tunlink', _('Bind interface'),
			_('The interface through which the peers\' endpoints are reached; the routes to them use it. Empty: any.'));
		o.optional = true;
		o.validate = function(section_id, value) {
			if (value == null || value === '' || /^[A-Za-z0-9_]+$/.test(value))
				return true;

			return _('Expected an interface name (letters, digits, _)');
		};
		uci.sections('network', 'interface', function(ifc) {
			if (ifc['.name'] != s.section && ifc['.name'] != 'loopback')
				o.value(ifc['.name']);
		});

		o = s.taboption('advanced', form.DynamicList, 'ip6prefix', _('IPv6 routed prefix'),
			_('IPv6 prefixes routed to this interface, handed out to downstream interfaces, e.g. fd00:10::/48.'));
		o.optional = true;
		o.validate = function(section_id, value) {
			if (value == null || value === '' || conf.validIp6Prefix(value))
				return true;

			return _('Expected an IPv6 prefix with its length, e.g. fd00:10::/48');
		};

		/* peers: solowg_<ifname> */
		o = s.taboption('peers', form.SectionValue, '_peers', form.GridSection, 'solowg_%s'.format(s.section));
		o.depends('proto', 'solowg');

		ss = o.subsection;
		ss.anonymous = true;
		ss.addremove = true;
		ss.addbtntitle = _('Add peer');
		ss.nodescriptions = true;
		ss.modaltitle = _('Edit peer');

		ss.renderSectionPlaceholder = function() {
			return E('em', {}, (uci.sections('network', 'wireguard_%s'.format(s.section)).length)
				? _('No solowg peers: the peers below come from kernel WireGuard.')
				: _('No peers yet: add one or import a configuration.'));
		};

		addPeerOptions(ss);

		/* wireguard_<ifname>: the peers of an interface that was proto
		 * wireguard. One GridSection shows one section type, so they get a
		 * grid of their own, drawn while there are any; new peers go to the
		 * grid above. */
		if (!uci.sections('network', 'wireguard_%s'.format(s.section)).length)
			return;

		o = s.taboption('peers', form.SectionValue, '_wireguard_peers', form.GridSection, 'wireguard_%s'.format(s.section),
			_('Peers kept from kernel WireGuard'),
			_('Sections of type wireguard_%s, left from when this interface was a kernel WireGuard interface. solowg uses them as well.').format(s.section));
		o.depends('proto', 'solowg');

		ss = o.subsection;
		ss.anonymous = true;
		ss.addremove = true;
		ss.nodescriptions = true;
		ss.modaltitle = _('Edit peer');
		/* removing is fine, adding goes to the solowg_ grid */
		ss.renderSectionAdd = function() {
			return E([]);
		};

		ss.renderSectionPlaceholder = function() {
			return E('em', {}, _('No peers left from kernel WireGuard.'));
		};

		addPeerOptions(ss);
	}
});
