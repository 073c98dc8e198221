/*
 * STAND-IN for LuCI's client runtime, written for luci-app-solowg's browser
 * test. It is NOT LuCI: it provides only what the solowg views call (L, E, _,
 * String.prototype.format, L.Class, and the modules baseclass, view, rpc,
 * poll, uci, ui, dom, form, network) with the same calling conventions, backed
 * by canned data (canned.js) instead of rpcd/ubus; the module uqr is the
 * stand-in that uqr-standin.js builds (serve.js serves it). What it cannot
 * prove: that LuCI's real form/ui classes lay out, validate, save and apply
 * the options the same way, that rpcd's ACL lets the calls through, or how a
 * real theme looks.
 */
'use strict';

(function() {
	var log = window.__standin = { calls: [], errors: [], uci_saves: 0 };

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
		}
	};

	window.E = function(tag, attrs, children) {
		if (Array.isArray(attrs) || dom.elem(attrs) || typeof attrs == 'string') {
			children = attrs;
			attrs = null;
		}

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

	var L = window.L = {
		env: { resource: '/luci-static/resources' },
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
	L.define('rpc', {
		declare: function(d) {
			return function() {
				var args = {}, argv = arguments;

				(d.params || []).forEach(function(p, i) { args[p] = argv[i]; });
				log.calls.push(d.object + '.' + d.method);

				var handler = (window.STANDIN_UBUS[d.object] || {})[d.method];

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

	/* --- uci: canned /etc/config/network ------------------------------- */
	var uci = {
		state: {},
		seq: 100,
		load: function(conf) {
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
			if (val == null || val === '' || (Array.isArray(val) && !val.length)) delete s[opt];
			else s[opt] = val;
		},
		unset: function(conf, sid, opt) { uci.set(conf, sid, opt, null); },
		add: function(conf, type, name) {
			var sid = name || ('cfg' + (uci.seq++).toString(16)), all = uci.state[conf] || (uci.state[conf] = {});
			all[sid] = { '.name': sid, '.type': type, '.anonymous': !name, '.index': uci.seq++ };
			return sid;
		},
		remove: function(conf, sid) { delete (uci.state[conf] || {})[sid]; },
		save: function() { log.uci_saves++; return Promise.resolve(); }
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
	L.define('view', {
		extend: function(props) {
			return Base.extend(Object.assign({
				__init__: function() {
					var vp = document.getElementById('view');
					dom.content(vp, E('div', { 'class': 'spinning' }, [ 'Loading view…' ]));
					this.ready = Promise.resolve(this.load()).then(L.bind(this.render, this)).then(function(node) {
						dom.content(vp, node);
					}).catch(function(e) { log.errors.push('view: ' + (e.stack || e)); });
				},
				load: function() {},
				render: function() {}
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
	function widget(opt, sid, value) {
		var w = { node: null };

		if (opt instanceof Flag) {
			var cb = E('input', { 'type': 'checkbox' });
			cb.checked = value == '1';
			w.node = cb;
			w.getValue = function() { return cb.checked ? '1' : '0'; };
			w.setValue = function(v) { cb.checked = (v == '1'); };
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
			if (opt.readonly) inp.readOnly = true;
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
		},
		depends: function(k, v) { this.deps.push([ k, v ]); },
		load: function(sid) { return uci.get(this.map.config, sid, this.option); },
		cfgvalue: function(sid) { return this.data[sid]; },
		textvalue: function(sid) { var v = this.cfgvalue(sid); return v == null ? '' : String(v); },
		getUIElement: function(sid) { return this.widgets[sid] || null; },
		formvalue: function(sid) { var w = this.widgets[sid]; return w ? w.getValue() : null; },
		write: function(sid, v) { uci.set(this.map.config, sid, this.option, v); },
		remove: function(sid) { uci.unset(this.map.config, sid, this.option); },
		parse: function(sid) {
			var v = this.formvalue(sid);
			if (v == null) return;
			if (v === '' || (Array.isArray(v) && !v.length)) this.remove(sid);
			else this.write(sid, v);
		},
		renderRow: function(sid, asCell) {
			var w = this.widgets[sid] = widget(this, sid, this.cfgvalue(sid));
			var field = E('div', { 'class': 'cbi-value-field' }, [ w.node ]);
			if (this.description && !asCell) field.appendChild(E('div', { 'class': 'cbi-value-description' }, [ this.description ]));
			return asCell ? field : E('div', { 'class': 'cbi-value', 'data-name': this.option }, [
				E('label', { 'class': 'cbi-value-title' }, [ this.title || '' ]), field ]);
		}
	});
	var Value = AbstractValue.extend({});
	var Flag = Value.extend({});
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
		__init__: function(map, a, b) {
			this.map = map; this.children = []; this.tabs = [];
			this.init(a, b);
		},
		tab: function(name, title, desc) { this.tabs.push({ name: name, title: title, desc: desc }); },
		option: function(cls, name, title, desc) {
			var o = new cls(this.map, this, name, title, desc);	/* SectionValue: title = class, desc = type */
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
		init: function(type) { this.sectiontype = type; },
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
			return E('div', { 'class': 'cbi-section' }, [ table,
				this.addremove ? E('button', { 'class': 'btn cbi-button-add', 'click': function(ev) {
					ev.preventDefault(); self.map.parseAll(); uci.add(self.map.config, self.sectiontype); self.map.redraw();
				} }, [ this.addbtntitle || 'Add' ]) : '' ]);
		}
	});
	var GridSection = TableSection.extend({});

	var SectionValue = AbstractValue.extend({
		__init__: function(map, section, option, cls, a, b) {
			AbstractValue.prototype.__init__.call(this, map, section, option);
			this.subsection = new cls(map, a, b);
		},
		load: function() { return this.subsection.loadAll(); },
		parse: function() { this.subsection.parseAll(); },
		renderRow: function() { return E('div', { 'class': 'cbi-value', 'data-name': this.option }, [ this.subsection.render() ]); }
	});

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
		load: function() {
			var self = this;
			return uci.load(this.config).then(function() { return Promise.all(self.children.map(function(s) { return s.loadAll(); })); });
		},
		redraw: function() {
			var self = this;
			return this.load().then(function() {
				dom.content(self.root, [ E('h2', {}, [ self.title || '' ]) ].concat(self.children.map(function(s) { return s.render(); })));
				return self.root;
			});
		},
		render: function() { this.root = E('div', { 'class': 'cbi-map', 'data-config': this.config }); return this.redraw(); },
		save: function(cb, silent) {
			this.parseAll();
			return uci.save().then(L.bind(this.redraw, this));
		}
	});

	L.define('form', {
		Map: Map, NamedSection: NamedSection, TypedSection: TableSection, TableSection: TableSection, GridSection: GridSection,
		Value: Value, Flag: Flag, DynamicList: DynamicList, DummyValue: DummyValue, Button: Button, SectionValue: SectionValue,
		ListValue: Value
	});
})();
