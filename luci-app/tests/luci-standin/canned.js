/*
 * STAND-IN data for the browser test: what ubus `solowg ...`,
 * /etc/config/network and /etc/config/solowg could hold on a router. Counters
 * grow with every status call so the rate graph has something to draw. The
 * status reply's top-level `packet_tx` is true unless the page's query says
 * packet_tx=absent (an older daemon) or packet_tx=false. What
 * `/etc/init.d/solowg reload` prints (files/solowg.init, reload_service)
 * depends on reload=ok (the default: nothing), problems or fail.
 */
'use strict';

(function() {
	var K = {
		srvPriv: '9LHQ3qnh+p9d7JquR3eUf70bUOrgegetydgxwPHT8Zk=',
		srvPub: 'nfP77SbqNgHV3QADVX3hdYmOWSX+00QdYvuVM5oEUIU=',
		phone: 'Vn0fmKvgqxZMxc3BjZ5165S2qUeKNDpP5vsFYEV9+ks=',
		laptop: 'okEk1J+fYQNph66Jp03NWX9jM3rWMGWDAruBZt0Gui0=',
		office: 'krCjx/8ir+Jd6tdnGtnM3S283p68gRfhn4FxKTfs0Pg=',
		clientPriv: 'N7PSIOm5iWAbde95IDxLXufnUWsJvml7AxokR4lLssA=',
		psk: 'dtdXh7sM/y6lL8IIQvI8ZD5+FMlPUPAzaiQBxAyNJ70='
	};
	var calls = 0, t0 = 1764500000, rx = 1048576, tx = 5242880,
	    query = new URLSearchParams(location.search),
	    packetTx = query.get('packet_tx');

	window.STANDIN_KEYS = K;

	window.STANDIN_UBUS = {
		solowg: {
			status: function() {
				var now = t0 + 5 * calls, n = calls++;
				rx += 5 * (12000 + 8000 * (n % 3)); tx += 5 * (50000 + 18000 * (n % 4));
				var reply = {
					time: now,
					interfaces: [ {
						name: 'wg0', public_key: K.srvPub, listen_port: 51820, fwmark: 0, mtu: 1420,
						/* names as DropReason::name() in src/proto/device/drop_reason.rs, and one
						 * a newer daemon might add */
						drops: { unknown_index: 2, bad_mac1: 0, disallowed_source: 7, some_future_reason: 1 },
						peers: [ {
							public_key: K.phone, description: 'Phone <b>Anna</b>', endpoint: '198.51.100.7:40112',
							endpoint_host: '', latest_handshake: now - 34, rx_bytes: rx,
							tx_bytes: tx, allowed_ips: [ '10.0.0.2/32', 'fd00::2/128' ],
							persistent_keepalive: 25, preshared_key: true
						}, {
							public_key: K.laptop, description: 'Laptop', endpoint: '203.0.113.9:51820',
							endpoint_host: 'laptop.example.net', latest_handshake: now - 900, rx_bytes: 20480, tx_bytes: 40960,
							allowed_ips: [ '10.0.0.3/32' ], persistent_keepalive: 0, preshared_key: false
						}, {
							public_key: K.office, description: '', endpoint: '', endpoint_host: '',
							latest_handshake: 0, rx_bytes: 0, tx_bytes: 0, allowed_ips: [ '192.168.50.0/24' ],
							persistent_keepalive: 0, preshared_key: false
						} ]
					} ]
				};

				if (packetTx != 'absent')
					reply.packet_tx = packetTx != 'false';

				return reply;
			},
			/* the daemon has it; the pages no longer call it (see STANDIN_EXEC) */
			reload: function() { return { interfaces: [ 'wg0' ], errors: [] }; },
			genkey: function() { return { private_key: K.clientPriv, public_key: 'JtswlaTvA4J3gyEnHJ0CEWdeuzeZzB5lChAFx6Wzzc0=' }; },
			pubkey: function(a) { return { public_key: a.private_key == K.srvPriv ? K.srvPub : 'oMHRYu7QopwjFN9WLy3XyYjK6tJIb807G3EujOgIYKQ=' }; },
			genpsk: function() { return { preshared_key: K.psk }; }
		},
		/* netifd: the wan interface's state (documentation address) */
		'network.interface.wan': {
			status: function() {
				return {
					up: true, l3_device: 'eth1', proto: 'dhcp',
					'ipv4-address': [ { address: '203.0.113.45', mask: 24 } ],
					'ipv6-address': [], route: [ { target: '0.0.0.0', mask: 0, nexthop: '203.0.113.1' } ]
				};
			}
		}
	};

	/* Regular files rpcd's exec finds (it answers "not found" for others). */
	window.STANDIN_FILES = [ '/etc/init.d/solowg' ];

	/* rpcd's reply to `file exec` of a command line, keyed by it: the exit
	 * code, and stdout and stderr only when not empty. */
	window.STANDIN_EXEC = {
		'/etc/init.d/solowg reload': function() {
			switch (query.get('reload')) {
			case 'problems':
				/* a key the export could not save, then the daemon's errors,
				 * and an empty line the page is to skip */
				return { code: 0, stdout: [
					'solowg export: wg1: uci: I/O error; the daemon keeps a key in memory until it restarts',
					'',
					'wg0: peer \'Phone <b>Anna</b>\': allowed_ips \'10.0.0.300/32\' is not an address; peer skipped',
					'wg1: kept its previous configuration',
					''
				].join('\n') };
			case 'fail':
				/* nothing on stdout, a failure code */
				return { code: 1, stderr: 'Command failed: Not found\n' };
			default:
				return { code: 0 };
			}
		}
	};

	var i = 0;
	function sec(name, type, o) { o['.name'] = name; o['.type'] = type; o['.anonymous'] = /^cfg/.test(name); o['.index'] = i++; return o; }

	window.STANDIN_UCI = {
		network: {
			lan: sec('lan', 'interface', { proto: 'static', ipaddr: '192.168.1.1', netmask: '255.255.255.0' }),
			wan: sec('wan', 'interface', { proto: 'dhcp', device: 'eth1' }),
			wg0: sec('wg0', 'interface', { proto: 'solowg', private_key: K.srvPriv, listen_port: '51820', addresses: [ '10.0.0.1/24', 'fd00::1/64' ] }),
			cfg010001: sec('cfg010001', 'solowg_wg0', { description: 'Phone <b>Anna</b>', public_key: K.phone, preshared_key: K.psk, allowed_ips: [ '10.0.0.2/32', 'fd00::2/128' ], persistent_keepalive: '25' }),
			cfg010002: sec('cfg010002', 'solowg_wg0', { description: 'Laptop', public_key: K.laptop, allowed_ips: [ '10.0.0.3/32' ], endpoint_host: 'laptop.example.net', endpoint_port: '51820' }),
			cfg010003: sec('cfg010003', 'solowg_wg0', { public_key: K.office, allowed_ips: [ '192.168.50.0/24' ], route_allowed_ips: '1' }),
			/* wg1 was `proto wireguard`: its peer is still of type wireguard_wg1 */
			wg1: sec('wg1', 'interface', { proto: 'solowg', private_key: K.srvPriv, listen_port: '51821', addresses: [ '10.1.0.1/24' ] }),
			cfg020001: sec('cfg020001', 'wireguard_wg1', { description: 'Kernel-era tablet', public_key: K.laptop, allowed_ips: [ '10.1.0.2/32' ], endpoint_host: 'tablet.example.net', endpoint_port: '51820' })
		},
		/* what luci-app-ddns writes: an IPv6 and an IPv4 service, one disabled */
		ddns: {
			global: sec('global', 'ddns', { upd_privateip: '0' }),
			home_v6: sec('home_v6', 'service', { enabled: '1', use_ipv6: '1', lookup_host: 'home6.example.org', domain: 'home6.example.org', password: 'ddns-secret' }),
			old_v4: sec('old_v4', 'service', { enabled: '0', lookup_host: 'old.example.org', domain: 'old.example.org' }),
			home_v4: sec('home_v4', 'service', { enabled: '1', use_ipv6: '0', lookup_host: 'home.example.org', domain: 'home.example.org', password: 'ddns-secret' })
		},
		/* packet_tx left out: the page shows the form's default */
		solowg: {
			main: sec('main', 'solowg', { enabled: '1', log_level: 'info' })
		}
	};
})();

/* A two-peer wg-quick file for the import step of the browser test. */
window.STANDIN_IMPORT = [
	'[Interface]',
	'PrivateKey = ' + window.STANDIN_KEYS.clientPriv,
	'ListenPort = 51999',
	'Address = 10.9.0.1/24, fd09::1/64',
	'MTU = 1400',
	'',
	'[Peer]',
	'PublicKey = ' + window.STANDIN_KEYS.laptop,
	'AllowedIPs = 10.9.0.2/32',
	'Endpoint = 203.0.113.9:51820',
	'PersistentKeepalive = 25',
	'',
	'[Peer]',
	'PublicKey = ' + window.STANDIN_KEYS.office,
	'PresharedKey = ' + window.STANDIN_KEYS.psk,
	'AllowedIPs = 10.9.0.3/32, 192.168.60.0/24',
	''
].join('\n');
