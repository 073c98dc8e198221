/* STAND-IN harness: loads one solowg page and optionally drives it. */
'use strict';

(function() {
	var q = new URLSearchParams(location.search), page = q.get('page'), action = q.get('action');
	var log = window.__standin, sleep = function(ms) { return new Promise(function(r) { setTimeout(r, ms); }); };

	document.getElementById('standin-pure').textContent = 'served modules: ' + window.STANDIN_PURE;
	log.page = page; log.action = action; log.steps = [];

	setInterval(function() {
		document.getElementById('standin-log').textContent = 'STANDIN-LOG ' + JSON.stringify(log);
	}, 500);

	var run;

	if (page == 'status') {
		run = L.require('view.solowg.status').then(function(v) { return v.ready; }).then(function() {
			log.steps.push('rendered');
			if (action != 'client')
				return;
			return sleep(16000).then(function() {
				var b = document.querySelector('.solowg-peer[data-public-key="' + STANDIN_KEYS.office + '"] .solowg-client-button');
				b.click();
				log.steps.push('clicked client configuration');
			});
		});
	}
	else if (page == 'proto') {
		var form, network, m;
		run = Promise.all([ L.require('form'), L.require('network'), L.require('uci'), L.require('protocol.solowg') ]).then(function(r) {
			form = r[0]; network = r[1];
			m = new form.Map('network', 'Interfaces » wg0');
			var s = m.section(form.NamedSection, 'wg0', 'interface');
			s.tab('general', 'General Settings');
			s.tab('advanced', 'Advanced Settings');
			var P = network.getProtocolClass('solowg'), proto = new P('wg0');
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
			if (action != 'import')
				return;
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
		});
	}

	Promise.resolve(run).then(function() { log.steps.push('done'); }).catch(function(e) {
		log.errors.push('harness: ' + (e.stack || e));
	});
})();
