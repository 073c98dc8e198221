/* STAND-IN harness: logs a user in, loads one solowg page and optionally drives it.
 *   ?page=status|proto  &action=...  &user=root|readonly (acl-model.js users; root by default)
 *   status: &ddns=absent (no luci-app-ddns group)  &wan=denied (acl.d without the wan grant)
 *           &exec=denied (acl.d without its file grant)  &reload=ok|problems|fail (canned.js)
 *   proto:  &iface=wg0|wg1 (the interface whose form is drawn; wg0 by default)
 */
'use strict';

(function() {
	var q = new URLSearchParams(location.search), page = q.get('page'), action = q.get('action'),
	    user = q.get('user') || 'root';
	var log = window.__standin, sleep = function(ms) { return new Promise(function(r) { setTimeout(r, ms); }); };
	var ACL = '/app-root/usr/share/rpcd/acl.d/luci-app-solowg.json',
	    MENU = '/app-root/usr/share/luci/menu.d/luci-app-solowg.json';

	document.getElementById('standin-pure').textContent = 'served modules: ' + window.STANDIN_PURE + '; user: ' + user;
	log.page = page; log.action = action; log.steps = [];

	setInterval(function() {
		document.getElementById('standin-log').textContent = 'STANDIN-LOG ' + JSON.stringify(log);
	}, 500);

	/* settles a promise into 'allowed' or 'denied: <message>' */
	var outcome = function(p) {
		return Promise.resolve(p).then(function() { return 'allowed'; }, function(e) { return 'denied: ' + (e && e.message || e); });
	};

	var run;

	if (page == 'status') {
		var view;

		run = L.standinBoot({
			user: user, aclFiles: [ ACL ], menuFile: MENU, menuPath: 'admin/status/solowg',
			/* ddns=absent: no luci-app-ddns, /etc/config/ddns not readable */
			extraAcls: q.get('ddns') == 'absent' ? [] : [ window.StandinAcl.ddnsAcl ],
			/* wan=denied: the app's group without its network.interface.wan
			 * grant; exec=denied: without its file grant (ubus `file exec` stays,
			 * so rpcd, not uhttpd, refuses the command) */
			aclFilter: (q.get('wan') == 'denied' || q.get('exec') == 'denied') ? function(file) {
				var copy = JSON.parse(JSON.stringify(file));
				Object.keys(copy).forEach(function(g) {
					[ 'read', 'write' ].forEach(function(perm) {
						if (!copy[g][perm])
							return;
						if (q.get('wan') == 'denied' && copy[g][perm].ubus)
							delete copy[g][perm].ubus['network.interface.wan'];
						if (q.get('exec') == 'denied')
							delete copy[g][perm].file;
					});
				});
				return copy;
			} : null
		}).then(function() {
			if (!L.env.nodespec.satisfied)
				throw new Error('the dispatcher would answer 403 for this user');

			return L.require('view.solowg.status');
		}).then(function(v) {
			view = v;
			return v.ready;
		}).then(function() {
			log.steps.push('rendered');

			if (action == 'client')
				return sleep(16000).then(function() {
					var b = document.querySelector('.solowg-peer[data-public-key="' + STANDIN_KEYS.office + '"] .solowg-client-button');
					b.click();
					log.steps.push('clicked client configuration');
				});

			if (action == 'settings')
				return settings();

			if (action == 'reload')
				return reload();

			if (action == 'probe')
				return probe(view);
		});
	}
	else if (page == 'proto') {
		var form, network, m, ifname = q.get('iface') || 'wg0';
		log.iface = ifname;
		/* Network → Interfaces belongs to luci-mod-network; its node is taken as writable */
		run = L.standinBoot({ user: user, aclFiles: [ ACL ], nodespec: { satisfied: true, readonly: false } }).then(function() {
			return Promise.all([ L.require('form'), L.require('network'), L.require('uci'), L.require('protocol.solowg') ]);
		}).then(function(r) {
			/* LuCI's network.js loads /etc/config/network before the interfaces
			 * view builds an interface's form */
			return r[2].load('network').then(function() { return r; });
		}).then(function(r) {
			form = r[0]; network = r[1];
			m = new form.Map('network', 'Interfaces » ' + ifname);
			var s = m.section(form.NamedSection, ifname, 'interface');
			s.tab('general', 'General Settings');
			s.tab('advanced', 'Advanced Settings');
			var P = network.getProtocolClass('solowg'), proto = new P(ifname);
			log.i18n = proto.getI18n();
			log.package = [ proto.getPackageName(), proto.getOpkgPackage() ];
			proto.renderFormOptions(s);
			return m.render();
		}).then(function(node) {
			document.getElementById('view').appendChild(node);
			log.steps.push('rendered');
			return sleep(500);
		}).then(function() {
			if (action == 'genkey') {
				document.querySelector('button[data-option="_generate_key"]').click();
				return sleep(500).then(function() { log.steps.push('generated'); });
			}
			if (action == 'advanced')
				return advanced();
			if (action == 'legacy')
				return legacyEdit().then(importFile);
			if (action == 'import')
				return importFile();
		});
	}

	/* The advanced tab: tick nohostroute, bind to wan, add an IPv6 prefix, save. */
	function advanced() {
		var inForm = function(opt) { return document.querySelector('.cbi-map [data-option="' + opt + '"]'); };

		return L.require('uci').then(function(uci) {
			log.advanced_before = JSON.parse(JSON.stringify(uci.state.network[ifname]));
			inForm('nohostroute').checked = true;
			inForm('tunlink').value = 'wan';
			var list = inForm('ip6prefix').querySelector('input');
			list.value = 'fd00:10::/48';
			list.dispatchEvent(new Event('change'));
			return m.save().then(function() {
				log.advanced_saved = JSON.parse(JSON.stringify(uci.state.network[ifname]));
				log.steps.push('saved advanced');
			});
		});
	}

	/* A peer of type wireguard_<if>: listed, edited in its row, saved. */
	function legacyEdit() {
		var type = 'wireguard_' + ifname,
		    row = function() { return document.querySelector('table[data-type="' + type + '"] tr[data-sid="cfg020001"]'); };

		return L.require('uci').then(function(uci) {
			log.legacy_row = !!row();
			log.legacy_rows_before = document.querySelectorAll('table[data-type="' + type + '"] tr.cbi-section-table-row').length;
			log.solowg_rows_before = document.querySelectorAll('table[data-type="solowg_' + ifname + '"] tr.cbi-section-table-row').length;
			row().querySelector('input[data-option="description"]').value = 'Tablet (edited)';
			row().querySelector('input[data-option="endpoint_port"]').value = '51999';
			return m.save().then(function() {
				log.legacy_saved = JSON.parse(JSON.stringify(uci.state.network.cfg020001 || null));
				log.legacy_row_after_save = !!row() && row().querySelector('input[data-option="description"]').value;
				log.steps.push('edited legacy peer');
			});
		});
	}

	function importFile() {
		document.querySelector('button[data-option="_import"]').click();
		return sleep(300).then(function() {
			document.querySelector('.solowg-import-text').value = window.STANDIN_IMPORT;
			document.querySelector('.solowg-import-apply').click();
			return sleep(1000);
		}).then(function() {
			log.steps.push('imported');
			return L.require('uci');
		}).then(function(uci) {
			log.uci_after_import = JSON.parse(JSON.stringify(uci.state.network));
		});
	}

	/* Clicks Reload between two polls and records what the page showed; then
	 * tries other command lines the way a user could from the console. */
	function reload() {
		var fs, at;

		return sleep(6000).then(function() {
			at = log.calls.length;
			document.querySelector('.cbi-button-reload').click();
			return sleep(1000);
		}).then(function() {
			log.reload_calls = log.calls.slice(at);
			log.notifications = Array.prototype.map.call(document.querySelectorAll('#notifications .alert-message'), function(n) {
				var h = n.querySelector('h4');
				return {
					'class': n.className,
					title: h ? h.textContent : null,
					items: Array.prototype.map.call(n.querySelectorAll('li'), function(li) { return li.innerHTML; }),
					text: n.textContent
				};
			});
			log.steps.push('reloaded');
			return L.require('fs');
		}).then(function(f) {
			fs = f;
			return Promise.all([
				[ '/etc/init.d/solowg', [ 'stop' ] ],
				[ '/etc/init.d/solowg', [ 'restart' ] ],
				[ '/etc/init.d/solowg', [ 'disable' ] ],
				[ '/etc/init.d/solowg', [ 'reload', 'now' ] ],
				[ '/etc/init.d/solowg', null ],
				[ '/etc/init.d/solowg', [ 'reload' ], { PATH: '/tmp' } ],
				[ '/etc/init.d/solowg reload', null ],
				[ '/etc/init.d/../init.d/solowg', [ 'reload' ] ]
			].map(function(c) {
				return outcome(fs.exec(c[0], c[1], c[2])).then(function(o) {
					return [ [ c[0] ].concat(c[1] || []).join(' ') + (c[2] ? ' (with env)' : ''), o ];
				});
			}));
		}).then(function(res) {
			log.exec_probes = {};
			res.forEach(function(r) { log.exec_probes[r[0]] = r[1]; });
		});
	}

	/* Full access: tick packet_tx, pick a log level, Save; then untick, Save. */
	function settings() {
		var uci, saveButton = function() { return document.querySelector('.cbi-page-actions .cbi-button-save'); };
		var inMap = function(sel) { return document.querySelector('.cbi-map[data-config="solowg"] ' + sel); };

		return L.require('uci').then(function(u) {
			uci = u;
			var cb = inMap('input[data-option="packet_tx"]'), sel = inMap('select[data-option="log_level"]');
			log.settings_before = { packet_tx: cb.checked, log_level: sel.value, disabled: cb.disabled || sel.disabled };
			cb.checked = true;
			sel.value = 'verbose';
			saveButton().click();
			return sleep(500);
		}).then(function() {
			log.settings_saved_on = JSON.parse(JSON.stringify(uci.state.solowg.main));
			inMap('input[data-option="packet_tx"]').checked = false;
			saveButton().click();
			return sleep(500);
		}).then(function() {
			log.settings_saved_off = JSON.parse(JSON.stringify(uci.state.solowg.main));
			log.steps.push('saved settings');
		});
	}

	/* Read-only: what the view asked for on its own, then what the session
	 * may do when asked directly (as a user could from the browser console). */
	function probe(v) {
		var rpc, uci, probes = log.probes = {};

		return sleep(16000).then(function() {
			log.view_uci_loads = log.uci_loads.slice();
			log.view_calls = log.calls.slice();

			/* the dialog's handler, called without its button */
			return Promise.resolve(v.handleClientConfig(
				{ name: 'wg0', public_key: STANDIN_KEYS.srvPub, listen_port: 51820 },
				{ public_key: STANDIN_KEYS.phone, allowed_ips: [ '10.0.0.2/32' ], description: 'Phone' }));
		}).then(function() {
			var ov = document.getElementById('modal_overlay');
			probes.client_dialog = ov && ov.textContent.trim() ? 'shown' : 'not shown';

			/* a disabled Save cannot be clicked */
			var save = document.querySelector('.cbi-page-actions .cbi-button-save');
			probes.footer_save = save ? (save.disabled ? 'disabled' : 'enabled') : 'absent';
			var saves = log.uci_saves;
			if (save) save.click();
			probes.footer_save_click_saved = log.uci_saves != saves;

			return Promise.all([ L.require('rpc'), L.require('uci') ]);
		}).then(function(r) {
			rpc = r[0]; uci = r[1];
			var call = function(object, method, params) {
				return rpc.declare({ object: object, method: method, params: params || [], expect: { '': {} } });
			};

			return Promise.all([
				outcome(call('solowg', 'status')()),
				outcome(uci.load('network')),
				outcome(call('solowg', 'genkey')()),
				outcome(call('solowg', 'genpsk')()),
				outcome(call('solowg', 'reload')()),
				outcome(uci.load('solowg')),
				L.require('fs').then(function(fs) { return outcome(fs.exec('/etc/init.d/solowg', [ 'reload' ])); }),
				rpc.declare({ object: 'session', method: 'access', params: [ 'scope', 'object', 'function' ], expect: { access: false } })('uci', 'solowg', 'write')
			]);
		}).then(function(res) {
			probes.status = res[0];
			probes.uci_network = res[1];
			probes.genkey = res[2];
			probes.genpsk = res[3];
			probes.reload = res[4];
			probes.uci_solowg = res[5];
			probes.exec_reload = res[6];
			probes.session_access_uci_solowg_write = res[7];

			uci.set('solowg', 'main', 'packet_tx', '1');
			return outcome(uci.save());
		}).then(function(saved) {
			probes.uci_save_solowg = saved;
			log.steps.push('probed');
		});
	}

	Promise.resolve(run).then(function() { log.steps.push('done'); }).catch(function(e) {
		log.errors.push('harness: ' + (e.stack || e));
	});
})();
