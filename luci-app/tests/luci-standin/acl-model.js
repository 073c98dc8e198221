/*
 * STAND-IN of the access checks that rpcd, uhttpd and LuCI's dispatcher make,
 * written for luci-app-solowg's tests from reading their sources (rpcd
 * session.c, uhttpd ubus.c, luci-base's dispatcher.uc and luci.js); it is not
 * their code. Used by the browser stand-in (window.StandinAcl) and by
 * json.test.js (require).
 *
 * - login(user, aclFiles): the session rpcd builds at login from the user's
 *   `config login` read/write lists (shell globs, "!glob" denies first, write
 *   on a group implies read) and the acl.d files: each scope of a granted
 *   "read"/"write" section becomes (scope, object, function) entries; array
 *   notation ("uci": ["x"]) uses the section name as function, table notation
 *   ("ubus": {"obj": ["fn"]}) the listed names; every granted section that
 *   has a scope also grants ("access-group", group, "read"|"write").
 * - session.access(scope, object, fn): what `ubus call session access` answers
 *   (globs in the grants, as fnmatch without flags); uhttpd asks it with scope
 *   "ubus" before every call, rpcd's uci plugin with scope "uci" and "read"
 *   (get) or "write" (set, add, delete, ...).
 * - nodespec(node, session, hasUciSections): the page node LuCI hands a view
 *   as L.env.nodespec: `satisfied` (uci depends met and every acl depends
 *   group granted at least read) and `readonly` (no acl group granted write).
 * - fileExec(session, command, params, env, isFile): the ubus status rpcd's
 *   `file exec` answers before it runs anything (rpcd file.c,
 *   rpc_file_exec_run): 0 when it would run the command. uhttpd's check of
 *   ubus `file exec` comes before it and is the caller's.
 */
'use strict';

