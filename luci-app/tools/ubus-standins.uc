// ubus-standins.uc STATE.json — STAND-INS for OpenWrt's netifd and procd, for screenshots.sh
// only.
//
// netifd and procd need a full OpenWrt userland (/lib/netifd, shell handlers, init), so the
// screenshot run replaces them by this small ucode program that publishes, on the real
// ubusd, the few of their ubus objects LuCI's pages read, with the state screenshots.sh
// prepared
// (it did netifd's part of `ifup` itself: `ubus call solowg up`, then the addresses of the
// reply set on the TUN with ip(8)):
//   network                  get_proto_handlers (the protocols /lib/netifd/proto offers)
//   network.interface        dump
//   network.interface.<name> status, for each interface of STATE
//   network.device           status (no device details: {})
// and of procd:
//   system                   board (hostname, model, release; the theme's header reads it),
//                            info (uptime, time, memory of this host)
// They do nothing else: no setup, no routes, no events, no services.
import { readfile } from 'fs';
import * as ubus from 'ubus';
import * as uloop from 'uloop';

const state = json(readfile(ARGV[0]));

uloop.init();
const conn = ubus.connect();
if (!conn)
	die(`ubus connect failed: ${ubus.error()}\n`);

// uhttpd's ubus gateway adds ubus_rpc_session to every call; ucode's ubus module
// refuses arguments a method does not declare (UBUS_STATUS_INVALID_ARGUMENT)
function A(args) {
	return { ...(args ?? {}), ubus_rpc_session: '' };
}

function iface_status(name) {
	for (let i in state.interfaces)
		if (i.interface == name)
			return i;
	return null;
}

conn.publish('network', {
	get_proto_handlers: { call: (req) => state.protocols, args: A() },
});

conn.publish('network.interface', {
	dump: { call: (req) => ({ interface: state.interfaces }), args: A() },
	status: {
		call: (req) => iface_status(req.args.interface) ?? ubus.STATUS_NOT_FOUND,
		args: A({ interface: '' })
	},
});

for (let i in state.interfaces) {
	let name = i.interface;
	conn.publish(`network.interface.${name}`, {
		status: { call: (req) => iface_status(name), args: A() },
	});
}

conn.publish('network.device', {
	status: { call: (req) => ({}), args: A({ name: '' }) },
});

conn.publish('system', {
	board: { call: (req) => state.board, args: A() },
	info: {
		call: (req) => {
			let up = +split(readfile('/proc/uptime') ?? '0', ' ')[0];
			return { localtime: time(), uptime: int(up), load: [ 0, 0, 0 ],
				memory: { total: 0, free: 0, shared: 0, buffered: 0, available: 0, cached: 0 },
				root: {}, tmp: {}, swap: { total: 0, free: 0 } };
		},
		args: A()
	},
});

warn('ubus stand-ins: published system, network, network.interface, network.device and ' +
	join(', ', map(state.interfaces, i => `network.interface.${i.interface}`)) + '\n');
uloop.run();
