/*
 * STAND-IN for LuCI's client runtime, written for luci-app-solowg's browser
 * test. It is NOT LuCI: it provides only what the solowg views call (L, E, _,
 * String.prototype.format, L.Class, L.hasViewPermission, and the modules
 * baseclass, view, rpc, poll, uci, ui, dom, form, network, fs) with the
 * same calling conventions, backed by canned data (canned.js) instead of
 * rpcd/ubus; the module uqr is the stand-in that uqr-standin.js builds
 * (serve.js serves it).
 *
 * Access control follows the same mechanism as on a router (acl-model.js):
 * L.standinBoot() logs a user in over the app's real acl.d file and builds
 * the page's L.env.nodespec from its real menu.d entry, as the dispatcher
 * does; every rpc call is checked like uhttpd checks ubus calls, uci.load and
 * uci.save like rpcd's uci plugin, fs.exec like uhttpd and then rpcd's file
 * plugin, and form.Map asks `session access` whether it may write its config,
 * as LuCI's form.js does.
 *
 * What it cannot prove: that LuCI's real form/ui classes lay out, validate,
 * save and apply the options the same way, that the real rpcd answers as the
 * model does, or how a real theme looks.
 */
'use strict';

(function() {
	var log = window.__standin = { calls: [], denied: [], errors: [], uci_loads: [], uci_saves: 0, uci_saved: [], execs: [] };

	window.addEventListener('error', function(ev) { log.errors.push(String(ev.message)); });
	window.addEventListener('unhandledrejection', function(ev) { log.errors.push('rejection: ' + String(ev.reason && (ev.reason.stack || ev.reason))); });

	/* String.prototype.format: the subset of LuCI's directives the views use. */
	String.prototype.format = function() {
		var args = arguments, i = 0;

		return this.replace(/%(%|-?\d*(?:\.(\d+))?([sdxfh]))/g, function(m, all, prec, conv) {
			if (all == '%')
				return '%';

			var v = args[i++];

			switch (conv) {
			case 's': return String(v);
			case 'd': return String(Math.floor(+v));
			case 'x': return (+v).toString(16);
			case 'f': return (+v).toFixed(prec != null ? +prec : 6);
			case 'h': return String(v).replace(/[&<>"']/g, function(c) { return '&#' + c.charCodeAt(0) + ';'; });
			}
		});
	};

	window._ = function(s) { return s; };
	window.N_ = function(n, s, p) { return n == 1 ? s : p; };

	/* --- class system ------------------------------------------------ */
	function extend(parent, props) {
		var cls = function() {
			if (typeof this.__init__ == 'function')
				return this.__init__.apply(this, arguments);
		};

		cls.prototype = Object.create(parent.prototype);
		Object.keys(props || {}).forEach(function(k) { cls.prototype[k] = props[k]; });
		cls.prototype.constructor = cls;
		cls.extend = function(p) { return extend(cls, p); };

		return cls;
	}

	var Base = function() {};
	Base.extend = function(p) { return extend(Base, p); };

	/* --- dom ------------------------------------------------------------ */
	var dom = {
		elem: function(e) { return e != null && typeof e == 'object' && 'nodeType' in e; },
		/* As in LuCI: array items become text nodes, a lone string is HTML. */
		append: function(node, children) {
			if (Array.isArray(children))
				children.forEach(function(c) {
					if (dom.elem(c))
						node.appendChild(c);
					else if (c != null)
						node.appendChild(document.createTextNode(String(c)));
				});
			else if (dom.elem(children))
				node.appendChild(children);
			else if (children != null)
				node.innerHTML = String(children);

			return node;
		},
		content: function(node, children) {
			while (node.firstChild)
				node.removeChild(node.firstChild);

			return dom.append(node, children);
		},
		/* LuCI binds a form.Map to its node; the view footer finds it there */
		bindClassInstance: function(node, inst) { instances.set(node, inst); return inst; },
		findClassInstance: function(node) {
			for (; node; node = node.parentNode)
				if (instances.has(node))
					return instances.get(node);
			return null;
		},
		callClassMethod: function(node, method) {
			var inst = dom.findClassInstance(node);
			return (inst && typeof inst[method] == 'function')
				? inst[method].apply(inst, Array.prototype.slice.call(arguments, 2)) : null;
		}
	};
	var instances = new WeakMap();

	window.E = function(tag, attrs, children) {
		if (Array.isArray(attrs) || dom.elem(attrs) || typeof attrs == 'string') {
			children = attrs;
			attrs = null;
		}

		/* as LuCI's dom.create: E([], children) is a document fragment */
		if (Array.isArray(tag))
			return dom.append(document.createDocumentFragment(), tag.concat(children != null ? [].concat(children) : []));

		var el = document.createElement(tag);

		Object.keys(attrs || {}).forEach(function(k) {
			var v = attrs[k];

			if (typeof v == 'function')
				el.addEventListener(k, v);
			else if (v != null && v !== false)
				el.setAttribute(k, v === true ? '' : v);
		});

		return dom.append(el, children);
	};

	/* --- L ---------------------------------------------------------------- */
	var modules = {}, loading = {};

	var session = null;

	var L = window.L = {
		env: { resource: '/luci-static/resources', nodespec: null },
		/* As luci.js: null without access to the page node, false when the
		 * dispatcher marked it read-only, true when writable. */
		hasViewPermission: function() {
			var spec = L.env.nodespec;

			if (spec == null || typeof spec != 'object' || !spec.satisfied)
				return null;

			return !spec.readonly;
		},
		/* What rpcd and the dispatcher did before the page reached the browser:
		 * log `user` (acl-model.js users) in over the served acl.d files and
		 * resolve the menu.d node `menuPath` (or take `nodespec` as given). */
		standinBoot: function(opts) {
			var fetchJson = function(url) {
				return fetch(url).then(function(r) {
					if (!r.ok)
						throw new Error('cannot load ' + url + ': ' + r.status);
					return r.json();
				});
			};

			return Promise.all(opts.aclFiles.map(fetchJson).concat(opts.menuFile ? [ fetchJson(opts.menuFile) ] : []))
				.then(function(res) {
					var menu = opts.menuFile ? res.pop() : null;

					/* aclFilter: a scenario's change to the app's acl.d files (an older
					 * or trimmed grant); extraAcls: other packages' groups */
					if (opts.aclFilter)
						res = res.map(opts.aclFilter);

					session = window.StandinAcl.login(window.StandinAcl.users[opts.user],
						[ window.StandinAcl.baseAcl ].concat(opts.extraAcls || [], res));
					log.user = opts.user;

					if (menu) {
						if (!menu[opts.menuPath])
							throw new Error('no menu node ' + opts.menuPath);

						L.env.nodespec = window.StandinAcl.nodespec(menu[opts.menuPath], session, function(config) {
							return Object.keys(window.STANDIN_UCI[config] || {}).length > 0;
						});
					}
					else
						L.env.nodespec = opts.nodespec;

					log.nodespec = { satisfied: L.env.nodespec.satisfied, readonly: !!L.env.nodespec.readonly };
				});
		},
		/* LuCI's legacy alias of baseclass; luci-lib-uqr's uqr.js extends it */
		Class: Base,
		bind: function(fn, self) {
			var extra = Array.prototype.slice.call(arguments, 2);
			return function() { return fn.apply(self, extra.concat(Array.prototype.slice.call(arguments))); };
		},
		toArray: function(v) {
			if (v == null) return [];
			if (Array.isArray(v)) return v;
			return String(v).trim().split(/\s+/).filter(function(x) { return x.length; });
		},
		resolveDefault: function(p, def) {
			return Promise.resolve(p).catch(function() { return def; });
		},
		resource: function(path) { return L.env.resource + '/' + path; },
		url: function(path) { return '/cgi-bin/luci/' + path; },
		define: function(name, value) { modules[name] = Promise.resolve(value); },
		/* Like LuCI's loader: fetch the file, collect its 'require x [as y]'
		 * lines and run it as a function of those modules; a class result is
		 * instantiated. */
		require: function(name) {
			if (modules[name])
				return modules[name];

			var url = L.resource(name.replace(/\./g, '/') + '.js');

			return modules[name] = fetch(url).then(function(r) {
				if (!r.ok)
					throw new Error('cannot load ' + url + ': ' + r.status);

				return r.text();
			}).then(function(src) {
				var names = [], deps = [], re = /^\s*'require ([A-Za-z0-9_.]+)(?: as ([A-Za-z_$][A-Za-z0-9_$]*))?';/gm, m;

				if (!/^\s*'use strict';/.test(src))
					throw new Error(url + ' does not start with \'use strict\'');

				while ((m = re.exec(src)) != null) {
					names.push(m[2] || m[1].replace(/\./g, '_'));
					deps.push(L.require(m[1]));
				}

				return Promise.all(deps).then(function(vals) {
					var factory = new Function(['window', 'document', 'L'].concat(names).join(','),
						src + '\n//# sourceURL=' + url);
					var res = factory.apply(null, [ window, document, L ].concat(vals));

					if (typeof res != 'function')
						throw new Error(url + ' did not return a class');

					return new res();
				});
			});
		}
	};

	L.define('baseclass', { extend: Base.extend, singleton: function(p) { return new (Base.extend(p))(); } });
	L.define('dom', dom);

	/* --- rpc: canned ubus objects from canned.js ------------------------- */

	/* rpcd's session object (acl-model.js answers) */
	var sessionObject = {
		access: function(a) {
			if (a.object != null && a['function'] != null)
				return { access: session.access(a.scope || 'ubus', a.object, a['function']) };
			return session.dump();
		}
	};

	/* uhttpd refuses a call the session may not make with JSON-RPC error
	 * -32002; LuCI's rpc.js rejects with this message. */
	function ubusDenied(object, method) {
		log.denied.push(object + '.' + method);
		return new Error('RPC call to ' + object + '/' + method + ' failed with error -32002: Access denied');
	}

	L.define('rpc', {
		declare: function(d) {
			return function() {
				var args = {}, argv = arguments;

				(d.params || []).forEach(function(p, i) { args[p] = argv[i]; });
				log.calls.push(d.object + '.' + d.method);

				if (!session)
					return Promise.reject(new Error('stand-in: no session (L.standinBoot not called)'));

				if (!session.access('ubus', d.object, d.method))
					return Promise.reject(ubusDenied(d.object, d.method));

				var handler = d.object == 'session' ? sessionObject[d.method] : (window.STANDIN_UBUS[d.object] || {})[d.method];

				if (!handler)
					return Promise.reject(new Error('Access denied / no such method ' + d.object + '.' + d.method));

				return Promise.resolve(handler(args)).then(function(ret) {
					for (var key in (d.expect || {})) {
						if (key != '' && ret != null) ret = ret[key];
						if (ret == null || typeof ret != typeof d.expect[key]) ret = d.expect[key];
						break;
					}
					return ret;
				});
			};
		}
	});

	/* --- fs: exec only, through rpcd's file plugin ------------------------ */

	/* As rpc.js's getStatusText and fs.js's error names: fs.js rejects with
	 * these when rpcd answers a non-zero ubus status. */
	var ubusStatusText = [ 'Command OK', 'Invalid command', 'Invalid argument', 'Method not found',
		'Resource not found', 'No data received', 'Permission denied', 'Request timeout', 'Not supported' ];
	var fsErrorNames = [ null, 'InvalidCommandError', 'InvalidArgumentError', 'MethodNotFoundError',
		'NotFoundError', 'NoDataError', 'PermissionError', 'TimeoutError', 'UnsupportedError' ];

	function isFile(path) {
		return (window.STANDIN_FILES || []).indexOf(window.StandinAcl.canonicalPath(path)) >= 0;
	}

	L.define('fs', {
		/* uhttpd checks ubus `file exec`, then rpcd the command line against
		 * the session's file grants (acl-model.js fileExec); an allowed
		 * command answers from canned.js's STANDIN_EXEC as rpcd would:
		 * { code, stdout, stderr }, the last two only when not empty. */
		exec: function(command, params, env) {
			params = Array.isArray(params) ? params : null;
			env = (env != null && typeof env == 'object') ? env : null;

			var line = [ command ].concat(params || []).join(' ');

			log.calls.push('file.exec');
			log.execs.push(line);

			if (!session)
				return Promise.reject(new Error('stand-in: no session (L.standinBoot not called)'));

			if (!session.access('ubus', 'file', 'exec'))
				return Promise.reject(ubusDenied('file', 'exec'));

			var rc = window.StandinAcl.fileExec(session, command, params, env, isFile);

			if (rc != 0) {
				log.denied.push('file.exec ' + line);
				var e = new Error(ubusStatusText[rc] || 'Unknown error code');
				e.name = fsErrorNames[rc] || 'Error';
				return Promise.reject(e);
			}

			var run = (window.STANDIN_EXEC || {})[window.StandinAcl.canonicalPath(command) + (params ? ' ' + params.join(' ') : '')];

			if (!run)
				return Promise.reject(new Error('stand-in: nothing canned for ' + line));

			return Promise.resolve(run());
		}
	});

	/* --- poll ------------------------------------------------------------ */
	L.define('poll', {
		add: function(fn, interval) {
			var busy = false;

			window.setInterval(function() {
				if (busy) return;
				busy = true;
				Promise.resolve(fn()).catch(function(e) { log.errors.push('poll: ' + e); }).then(function() { busy = false; });
			}, (interval || 5) * 1000);
		}
	});

	/* --- uci: canned /etc/config/* (canned.js) ------------------------- */

	/* uci.js calls ubus uci get/set/...: uhttpd checks those (scope ubus),
	 * rpcd's uci plugin then the config (scope uci, "read" or "write") and
	 * answers UBUS_STATUS_PERMISSION_DENIED, which uci.js turns into this. */
	function uciAccess(method, conf, perm) {
		if (!session)
			return new Error('stand-in: no session (L.standinBoot not called)');

		if (!session.access('ubus', 'uci', method))
			return ubusDenied('uci', method);

		if (!session.access('uci', conf, perm)) {
			log.denied.push('uci.' + perm + ' ' + conf);
			return new Error('RPC call to uci/' + method + ' failed with ubus code 6: Permission denied');
		}

		return null;
	}

	var uci = {
		state: {},
		changed: {},
		seq: 100,
		load: function(conf) {
			var err = uciAccess('get', conf, 'read');

			log.uci_loads.push(conf + (err ? ' denied' : ''));

			if (err)
				return Promise.reject(err);

			if (!uci.state[conf])
				uci.state[conf] = JSON.parse(JSON.stringify(window.STANDIN_UCI[conf] || {}));
			return Promise.resolve(conf);
		},
		sections: function(conf, type, cb) {
			var all = uci.state[conf] || {},
			    out = Object.keys(all).map(function(k) { return all[k]; })
			    	.filter(function(s) { return !type || s['.type'] == type; })
			    	.sort(function(a, b) { return a['.index'] - b['.index']; });
			if (cb) out.forEach(function(s) { cb(s, s['.name']); });
			return out;
		},
		get: function(conf, sid, opt) {
			var s = (uci.state[conf] || {})[sid];
			return s ? (opt == null ? s : s[opt]) : null;
		},
		set: function(conf, sid, opt, val) {
			var s = (uci.state[conf] || {})[sid];
			if (!s) return;
			uci.changed[conf] = true;
			if (val == null || val === '' || (Array.isArray(val) && !val.length)) delete s[opt];
			else s[opt] = val;
		},
		unset: function(conf, sid, opt) { uci.set(conf, sid, opt, null); },
		add: function(conf, type, name) {
			var sid = name || ('cfg' + (uci.seq++).toString(16)), all = uci.state[conf] || (uci.state[conf] = {});
			uci.changed[conf] = true;
			all[sid] = { '.name': sid, '.type': type, '.anonymous': !name, '.index': uci.seq++ };
			return sid;
		},
		remove: function(conf, sid) { uci.changed[conf] = true; delete (uci.state[conf] || {})[sid]; },
		/* stages every changed config (ubus uci set/add/delete), each checked */
		save: function() {
			var confs = Object.keys(uci.changed);

			for (var i = 0; i < confs.length; i++) {
				var err = uciAccess('set', confs[i], 'write');
				if (err)
					return Promise.reject(err);
			}

			uci.changed = {};
			log.uci_saves++;
			log.uci_saved = log.uci_saved.concat(confs);
			return Promise.resolve();
		}
	};
	L.define('uci', uci);

	/* --- ui -------------------------------------------------------------- */
	var ui = {
		showModal: function(title, children) {
			var ov = document.getElementById('modal_overlay') || document.body.appendChild(E('div', { 'id': 'modal_overlay' }));
			dom.content(ov, E('div', { 'class': 'modal' }, [ E('h4', {}, title) ].concat(children)));
			ov.style.display = 'block';
			return ov;
		},
		hideModal: function() {
			var ov = document.getElementById('modal_overlay');
			if (ov) { dom.content(ov, []); ov.style.display = 'none'; }
		},
		addNotification: function(title, children, cls) {
			var n = document.getElementById('notifications');
			n.appendChild(E('div', { 'class': 'alert-message ' + (cls || '') }, [ title ? E('h4', {}, title) : '' ].concat(children)));
		},
		createHandlerFn: function(ctx, fn) {
			var args = Array.prototype.slice.call(arguments, 2);
			return function(ev) {
				var f = typeof fn == 'string' ? ctx[fn] : fn;
				return Promise.resolve(f.apply(ctx, args.concat([ ev ]))).catch(function(e) { log.errors.push('handler: ' + (e.stack || e)); });
			};
		}
	};
	L.define('ui', ui);

	/* --- view ------------------------------------------------------------ */
	function eachMap(fn) {
		document.getElementById('view').querySelectorAll('.cbi-map').forEach(function(node) {
			var m = dom.findClassInstance(node);
			if (m) fn(m);
		});
	}

	L.define('view', {
		extend: function(props) {
			return Base.extend(Object.assign({
				__init__: function() {
					var vp = document.getElementById('view');
					dom.content(vp, E('div', { 'class': 'spinning' }, [ 'Loading view…' ]));
					this.ready = Promise.resolve(this.load()).then(L.bind(this.render, this)).then(L.bind(function(node) {
						dom.content(vp, node);
						vp.appendChild(this.addFooter());
					}, this)).catch(function(e) { log.errors.push('view: ' + (e.stack || e)); });
				},
				load: function() {},
				render: function() {},
				/* As LuCI's defaults: save every bound form.Map, then apply. */
				handleSave: function() {
					var tasks = [];
					eachMap(function(m) { tasks.push(m.save()); });
					return Promise.all(tasks);
				},
				handleSaveApply: function() {
					return this.handleSave().then(function() { log.applied = (log.applied || 0) + 1; });
				},
				handleReset: function() {
					var tasks = [];
					eachMap(function(m) { tasks.push(m.redraw()); });
					return Promise.all(tasks);
				},
				/* As LuCI's footer: buttons for the handlers not set to null,
				 * disabled when every map on the page is read-only, or, on a
				 * page without maps, when the node is not writable. */
				addFooter: function() {
					var hasmap = false, readonly = true, self = this;

					eachMap(function(m) {
						hasmap = true;
						if (!m.readonly)
							readonly = false;
					});

					if (!hasmap)
						readonly = !L.hasViewPermission();

					if (!this.handleSaveApply && !this.handleSave && !this.handleReset)
						return document.createDocumentFragment();

					var button = function(cls, label, handler) {
						return self[handler] ? E('button', {
							'class': 'btn cbi-button ' + cls,
							'disabled': readonly || null,
							'click': ui.createHandlerFn(self, handler)
						}, [ label ]) : '';
					};

					return E('div', { 'class': 'cbi-page-actions' }, [
						button('cbi-button-apply', 'Save & Apply', 'handleSaveApply'), ' ',
						button('cbi-button-save', 'Save', 'handleSave'), ' ',
						button('cbi-button-reset', 'Reset', 'handleReset')
					]);
				}
			}, props));
		}
	});

	/* --- network --------------------------------------------------------- */
	var protocols = {};
	var Protocol = Base.extend({
		__init__: function(sid) { this.sid = sid; },
		_ubus: function() { return null; }
	});
	L.define('network', {
		registerProtocol: function(name, methods) {
			var cls = Protocol.extend(methods);
			protocols[name] = cls;
			return cls;
		},
		getProtocolClass: function(name) { return protocols[name]; },
		getIfnameOf: function(x) { return typeof x == 'string' ? x : null; }
	});

	/* --- form: widgets --------------------------------------------------- */
	/* As form.js: an option's own readonly, else its map's. */
	function isReadonly(opt) {
		return opt.readonly != null ? !!opt.readonly : !!opt.map.readonly;
	}

	function widget(opt, sid, value) {
		var w = { node: null };

		if (opt instanceof Flag) {
			var cb = E('input', { 'type': 'checkbox' });
			cb.checked = value == opt.enabled;
			cb.disabled = isReadonly(opt);
			w.node = cb;
			w.getValue = function() { return cb.checked ? opt.enabled : opt.disabled; };
			w.setValue = function(v) { cb.checked = (v == opt.enabled); };
		}
		else if (opt instanceof ListValue) {
			var sel = E('select', { 'class': 'cbi-input-select' }, opt.keylist.map(function(k, i) {
				return E('option', { 'value': k }, [ opt.vallist[i] ]);
			}));
			sel.value = value == null ? '' : value;
			sel.disabled = isReadonly(opt);
			w.node = sel;
			w.getValue = function() { return sel.value; };
			w.setValue = function(v) { sel.value = v; };
		}
		else if (opt instanceof DynamicList) {
			var box = E('div', { 'class': 'cbi-dynlist' }), items = L.toArray(value).slice();
			var draw = function() {
				dom.content(box, items.map(function(v, i) {
					return E('div', { 'class': 'item' }, [ E('span', {}, [ v ]), ' ',
						E('button', { 'class': 'btn', 'click': function(ev) { ev.preventDefault(); items.splice(i, 1); draw(); } }, [ '×' ]) ]);
				}).concat([ E('input', { 'class': 'cbi-input-text', 'type': 'text', 'change': function(ev) {
					if (ev.target.value) { items.push(ev.target.value); draw(); }
				} }) ]));
			};
			draw();
			w.node = box;
			w.getValue = function() { return items.slice(); };
			w.setValue = function(v) { items = L.toArray(v).slice(); draw(); };
		}
		else {
			var inp = E('input', { 'type': opt.password ? 'password' : 'text', 'class': 'cbi-input-text', 'placeholder': opt.placeholder || null });
			inp.value = value == null ? '' : value;
			if (isReadonly(opt)) inp.readOnly = true;
			w.node = inp;
			w.getValue = function() { return inp.value; };
			w.setValue = function(v) { inp.value = v == null ? '' : v; };
			if (opt.onchange)
				inp.addEventListener('change', function(ev) { opt.onchange.call(opt, ev, sid, inp.value); });
		}

		w.node.setAttribute('data-option', opt.option);
		return w;
	}

	var AbstractValue = Base.extend({
		__init__: function(map, section, option, title, description) {
			this.map = map; this.section = section; this.option = option;
			this.title = title; this.description = description;
			this.data = {}; this.widgets = {}; this.deps = [];
			this.rmempty = true;
		},
		depends: function(k, v) { this.deps.push([ k, v ]); },
		load: function(sid) { return uci.get(this.map.config, sid, this.option); },
		cfgvalue: function(sid) { return this.data[sid]; },
		textvalue: function(sid) { var v = this.cfgvalue(sid); return v == null ? '' : String(v); },
		getUIElement: function(sid) { return this.widgets[sid] || null; },
		formvalue: function(sid) { var w = this.widgets[sid]; return w ? w.getValue() : null; },
		write: function(sid, v) { uci.set(this.map.config, sid, this.option, v); },
		remove: function(sid) { uci.unset(this.map.config, sid, this.option); },
		/* As form.js: an empty value, or the default with rmempty (LuCI's
		 * default) or optional, removes the option; else a changed value is
		 * written. */
		parse: function(sid) {
			var v = this.formvalue(sid), cval = this.cfgvalue(sid);
			if (v == null) return;
			if (v == null || v === '' || (Array.isArray(v) && !v.length) ||
			    (v == this.default && (this.rmempty || this.optional))) {
				if (this.rmempty || this.optional) this.remove(sid);
			}
			else if (this.forcewrite || JSON.stringify(cval) !== JSON.stringify(v))
				this.write(sid, v);
		},
		renderRow: function(sid, asCell) {
			var cval = this.cfgvalue(sid);
			var w = this.widgets[sid] = widget(this, sid, cval != null ? cval : this['default']);
			var field = E('div', { 'class': 'cbi-value-field' }, [ w.node ]);
			if (this.description && !asCell) field.appendChild(E('div', { 'class': 'cbi-value-description' }, [ this.description ]));
			return asCell ? field : E('div', { 'class': 'cbi-value', 'data-name': this.option }, [
				E('label', { 'class': 'cbi-value-title' }, [ this.title || '' ]), field ]);
		}
	});
	var Value = AbstractValue.extend({
		value: function(key, label) {
			(this.keylist || (this.keylist = [])).push(String(key));
			(this.vallist || (this.vallist = [])).push(label != null ? label : key);
		}
	});
	var ListValue = Value.extend({});
	var Flag = Value.extend({
		__init__: function() {
			AbstractValue.prototype.__init__.apply(this, arguments);
			this.enabled = '1';
			this.disabled = '0';
			this['default'] = this.disabled;
		},
		/* As form.js: the default with rmempty or optional is removed,
		 * anything else written, changed or not. */
		parse: function(sid) {
			var v = this.formvalue(sid);
			if (v == null) return;
			if (v == this['default'] && (this.optional || this.rmempty)) this.remove(sid);
			else this.write(sid, v);
		}
	});
	var DynamicList = Value.extend({});
	var DummyValue = Value.extend({});
	var Button = Value.extend({
		load: function() { return null; },
		parse: function() {},
		renderRow: function(sid, asCell) {
			var self = this;
			var b = E('button', { 'class': 'btn cbi-button cbi-button-' + (this.inputstyle || 'button'), 'data-option': this.option,
				'click': function(ev) { ev.preventDefault(); Promise.resolve(self.onclick(ev, sid)).catch(function(e) { log.errors.push('button: ' + (e.stack || e)); }); } },
				[ this.inputtitle || this.title ]);
			var field = E('div', { 'class': 'cbi-value-field' }, [ b ]);
			return asCell ? field : E('div', { 'class': 'cbi-value', 'data-name': this.option }, [
				E('label', { 'class': 'cbi-value-title' }, [ this.title || '' ]), field ]);
		}
	});

	/* --- form: sections -------------------------------------------------- */
	var AbstractSection = Base.extend({
		__init__: function(map, a, b, c) {
			this.map = map; this.children = []; this.tabs = [];
			this.init(a, b, c);
		},
		tab: function(name, title, desc) { this.tabs.push({ name: name, title: title, desc: desc }); },
		option: function(cls, name, title, desc) {
			/* SectionValue: title = class, then the subsection's arguments */
			var o = new cls(this.map, this, name, title, desc, arguments[4], arguments[5]);
			o.tab = null;
			this.children.push(o);
			return o;
		},
		taboption: function(tab, cls) {
			if (!this.tabs.some(function(t) { return t.name == tab; }))
				throw new Error('no tab ' + tab);
			var o = this.option.apply(this, Array.prototype.slice.call(arguments, 1));
			o.tab = tab;
			return o;
		},
		loadAll: function() {
			var self = this, tasks = [];
			this.cfgsections().forEach(function(sid) {
				self.children.forEach(function(o) {
					tasks.push(Promise.resolve(o.load(sid)).then(function(v) { o.data[sid] = v; }));
				});
			});
			return Promise.all(tasks);
		},
		parseAll: function() {
			var self = this;
			this.cfgsections().forEach(function(sid) { self.children.forEach(function(o) { o.parse(sid); }); });
		}
	});

	var NamedSection = AbstractSection.extend({
		init: function(sid, type) { this.section = sid; this.sectiontype = type; },
		cfgsections: function() { return [ this.section ]; },
		render: function() {
			var self = this, sid = this.section;
			var tabs = this.tabs.length ? this.tabs : [ { name: null, title: '' } ];
			return E('div', { 'class': 'cbi-section', 'data-section': sid }, tabs.map(function(t) {
				return E('fieldset', { 'class': 'cbi-tab', 'data-tab': t.name }, [
					E('legend', {}, [ t.title ]),
					t.desc ? E('p', { 'class': 'cbi-tab-descr' }, [ t.desc ]) : ''
				].concat(self.children.filter(function(o) { return o.tab == t.name; }).map(function(o) { return o.renderRow(sid); })));
			}));
		}
	});

	var TableSection = AbstractSection.extend({
		/* as form.js: TypedSection(map, sectiontype, title, description) */
		init: function(type, title, description) { this.sectiontype = type; this.title = title; this.description = description; },
		/* as form.js's TypedSection: the add button, nothing without addremove;
		 * a view may override it (e.g. to remove but not add) */
		renderSectionAdd: function() {
			var self = this;

			if (!this.addremove)
				return E([]);

			return E('button', { 'class': 'btn cbi-button-add', 'click': function(ev) {
				ev.preventDefault(); self.map.parseAll(); uci.add(self.map.config, self.sectiontype); self.map.redraw();
			} }, [ this.addbtntitle || 'Add' ]);
		},
		cfgsections: function() {
			return uci.sections(this.map.config, this.sectiontype).map(function(s) { return s['.name']; });
		},
		render: function() {
			var self = this, ids = this.cfgsections();
			var cols = this.children.filter(function(o) { return !o.modalonly; });
			var table = E('table', { 'class': 'table cbi-section-table', 'data-type': this.sectiontype }, [
				E('tr', { 'class': 'tr table-titles' }, cols.map(function(o) { return E('th', { 'class': 'th' }, [ o.title || '' ]); })
					.concat([ E('th', { 'class': 'th' }, [ 'more' ]) ]))
			].concat(ids.map(function(sid) {
				var more = E('details', {}, [ E('summary', {}, [ 'Edit' ]) ].concat(
					self.children.filter(function(o) { return o.modalonly; }).map(function(o) { return o.renderRow(sid); })));
				return E('tr', { 'class': 'tr cbi-section-table-row', 'data-sid': sid },
					cols.map(function(o) { return E('td', { 'class': 'td' }, [ o.renderRow(sid, true) ]); }).concat([ E('td', { 'class': 'td' }, [ more ]) ]));
			})));
			if (!ids.length && this.renderSectionPlaceholder)
				table.appendChild(E('tr', { 'class': 'tr placeholder' }, [ E('td', { 'class': 'td' }, [ this.renderSectionPlaceholder() ]) ]));
			return E('div', { 'class': 'cbi-section', 'data-section-type': this.sectiontype }, [
				this.title ? E('h3', {}, [ this.title ]) : '',
				this.description ? E('div', { 'class': 'cbi-section-descr' }, [ this.description ]) : '',
				table,
				this.renderSectionAdd('cbi-tblsection-create') ]);
		}
	});
	var GridSection = TableSection.extend({});

	var SectionValue = AbstractValue.extend({
		/* as form.js: the arguments after the class go to the subsection */
		__init__: function(map, section, option, cls, a, b, c) {
			AbstractValue.prototype.__init__.call(this, map, section, option);
			this.subsection = new cls(map, a, b, c);
		},
		load: function() { return this.subsection.loadAll(); },
		parse: function() { this.subsection.parseAll(); },
		renderRow: function() { return E('div', { 'class': 'cbi-value', 'data-name': this.option }, [ this.subsection.render() ]); }
	});

	/* form.js asks rpcd whether the session may write the map's config */
	var callSessionAccess = null;

	var Map = Base.extend({
		__init__: function(config, title, desc) { this.config = config; this.title = title; this.description = desc; this.children = []; },
		section: function(cls, a, b) { var s = new cls(this, a, b); this.children.push(s); return s; },
		allSections: function() {
			var out = [];
			var walk = function(s) { out.push(s); s.children.forEach(function(o) { if (o.subsection) walk(o.subsection); }); };
			this.children.forEach(walk);
			return out;
		},
		lookupOption: function(name, sid) {
			var secs = this.allSections();
			for (var i = 0; i < secs.length; i++)
				for (var j = 0; j < secs[i].children.length; j++)
					if (secs[i].children[j].option == name && secs[i].cfgsections().indexOf(sid) >= 0)
						return [ secs[i].children[j], sid ];
			return null;
		},
		parseAll: function() { this.children.forEach(function(s) { s.parseAll(); }); },
		/* As form.js: unless `readonly` was set, a `session access uci
		 * <config> write` answer of false makes the map read-only. */
		load: function() {
			var self = this;

			callSessionAccess = callSessionAccess || L.require('rpc').then(function(rpc) {
				return rpc.declare({ object: 'session', method: 'access', params: [ 'scope', 'object', 'function' ], expect: { 'access': false } });
			});

			return Promise.all([
				this.readonly == null ? callSessionAccess.then(function(fn) { return fn('uci', self.config, 'write'); }) : true,
				uci.load(this.config)
			]).then(function(res) {
				if (res[0] === false)
					self.readonly = true;
				return Promise.all(self.children.map(function(s) { return s.loadAll(); }));
			});
		},
		redraw: function() {
			var self = this;
			return this.load().then(function() {
				dom.content(self.root, [ E('h2', {}, [ self.title || '' ]) ].concat(self.children.map(function(s) { return s.render(); })));
				return self.root;
			});
		},
		render: function() {
			this.root = E('div', { 'class': 'cbi-map', 'data-config': this.config });
			dom.bindClassInstance(this.root, this);
			return this.redraw();
		},
		save: function(cb, silent) {
			this.parseAll();
			return uci.save().then(L.bind(this.redraw, this));
		}
	});

	L.define('form', {
		Map: Map, NamedSection: NamedSection, TypedSection: TableSection, TableSection: TableSection, GridSection: GridSection,
		Value: Value, Flag: Flag, DynamicList: DynamicList, DummyValue: DummyValue, Button: Button, SectionValue: SectionValue,
		ListValue: ListValue
	});
})();