(function(root) {
	/* fnmatch(pattern, s, 0): '*' and '?' also match '/', [...] classes. */
	function globMatch(pattern, s) {
		var re = '^';

		for (var i = 0; i < pattern.length; i++) {
			var c = pattern[i];

			if (c == '*')
				re += '[\\s\\S]*';
			else if (c == '?')
				re += '[\\s\\S]';
			else if (c == '[') {
				var end = pattern.indexOf(']', i + 2);

				if (end < 0) {
					re += '\\[';
					continue;
				}

				var body = pattern.slice(i + 1, end).replace(/\\/g, '\\\\');
				re += '[' + (body[0] == '!' ? '^' + body.slice(1) : body) + ']';
				i = end;
			}
			else
				re += c.replace(/[.+^${}()|\\\]]/g, '\\$&');
		}

		return new RegExp(re + '$').test(s);
	}

	/* rpcd: does the login's read or write list name this group? */
	function testPermission(user, perm, group) {
		var list = (user && user[perm]) || [];

		for (var i = 0; i < list.length; i++)
			if (list[i][0] == '!' && globMatch(list[i].slice(1).trim(), group))
				return false;

		for (var j = 0; j < list.length; j++)
			if (list[j][0] != '!' && list[j] && globMatch(list[j], group))
				return true;

		/* write permission implies read permission */
		return perm == 'read' ? testPermission(user, 'write', group) : false;
	}

	function Session(user) {
		this.user = user;
		this.acls = {};   /* scope -> [ { object, fn } ] */
	}

	Session.prototype.grant = function(scope, object, fn) {
		var list = this.acls[scope] || (this.acls[scope] = []);

		if (!list.some(function(a) { return a.object == object && a.fn == fn; }))
			list.push({ object: object, fn: fn });
	};

	Session.prototype.access = function(scope, object, fn) {
		return (this.acls[scope || 'ubus'] || []).some(function(a) {
			return globMatch(a.object, object) && globMatch(a.fn, fn);
		});
	};

	/* `session access` without object/function: every grant, by scope. */
	Session.prototype.dump = function() {
		var out = {};

		for (var scope in this.acls)
			this.acls[scope].forEach(function(a) {
				var objs = out[scope] || (out[scope] = {});
				(objs[a.object] || (objs[a.object] = [])).push(a.fn);
			});

		return out;
	};

	function login(user, aclFiles) {
		var ses = new Session(user);

		aclFiles.forEach(function(file) {
			Object.keys(file).forEach(function(group) {
				[ 'read', 'write' ].forEach(function(perm) {
					var section = file[group][perm];

					if (!section || typeof section != 'object' || Array.isArray(section))
						return;

					if (!testPermission(user, perm, group))
						return;

					Object.keys(section).forEach(function(scope) {
						var v = section[scope];

						if (Array.isArray(v))
							v.forEach(function(obj) {
								if (typeof obj == 'string')
									ses.grant(scope, obj, perm);
							});
						else if (v && typeof v == 'object')
							Object.keys(v).forEach(function(obj) {
								if (Array.isArray(v[obj]))
									v[obj].forEach(function(fn) {
										if (typeof fn == 'string')
											ses.grant(scope, obj, fn);
									});
							});

						ses.grant('access-group', group, perm);
					});
				});
			});
		});

		return ses;
	}

	/* dispatcher: null = no access, false = read only, true = writable */
	function checkAclDepends(requireGroups, session) {
		if (!Array.isArray(requireGroups) || !requireGroups.length)
			return true;

		var writable = false;

		for (var i = 0; i < requireGroups.length; i++) {
			var read = session.access('access-group', requireGroups[i], 'read'),
			    write = session.access('access-group', requireGroups[i], 'write');

			if (!read && !write)
				return null;

			if (write)
				writable = true;
		}

		return writable;
	}

	/* `depends.uci`: { config: true } needs a config with any section (the
	 * dispatcher reads it as root: an existence check, not a permission);
	 * { config: { section: ... } } forms are not modelled. */
	function uciDependsMet(uciDeps, hasUciSections) {
		var alternatives = Array.isArray(uciDeps) ? uciDeps : [ uciDeps ];

		return alternatives.some(function(alt) {
			return Object.keys(alt).every(function(config) {
				if (alt[config] !== true)
					throw new Error('acl-model: only { "config": true } uci depends are modelled');

				return hasUciSections(config);
			});
		});
	}

	function nodespec(node, session, hasUciSections) {
		var deps = node.depends || {},
		    perm = checkAclDepends(deps.acl, session),
		    spec = JSON.parse(JSON.stringify(node));

		spec.satisfied = perm !== null && (deps.uci == null || uciDependsMet(deps.uci, hasUciSections));

		if (perm !== null)
			spec.readonly = !perm;

		return spec;
	}

	/* rpcd's rpc_canonicalize_path: no repeated '/', no '/./', '/x/../'
	 * collapsed, no trailing '/'. */
	function canonicalPath(path) {
		var out = [];

		path.split('/').forEach(function(part, i) {
			if (i == 0 && part === '')
				return;

			if (part === '' || part == '.')
				return;

			if (part == '..')
				out.pop();
			else
				out.push(part);
		});

		return (path[0] == '/' ? '/' : '') + out.join('/') || '/';
	}

	/* UBUS_STATUS_* codes rpcd answers with */
	var UBUS_OK = 0, UBUS_INVALID_ARGUMENT = 2, UBUS_NOT_FOUND = 4, UBUS_PERMISSION_DENIED = 6;

	/* The session may exec the executable itself (any arguments); else the
	 * executable and its string arguments joined by single spaces must be
	 * granted, so a grant of "/path arg" allows exactly that command line.
	 * A session call with an environment is refused outright; a command that
	 * is not a file is looked up in PATH (rpcd's default) first.
	 * isFile(path): whether the path is a regular file. */
	function fileExec(session, command, params, env, isFile) {
		if (typeof command != 'string')
			return UBUS_INVALID_ARGUMENT;

		if (env != null && typeof env == 'object' && !Array.isArray(env))
			return UBUS_PERMISSION_DENIED;

		var found = isFile(command) ? command : null,
		    path = [ '/bin', '/usr/bin', '/sbin', '/usr/sbin' ];

		for (var i = 0; !found && i < path.length; i++)
			if (isFile(path[i] + '/' + command))
				found = path[i] + '/' + command;

		if (!found)
			return UBUS_NOT_FOUND;

		var executable = canonicalPath(found);

		if (session.access('file', executable, 'exec'))
			return UBUS_OK;

		if (!Array.isArray(params))
			return UBUS_PERMISSION_DENIED;

		var cmdline = [ executable ].concat(params.filter(function(p) { return typeof p == 'string'; })).join(' ');

		return session.access('file', cmdline, 'exec') ? UBUS_OK : UBUS_PERMISSION_DENIED;
	}

	/* Groups the runtime needs besides the app's own, written for this
	 * stand-in: rpcd gives every session `session access` through its
	 * "unauthenticated" group, and LuCI's own groups let uci.js call the
	 * ubus uci methods (they grant more, which the stand-in leaves out so
	 * that uci configs are reachable only through the app's group). */
	var baseAcl = {
		'unauthenticated': {
			description: 'stand-in: session access and login',
			read: { ubus: { session: [ 'access', 'login' ] } }
		},
		'standin-luci-base': {
			description: 'stand-in: the ubus uci methods uci.js calls',
			read: { ubus: { uci: [ 'changes', 'get' ] } },
			write: { ubus: { uci: [ 'add', 'apply', 'confirm', 'delete', 'order', 'rename', 'set' ] } }
		}
	};

	/* Another package's group, as luci-app-ddns's acl.d grants it (its uci
	 * part only): with it a session may read /etc/config/ddns, which the
	 * client configuration then uses for its endpoint. The browser test adds
	 * it unless a scenario models a router without luci-app-ddns. */
	var ddnsAcl = {
		'luci-app-ddns': {
			description: 'stand-in: the uci grants of luci-app-ddns',
			read: { uci: [ 'ddns' ] },
			write: { uci: [ 'ddns' ] }
		}
	};

	/* `config login` lists of the two accounts the tests use. */
	var users = {
		root: { read: [ '*' ], write: [ '*' ] },
		readonly: { read: [ 'unauthenticated', 'standin-luci-base', 'luci-app-solowg' ], write: [] }
	};

	var api = {
		globMatch: globMatch, login: login, checkAclDepends: checkAclDepends, nodespec: nodespec,
		fileExec: fileExec, canonicalPath: canonicalPath, baseAcl: baseAcl, ddnsAcl: ddnsAcl, users: users
	};

	if (typeof module == 'object' && module.exports)
		module.exports = api;
	else
		root.StandinAcl = api;
})(this);
