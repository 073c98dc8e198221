#!/usr/bin/env python3
"""Builds installable OpenWrt packages of solowg and luci-app-solowg without the OpenWrt SDK.

    mkpkg.py solowg --arch mips_24kc --binary target/openwrt/mips_24kc/solowg --out dist/mips_24kc
    mkpkg.py luci-app-solowg --out dist/all
    mkpkg.py luci-i18n-solowg-de --po2lmo PATH --out dist/all
    mkpkg.py --check FILE.apk [--extract DIR]

Each build writes two files:
  NAME_VERSION_ARCH.ipk  for opkg (OpenWrt 24.10 and older): a gzip'd tar holding
                         ./debian-binary, ./data.tar.gz and ./control.tar.gz, as ipkg-build makes it
  NAME-VERSION.apk       for apk-tools v3 (OpenWrt 25.12 and later): an unsigned ADB package, as
                         `apk mkpkg` makes it; install with `apk add --allow-untrusted ./FILE.apk`
VERSION is PKG_VERSION-rPKG_RELEASE (the "-r" is OpenWrt's since apk support, 24.10 included).
For the LuCI app, as luci.mk does it: the same when luci-app/Makefile sets PKG_VERSION, else
YY.DDD.SSSSS~HASH from the last commit touching luci-app/ (e.g. 25.020.53698~a09a2d6).

Everything the package says is taken from the Makefiles, so it is kept in one place:
openwrt/feed/net/solowg/Makefile (version, release, licence, maintainer, section, DEPENDS, USERID, description,
conffiles and the Package/solowg/install recipe, which is interpreted line by line) and
luci-app/Makefile (LUCI_* variables; contents as luci.mk installs them: htdocs/ to /www,
root/ to /). An install line this script does not understand is an error, not a guess.
USERID becomes the .ipk's Require-User field and the .apk's /lib/apk/packages/NAME.rusers, which
base-files' add_group_and_user reads to create the user. For tests only, --release N and
--src DIR build the same package with another PKG_RELEASE and another $(SOLOWG_SRC).

Archives are reproducible: every timestamp is SOURCE_DATE_EPOCH, or else the time of the last
commit, entries are sorted and owned by 0:0 (root:root), and compression carries no name or time.

--check reads an .apk with a parser of its own (it shares no code with the writer), verifies the
structure and every file's SHA-256, and prints the metadata, scripts and file list; --extract
also writes the files out. Python 3 standard library only.
"""

import argparse
import datetime
import gzip
import hashlib
import io
import os
import re
import struct
import subprocess
import sys
import tarfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SOLOWG_MAKEFILE = os.path.join(HERE, "feed", "net", "solowg", "Makefile")
LUCI_DIR = os.path.join(REPO, "luci-app")
LUCI_MAKEFILE = os.path.join(LUCI_DIR, "Makefile")

# The buildroot's Source: is the package's directory below the build tree; ours depend on where
# the feed is linked. opkg never reads it; apk uses "origin" only to let packages of one origin
# take files over from each other, so the two must differ.
SOURCE = {"solowg": "feeds/solowg/solowg", "luci-app-solowg": "feeds/solowg/luci-app-solowg"}

# OpenWrt's rules.mk: INSTALL_BIN is install -m0755, INSTALL_CONF -m0600, INSTALL_DATA -m0644,
# INSTALL_DIR install -d -m0755.
INSTALL_MODES = {"INSTALL_BIN": 0o755, "INSTALL_CONF": 0o600, "INSTALL_DATA": 0o644}

# ELF (class, byte order, e_machine) per OpenWrt package-architecture family, so a binary for
# the wrong router is refused instead of packaged.
ELF_ARCH = [
    ("mips64el", (2, 1, 8)), ("mips64", (2, 2, 8)), ("mipsel", (1, 1, 8)), ("mips", (1, 2, 8)),
    ("aarch64", (2, 1, 183)), ("armeb", (1, 2, 40)), ("arm", (1, 1, 40)),
    ("x86_64", (2, 1, 62)), ("i386", (1, 1, 3)), ("riscv64", (2, 1, 243)),
    ("powerpc64", (2, 2, 21)), ("powerpc", (1, 2, 20)), ("loongarch64", (2, 1, 258)),
]


def die(msg):
    print("mkpkg: " + msg, file=sys.stderr)
    sys.exit(1)


# ---------------------------------------------------------------- Makefile reading

def read_makefile(path):
    """Simple assignments (:=, ?=, =, +=) and define blocks, as far as these Makefiles use them."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    variables, defines = {}, {}
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^define\s+(\S+)\s*$", line)
        if m:
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "endef":
                body.append(lines[i])
                i += 1
            defines[m.group(1)] = "\n".join(body)
            i += 1
            continue
        # make joins a backslash-newline and the whitespace around it into one space
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1].rstrip() + " " + lines[i].lstrip()
        m = re.match(r"^([A-Za-z0-9_./-]+)\s*(:=|\?=|\+=|=)\s*(.*)$", line)
        if m and not line.startswith("\t"):
            name, op, value = m.group(1), m.group(2), m.group(3).strip()
            if op == "?=" and name in variables:
                pass
            elif op == "+=" and name in variables:
                variables[name] += " " + value
            else:
                variables[name] = value
        i += 1
    return variables, defines


def define_vars(body):
    """NAME:=value lines inside a define (Package/NAME)."""
    out = {}
    for line in body.split("\n"):
        m = re.match(r"^\s*([A-Z_]+)\s*:=\s*(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def depends_list(spec):
    """DEPENDS as the buildroot writes it: +libc first (for anything but kmod-*), '+' dropped,
    '@' conditions dropped (they only gate menuconfig), duplicates dropped."""
    out = ["libc"]
    for word in spec.split():
        if word == "$(RUST_ARCH_DEPENDS)":
            # The rust feed defines it as @(aarch64||arm||...||x86_64): a condition, no package.
            continue
        if word.startswith("$("):
            die("cannot expand %s in DEPENDS" % word)
        if word.startswith("@"):
            continue
        if ":" in word:
            die("conditional dependency %s is not supported" % word)
        name = word.lstrip("+")
        if name not in out:
            out.append(name)
    return out


def make_version(pkg_version, pkg_release):
    # include/package-defaults.mk (and luci.mk for apps that set PKG_VERSION)
    if pkg_release:
        return "%s-r%s" % (pkg_version, pkg_release)
    return pkg_version


APK_VERSION_RE = re.compile(
    r"^[0-9]+(\.[0-9]+)*[a-z]?(_(alpha|beta|pre|rc|cvs|svn|git|hg|p)[0-9]*)*(~[0-9a-f]+)?(-r[0-9]+)?$")


def check_version(version):
    # apk refuses any other form (doc/apk-package.5); opkg takes it as it is
    if not APK_VERSION_RE.match(version):
        die("version %r is not valid for apk (number{.number}{letter}{_suffix}{~hash}{-rN})" % version)


# ---------------------------------------------------------------- time and git

def git(*args, cwd=REPO):
    try:
        out = subprocess.run(["git", "-C", cwd] + list(args), check=True, capture_output=True,
                             text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return out or None


def source_date_epoch(inputs):
    env = os.environ.get("SOURCE_DATE_EPOCH", "")
    if env:
        if not env.isdigit():
            die("SOURCE_DATE_EPOCH must be a number of seconds")
        return int(env)
    ct = git("log", "-1", "--format=%ct")
    if ct:
        return int(ct)
    # no git (a source tarball): the newest input file
    return max(int(os.stat(p).st_mtime) for p in inputs)


def luci_src_version():
    """luci.mk's version for an app without PKG_VERSION: the time and hash of the last commit
    touching the app outside po/, as YY.DDD.SSSSS~HASH (without git: the newest file's time)."""
    out = git("log", "-1", "--format=%ct %h", "--abbrev=7", "--", ".", ":(exclude)po", cwd=LUCI_DIR)
    if out:
        ct, h = out.split()
        t = datetime.datetime.fromtimestamp(int(ct), datetime.timezone.utc)
        return "%s.%05d~%s" % (t.strftime("%y.%j"), int(ct) % 86400, h)
    newest = 0
    for d, _, files in os.walk(LUCI_DIR):
        if os.path.relpath(d, LUCI_DIR).split(os.sep)[0] == "po":
            continue
        for f in files:
            newest = max(newest, int(os.stat(os.path.join(d, f)).st_mtime))
    if not newest:
        return "0"
    t = datetime.datetime.fromtimestamp(newest, datetime.timezone.utc)
    return "0.%s.%05d" % (t.strftime("%y%m%d"), newest % 86400)


# ---------------------------------------------------------------- the package tree

class Tree:
    """Paths ('' is the root, no leading slash) to (mode, bytes or None for a directory)."""

    def __init__(self):
        self.entries = {"": (0o755, None)}

    def mkdir(self, path, mode=0o755):
        parts = [p for p in path.split("/") if p]
        for n in range(1, len(parts) + 1):
            p = "/".join(parts[:n])
            if p in self.entries and self.entries[p][1] is not None:
                die("%s is a file, not a directory" % p)
            if p not in self.entries or n == len(parts):
                self.entries[p] = (mode, None)

    def is_dir(self, path):
        e = self.entries.get(path.strip("/"))
        return e is not None and e[1] is None

    def add_file(self, path, mode, data):
        path = path.strip("/")
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        if not self.is_dir(parent):
            die("cannot install /%s: /%s does not exist (install(1) would fail too)" % (path, parent))
        self.entries[path] = (mode, data)

    def children(self, path):
        prefix = path + "/" if path else ""
        names = set()
        for p in self.entries:
            if p and p.startswith(prefix) and "/" not in p[len(prefix):]:
                names.add(p[len(prefix):])
        return sorted(names, key=lambda s: s.encode())

    def walk(self):
        """Depth first, names sorted bytewise: the order of GNU tar --sort=name."""
        out = []

        def rec(path):
            out.append(path)
            if self.entries[path][1] is None:
                for c in self.children(path):
                    rec(path + "/" + c if path else c)
        rec("")
        return out

    def files(self):
        return sorted((p for p, (m, d) in self.entries.items() if d is not None),
                      key=lambda s: s.encode())


def elf_check(path, arch):
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        return "not an ELF executable"
    cls, data = head[4], head[5]
    machine = struct.unpack("<H" if data == 1 else ">H", head[18:20])[0]
    for prefix, want in ELF_ARCH:
        if arch == prefix or arch.startswith(prefix + "_"):
            if (cls, data, machine) != want:
                return "ELF class %d, byte order %d, machine %d; %s needs %s" % (
                    cls, data, machine, arch, want)
            return None
    return "no ELF rule for architecture %s" % arch


def solowg_tree(defines, binary, src):
    """Package/solowg/install, line by line, with $(1) the package root."""
    tree = Tree()
    subst = {"$(1)": "", "$(SOLOWG_SRC)": src}
    for raw in defines["Package/solowg/install"].split("\n"):
        line = raw.strip()
        if not line:
            continue
        words = line.split()
        macro = re.match(r"^\$\(([A-Z_]+)\)$", words[0])
        if not macro:
            die("unsupported install line: %s" % line)
        macro = macro.group(1)
        args = []
        for w in words[1:]:
            if w.startswith("$(PKG_INSTALL_DIR)/bin/"):
                if os.path.basename(w) != "solowg":
                    die("the install recipe wants %s; only the solowg binary is given" % w)
                # installed under the recipe's name, whatever the given file is called
                args.append(("binary", binary, w))
                continue
            for k, v in subst.items():
                if w.startswith(k):
                    w = v + w[len(k):]
                    break
            else:
                die("cannot expand %s in: %s" % (w, line))
            if "$(" in w:
                die("cannot expand %s in: %s" % (w, line))
            args.append(("path", w, w))
        if macro == "INSTALL_DIR":
            for _, d, _ in args:
                tree.mkdir(d)
        elif macro in INSTALL_MODES:
            if len(args) != 2:
                die("expected SOURCE DEST in: %s" % line)
            (_, src, src_word), (_, dst, _) = args
            if dst.endswith("/") or tree.is_dir(dst):
                dst = dst.rstrip("/") + "/" + os.path.basename(src_word)
            with open(src, "rb") as f:
                tree.add_file(dst, INSTALL_MODES[macro], f.read())
        else:
            die("unsupported install macro $(%s)" % macro)
    return tree


# package-pack.mk drops these after the install recipe runs
JUNK_RE = re.compile(r"^(CVS|\.svn|\.#.*|.*~)$")


def luci_tree(repo_dir):
    """luci.mk: cp -pR htdocs/* to /www and root/* to /. Modes follow git's two (0644, or 0755
    when executable) so a checkout's umask cannot change the package."""
    tree = Tree()
    for sub in ("luasrc", "ucode", "src"):
        if os.path.exists(os.path.join(repo_dir, sub)):
            die("luci-app/%s exists: luci.mk installs it in ways this script does not" % sub)
    for sub, dest in (("htdocs", "www"), ("root", "")):
        top = os.path.join(repo_dir, sub)
        if not os.path.isdir(top):
            continue
        tree.mkdir(dest)
        for dirpath, dirnames, filenames in os.walk(top):
            rel = os.path.relpath(dirpath, top)
            if rel == ".":
                # the shell glob sub/* skips hidden names at the top only
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                filenames = [f for f in filenames if not f.startswith(".")]
            dirnames[:] = sorted(d for d in dirnames if not JUNK_RE.match(d))
            base = "/".join(p for p in (dest, "" if rel == "." else rel.replace(os.sep, "/")) if p)
            for d in dirnames:
                tree.mkdir(base + "/" + d if base else d)
            for name in sorted(filenames):
                if JUNK_RE.match(name):
                    continue
                src = os.path.join(dirpath, name)
                if os.path.islink(src):
                    die("symbolic link %s is not supported" % src)
                mode = 0o755 if os.stat(src).st_mode & 0o100 else 0o644
                with open(src, "rb") as f:
                    tree.add_file((base + "/" if base else "") + name, mode, f.read())
    return tree


# ---------------------------------------------------------------- maintainer scripts

# What the buildroot puts in every package (include/package-pack.mk): the hooks of
# base-files' /lib/functions.sh. default_postinst enables the package's init scripts: with
# IPKG_INSTROOT set (an image being built) it only makes the /etc/rc.d links; on a running
# router it also starts them (and enables them unless this is an upgrade). default_prerm
# stops and disables them. IPKG_NO_SCRIPT=1 is set while an image's packages are unpacked, and
# the image build runs each postinst afterwards with IPKG_INSTROOT pointing at the new root.
IPK_POSTINST = """#!/bin/sh
[ "${IPKG_NO_SCRIPT}" = "1" ] && exit 0
[ -s "${IPKG_INSTROOT}/lib/functions.sh" ] || exit 0
. "${IPKG_INSTROOT}/lib/functions.sh"
default_postinst "$0" "$@"
"""
IPK_PRERM = """#!/bin/sh
[ -s "${IPKG_INSTROOT}/lib/functions.sh" ] || exit 0
. "${IPKG_INSTROOT}/lib/functions.sh"
default_prerm "$0" "$@"
"""

# luci.mk's own postinst part. opkg keeps it as postinst-pkg, which default_postinst sources;
# for apk it is appended to post-install.
LUCI_POSTINST_PKG = """# Only on a running router: forget LuCI's cached menu index and modules, and have rpcd
# read the new ACL, so the pages work without a reboot.
[ -n "${IPKG_INSTROOT}" ] || {
	rm -f /tmp/luci-indexcache /tmp/luci-indexcache.*
	rm -rf /tmp/luci-modulecache/
	/etc/init.d/rpcd reload 2>/dev/null
	exit 0
}
"""


def make_script(body):
    """A Package/NAME/postinst define as package-pack.mk writes it to postinst-pkg: make has
    expanded it once ($$ is the shell's $) and echo ends it with a newline. Any other $ would
    be a make reference this script does not expand."""
    if body is None:
        return None
    if "$" in body.replace("$$", ""):
        die("cannot expand a make reference in a postinst define (write $$ for the shell's $)")
    if not body.startswith("#!/bin/sh\n"):
        die("a postinst define starts with #!/bin/sh")
    return body.replace("$$", "$") + "\n"


def apk_scripts(name, postinst_pkg):
    """The apk scripts of OpenWrt 25.12: apk passes no script name, so pkgname and root are
    exported for the same functions.sh hooks; post-upgrade is post-install with PKG_UPGRADE=1."""
    head = ('[ -s "${IPKG_INSTROOT}/lib/functions.sh" ] || exit 0\n'
            '. "${IPKG_INSTROOT}/lib/functions.sh"\n'
            'export root="${IPKG_INSTROOT}"\n'
            'export pkgname="%s"\n' % name)
    install_body = '[ "${IPKG_NO_SCRIPT}" = "1" ] && exit 0\n' + head + \
        "add_group_and_user\ndefault_postinst\n"
    if postinst_pkg:
        install_body += "".join(l + "\n" for l in postinst_pkg.split("\n")[:-1]
                                if not re.match(r"^\s*#!", l))
    return {
        "post-install": "#!/bin/sh\n" + install_body,
        "post-upgrade": "#!/bin/sh\nexport PKG_UPGRADE=1\n" + install_body,
        "pre-deinstall": "#!/bin/sh\n" + head + "default_prerm\n",
    }


# ---------------------------------------------------------------- ipk writer

def gzip_bytes(data):
    # gzip -n: no file name, time 0. Level 9 where ipkg-build's gzip uses its default, 6:
    # opkg reads either, and the solowg ipk is 1.1 KB smaller (the .apk is deflated at 9 too).
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as g:
        g.write(data)
    return buf.getvalue()


def tar_bytes(members, epoch):
    """members: (name, mode, bytes or None for a directory), already in order. GNU format,
    numeric owner 0:0 and no owner names, as ipkg-build's tar --numeric-owner under fakeroot."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for name, mode, data in members:
            ti = tarfile.TarInfo(name)
            ti.mode, ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = mode, epoch, 0, 0, "", ""
            if data is None:
                ti.type = tarfile.DIRTYPE
                t.addfile(ti)
            else:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def ipk_control(p, installed_size):
    """Fields in the order of package-pack.mk's Package/NAME/CONTROL; empty ones left out."""
    fields = [("Package", p["name"]), ("Version", p["version"]),
              ("Depends", ", ".join(p["depends"])), ("Source", p["source"]),
              ("SourceName", p["name"]), ("License", p["license"]),
              ("LicenseFiles", p["license_files"]), ("Section", p["section"]),
              ("Require-User", p["userid"]), ("SourceDateEpoch", str(p["epoch"])),
              ("URL", p["url"]), ("Maintainer", p["maintainer"]), ("Architecture", p["arch"]),
              ("Installed-Size", str(installed_size))]
    text = "".join("%s: %s\n" % (k, v) for k, v in fields if v)
    # printf "Description: "; echo "$DESCRIPTION" | sed 's,^[[:space:]]*, ,': each line's
    # leading blanks become one space, hence the two spaces after the colon.
    desc = "\n".join(re.sub(r"^\s*", " ", l) for l in p["description"].split("\n"))
    return text + "Description: " + desc + "\n"


def build_ipk(p, tree):
    epoch = p["epoch"]
    data = tar_bytes([("./" + path if path else "./",) + tree.entries[path] for path in tree.walk()],
                     epoch)
    control = {"control": (0o644, ipk_control(p, len(data)).encode()),
               "postinst": (0o755, IPK_POSTINST.encode()),
               "prerm": (0o755, IPK_PRERM.encode())}
    if p["conffiles"]:
        # ipkg-build keeps the conffiles that are regular files in the package, sorted
        kept = sorted((c for c in p["conffiles"] if tree.entries.get(c.strip("/"), (0, None))[1]
                       is not None), key=lambda s: s.encode())
        if kept:
            control["conffiles"] = (0o644, "".join(c + "\n" for c in kept).encode())
    if p["postinst_pkg"]:
        control["postinst-pkg"] = (0o755, p["postinst_pkg"].encode())
    ctl = tar_bytes([("./", 0o755, None)] + [("./" + n,) + control[n]
                                              for n in sorted(control, key=lambda s: s.encode())],
                    epoch)
    outer = tar_bytes([("./debian-binary", 0o644, b"2.0\n"),
                       ("./data.tar.gz", 0o644, gzip_bytes(data)),
                       ("./control.tar.gz", 0o644, gzip_bytes(ctl))], epoch)
    return gzip_bytes(outer)


# ---------------------------------------------------------------- apk (ADB) writer
#
# apk-tools v3 (src/adb.h, src/apk_adb.h, src/app_mkpkg.c): the file is "ADBd" and a raw
# deflate stream of: "ADB." magic, schema "pckg", then blocks, each a little-endian u32 of
# type<<30 | (4 + length), the payload and zero padding to 8 bytes. One ADB block holds the
# metadata tree; unsigned packages have no SIG block; one DATA block per non-empty regular
# file holds u32 directory index, u32 file index (both 1-based) and the contents.
# Values in the tree are u32 tags: the top 4 bits a type, the low 28 bits an immediate integer
# or the offset of the data in the ADB block. Objects (and arrays, which mkpkg tags as objects
# too) are u32 vectors whose slot 0 is the slot count; trailing empty slots are not stored,
# an empty one is the null tag 0. Blobs carry a 1, 2 or 4 byte length. Data is aligned to its
# own size and identical data is stored once; the layout below follows mkpkg's write order, so
# the ADB block matches what `apk mkpkg` writes for the same tree.

T_INT, T_INT32, T_INT64 = 0x10000000, 0x20000000, 0x30000000
T_BLOB8, T_BLOB16, T_BLOB32, T_OBJECT = 0x80000000, 0x90000000, 0xA0000000, 0xE0000000

# schema field numbers (src/apk_adb.h)
PI = {"name": 1, "version": 2, "hashes": 3, "description": 4, "arch": 5, "license": 6,
      "origin": 7, "maintainer": 8, "url": 9, "installed-size": 12, "provider-priority": 14,
      "depends": 15, "provides": 16}
SCRIPT_SLOTS = ["trigger", "pre-install", "post-install", "pre-deinstall", "post-deinstall",
                "pre-upgrade", "post-upgrade"]


class AdbWriter:
    def __init__(self):
        self.buf = bytearray(8)     # adb_hdr: compat 0, version 0, reserved, root tag
        self.seen = {}

    def _data(self, data, align, dedup=True):
        if dedup:
            off = self.seen.get(data)
            if off is not None and off % align == 0:
                return off
        self.buf += b"\0" * (-len(self.buf) % align)
        off = len(self.buf)
        self.buf += data
        if dedup:
            self.seen[data] = off
        return off

    def blob(self, b, dedup=True):
        if isinstance(b, str):
            b = b.encode()
        if not b:
            return 0
        if len(b) <= 0xFF:
            return T_BLOB8 | self._data(struct.pack("<B", len(b)) + b, 1, dedup)
        if len(b) <= 0xFFFF:
            return T_BLOB16 | self._data(struct.pack("<H", len(b)) + b, 2, dedup)
        return T_BLOB32 | self._data(struct.pack("<I", len(b)) + b, 4, dedup)

    def int(self, v):
        if v < 0x10000000:
            return T_INT | v
        if v < 1 << 32:
            return T_INT32 | self._data(struct.pack("<I", v), 4)
        return T_INT64 | self._data(struct.pack("<Q", v), 4)

    def obj(self, slots):
        """slots[0] is ignored (the count goes there)."""
        n = len(slots)
        while n > 1 and slots[n - 1] == 0:
            n -= 1
        if n <= 1:
            return 0
        return T_OBJECT | self._data(struct.pack("<%dI" % n, n, *slots[1:n]), 4)

    def string_array(self, objs_with_keys):
        """Array of objects, sorted by their key bytes (apk sorts arrays when it stores them)."""
        vals = [v for _, v in sorted(objs_with_keys, key=lambda kv: kv[0])]
        uniq = []
        for v in vals:
            if not uniq or uniq[-1] != v:
                uniq.append(v)
        return self.obj([0] + uniq)


def apk_dep_array(w, names):
    items = []
    for n in names:
        nv = w.blob(n)
        items.append((n.encode(), w.obj([0, nv])))
    return w.string_array(items)


def build_apk(p, tree):
    w = AdbWriter()
    info = [0] * 0x16
    # metadata first, in field order, as mkpkg assigns its --info options
    for key in ("name", "version", "description", "arch", "license", "origin", "maintainer",
                "url"):
        info[PI[key]] = w.blob(p["apk"][key])
    info[PI["depends"]] = apk_dep_array(w, p["apk"]["depends"])
    info[PI["provides"]] = apk_dep_array(w, p["apk"]["provides"])

    # directories: the root, then every directory path sorted; each with its regular files
    dirs = [d for d in tree.walk() if tree.entries[d][1] is None]
    dirs = [""] + sorted((d for d in dirs if d), key=lambda s: s.encode())
    paths, installed, data_order = [], 0, []
    for di, d in enumerate(dirs, 1):
        files = []
        names = [c for c in tree.children(d)
                 if tree.entries[(d + "/" + c) if d else c][1] is not None]
        for fj, name in enumerate(names, 1):
            mode, data = tree.entries[(d + "/" + name) if d else name]
            nv = w.blob(name)
            hv = w.blob(hashlib.sha256(data).digest())
            tv = w.int(p["epoch"])
            sv = w.int(len(data))
            acl = w.obj([0, w.int(mode), w.blob("root"), w.blob("root")])
            files.append(w.obj([0, nv, acl, sv, tv, hv]))
            installed += len(data)
            if data:
                data_order.append((di, fj, data))
        dn = w.blob(d)
        dmode = tree.entries[d][0]
        acl = w.obj([0, w.int(dmode), w.blob("root"), w.blob("root")])
        fv = w.obj([0] + files)
        paths.append(w.obj([0, dn, acl, fv]))

    info[PI["installed-size"]] = w.int(installed or 1)
    # the package's unique id: 20 zero bytes now, filled with the start of the block's SHA-256
    info[PI["hashes"]] = w.blob(b"\0" * 20, dedup=False)
    uid_at = (info[PI["hashes"]] & 0x0FFFFFFF) + 1
    info_v = w.obj(info)
    paths_v = w.obj([0] + paths)
    scripts = [0] + [w.blob(p["apk"]["scripts"].get(s, "")) for s in SCRIPT_SLOTS]
    scripts_v = w.obj(scripts)
    root = w.obj([0, info_v, paths_v, scripts_v])
    struct.pack_into("<I", w.buf, 4, root)
    w.buf[uid_at:uid_at + 20] = hashlib.sha256(bytes(w.buf)).digest()[:20]

    def block(kind, payload):
        raw = 4 + len(payload)
        return struct.pack("<I", kind << 30 | raw) + payload + b"\0" * (-raw % 8)

    body = [b"ADB.", b"pckg", block(0, bytes(w.buf))]
    for di, fj, data in data_order:
        body.append(block(2, struct.pack("<II", di, fj) + data))
    # apk's default compression: deflate at level 9 without a zlib or gzip wrapper
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    return b"ADBd" + z.compress(b"".join(body)) + z.flush()


# ---------------------------------------------------------------- apk reader (--check)

class ApkError(Exception):
    pass


class AdbReader:
    """Reads the ADB block with its own decoding: tags, bounds, counts and types are checked
    as they are met, so a malformed package gives an error, not a wrong listing."""

    def __init__(self, adb):
        self.adb = adb
        if len(adb) < 8:
            raise ApkError("ADB block shorter than its header")
        if adb[0] != 0:
            raise ApkError("ADB compat version %d, expected 0" % adb[0])

    def u32(self, off):
        if off + 4 > len(self.adb):
            raise ApkError("offset %d beyond the ADB block" % off)
        return struct.unpack_from("<I", self.adb, off)[0]

    def value(self, tag):
        kind, v = tag >> 28, tag & 0x0FFFFFFF
        if tag == 0:
            return None
        if kind == 0x1:
            return v
        if kind == 0x2:
            return self.u32(v)
        if kind == 0x3:
            return self.u32(v) | self.u32(v + 4) << 32
        if kind in (0x8, 0x9, 0xA):
            width = {0x8: 1, 0x9: 2, 0xA: 4}[kind]
            if v + width > len(self.adb):
                raise ApkError("blob length beyond the block")
            n = int.from_bytes(self.adb[v:v + width], "little")
            if v + width + n > len(self.adb):
                raise ApkError("blob of %d bytes at %d runs past the block" % (n, v))
            return bytes(self.adb[v + width:v + width + n])
        if kind in (0xD, 0xE):
            count = self.u32(v)
            if count < 1:
                raise ApkError("object with no slots")
            return [self.u32(v + 4 * i) for i in range(1, count)]
        raise ApkError("unknown value type 0x%x" % kind)

    def obj(self, tag, names):
        slots = self.value(tag) if tag else []
        if not isinstance(slots, list):
            raise ApkError("expected an object")
        out = {}
        for i, t in enumerate(slots, 1):
            if t and i <= len(names) and names[i - 1]:
                out[names[i - 1]] = t
        return out

    def array(self, tag):
        if not tag:
            return []
        slots = self.value(tag)
        if not isinstance(slots, list):
            raise ApkError("expected an array")
        return slots

    def text(self, tag):
        v = self.value(tag) if tag else None
        if v is not None and not isinstance(v, bytes):
            raise ApkError("expected a string")
        return v.decode() if v is not None else None

    def number(self, tag):
        v = self.value(tag) if tag else None
        if v is not None and not isinstance(v, int):
            raise ApkError("expected a number")
        return v


INFO_NAMES = ["name", "version", "hashes", "description", "arch", "license", "origin",
              "maintainer", "url", "repo-commit", "build-time", "installed-size", "file-size",
              "provider-priority", "depends", "provides", "replaces", "install-if", "recommends",
              "layer", "tags"]


def read_apk(raw):
    """Returns (metadata dict, list of entries, list of notes)."""
    if raw[:4] == b"ADBd":
        try:
            stream = zlib.decompress(raw[4:], -15)
        except zlib.error as e:
            raise ApkError("deflate stream: %s" % e)
        compression = "deflate"
    elif raw[:4] == b"ADBc":
        alg, _level = raw[4], raw[5]
        if alg == 0:
            stream, compression = raw[6:], "none"
        elif alg == 1:
            stream, compression = zlib.decompress(raw[6:], -15), "deflate"
        else:
            raise ApkError("compression algorithm %d (zstd) cannot be read with Python's library" % alg)
    elif raw[:4] == b"ADB.":
        stream, compression = raw, "none"
    else:
        raise ApkError("not an apk v3 package (starts %r); v2 packages are gzip'd tar" % raw[:4])
    if stream[:4] != b"ADB." or stream[4:8] != b"pckg":
        raise ApkError("missing ADB. magic or schema pckg")
    pos, adb, sigs, datas = 8, None, 0, []
    while pos < len(stream):
        if pos + 4 > len(stream):
            raise ApkError("truncated block header")
        word = struct.unpack_from("<I", stream, pos)[0]
        kind, raw_size = word >> 30, word & 0x3FFFFFFF
        hdr = 4
        if kind == 3:
            # extended header for blocks over 1 GiB: real type, reserved, u64 size
            kind, raw_size = word & 0x3FFFFFFF, struct.unpack_from("<Q", stream, pos + 8)[0]
            hdr = 16
        if raw_size < hdr or pos + raw_size > len(stream):
            raise ApkError("block at %d runs past the file" % pos)
        payload = stream[pos + hdr:pos + raw_size]
        padded = raw_size + (-raw_size % 8)
        if stream[pos + raw_size:pos + padded].strip(b"\0"):
            raise ApkError("non-zero block padding at %d" % pos)
        if kind == 0:
            if adb is not None:
                raise ApkError("second ADB block")
            adb = payload
        elif kind == 1:
            if adb is None or datas:
                raise ApkError("SIG block out of place")
            sigs += 1
        elif kind == 2:
            if adb is None:
                raise ApkError("DATA block before the ADB block")
            datas.append(payload)
        else:
            raise ApkError("unknown block type %d" % kind)
        pos += padded
    if adb is None:
        raise ApkError("no ADB block")

    r = AdbReader(adb)
    root = r.obj(r.u32(4), ["info", "paths", "scripts", "triggers", "replaces-priority"])
    info_t = r.obj(root.get("info", 0), INFO_NAMES)
    meta = {"compression": compression, "signatures": sigs}
    for k in ("name", "version", "description", "arch", "license", "origin", "maintainer", "url"):
        meta[k] = r.text(info_t.get(k, 0))
    for k in ("installed-size", "provider-priority", "build-time"):
        meta[k] = r.number(info_t.get(k, 0))
    h = r.value(info_t["hashes"]) if "hashes" in info_t else None
    meta["hashes"] = h.hex() if h else None
    for k in ("depends", "provides"):
        deps = []
        for t in r.array(info_t.get(k, 0)):
            d = r.obj(t, ["name", "version", "match"])
            s = r.text(d.get("name", 0))
            if "version" in d:
                s += "=" + r.text(d["version"]) if "match" not in d else \
                    "(op %d)%s" % (r.number(d["match"]), r.text(d["version"]))
            deps.append(s)
        meta[k] = deps
    scripts = {}
    st = r.obj(root.get("scripts", 0), SCRIPT_SLOTS)
    for k, t in st.items():
        scripts[k] = r.value(t)
    meta["scripts"] = scripts

    entries, notes, total = [], [], 0
    expect_data = []
    for di, t in enumerate(r.array(root.get("paths", 0)), 1):
        d = r.obj(t, ["name", "acl", "files"])
        dname = r.text(d.get("name", 0)) or ""
        acl = r.obj(d.get("acl", 0), ["mode", "user", "group", "xattrs"])
        entries.append({"path": "/" + dname, "type": "dir", "mode": r.number(acl.get("mode", 0)),
                        "user": r.text(acl.get("user", 0)), "group": r.text(acl.get("group", 0))})
        for fj, ft in enumerate(r.array(d.get("files", 0)), 1):
            f = r.obj(ft, ["name", "acl", "size", "mtime", "hash", "target"])
            facl = r.obj(f.get("acl", 0), ["mode", "user", "group", "xattrs"])
            name = r.text(f.get("name", 0))
            size = r.number(f.get("size", 0)) or 0
            e = {"path": "/" + (dname + "/" if dname else "") + name, "type": "file",
                 "mode": r.number(facl.get("mode", 0)), "user": r.text(facl.get("user", 0)),
                 "group": r.text(facl.get("group", 0)), "size": size,
                 "mtime": r.number(f.get("mtime", 0)),
                 "sha256": (r.value(f["hash"]).hex() if "hash" in f else None), "data": b""}
            if "target" in f:
                e["type"] = "special"
                notes.append("%s: link or device entries are not expected here" % e["path"])
            elif size:
                expect_data.append((di, fj, e))
            total += size if e["type"] == "file" else 0
            entries.append(e)
    if len(datas) != len(expect_data):
        raise ApkError("%d DATA blocks for %d non-empty files" % (len(datas), len(expect_data)))
    for payload, (di, fj, e) in zip(datas, expect_data):
        if len(payload) < 8:
            raise ApkError("DATA block without its index header")
        bi, bj = struct.unpack_from("<II", payload, 0)
        if (bi, bj) != (di, fj):
            raise ApkError("DATA block for %d/%d where %d/%d (%s) was due" % (bi, bj, di, fj, e["path"]))
        content = payload[8:]
        if len(content) != e["size"]:
            raise ApkError("%s: %d bytes of data, size says %d" % (e["path"], len(content), e["size"]))
        if hashlib.sha256(content).hexdigest() != e["sha256"]:
            raise ApkError("%s: SHA-256 of the data does not match the ADB block" % e["path"])
        e["data"] = content
    if meta["installed-size"] != (total or 1):
        notes.append("installed-size %s, files add up to %d" % (meta["installed-size"], total))
    # mkpkg's unique id: SHA-256 of the ADB block taken with the id zeroed, first 20 bytes
    if h and len(h) == 20:
        zeroed = bytearray(adb)
        at = (info_t["hashes"] & 0x0FFFFFFF) + 1
        zeroed[at:at + 20] = b"\0" * 20
        meta["id-matches"] = hashlib.sha256(bytes(zeroed)).digest()[:20] == h
    return meta, entries, notes


def check_apk(path, extract):
    with open(path, "rb") as f:
        raw = f.read()
    try:
        meta, entries, notes = read_apk(raw)
    except ApkError as e:
        print("FAIL %s: %s" % (path, e))
        return 1
    print("package %s" % path)
    print("format apk-v3 compression=%s signatures=%d" % (meta["compression"], meta["signatures"]))
    for k in ("name", "version", "arch", "license", "origin", "maintainer", "url",
              "installed-size", "provider-priority", "build-time", "hashes"):
        if meta[k] is not None:
            print("%s %s" % (k, meta[k]))
    print("id-matches %s" % ("yes" if meta.get("id-matches") else "no"))
    print("description %s" % meta["description"])
    print("depends %s" % " ".join(meta["depends"]))
    print("provides %s" % " ".join(meta["provides"]))
    for k in SCRIPT_SLOTS:
        if k in meta["scripts"]:
            s = meta["scripts"][k]
            print("script %s %d %s" % (k, len(s), hashlib.sha256(s).hexdigest()))
    for e in entries:
        if e["type"] == "dir":
            print("dir %s %04o %s:%s" % (e["path"], e["mode"], e["user"], e["group"]))
        else:
            print("file %s %04o %s:%s %d %s mtime=%s" % (e["path"], e["mode"], e["user"], e["group"],
                                                         e["size"], e["sha256"], e["mtime"]))
    for n in notes:
        print("note %s" % n)
    if extract:
        os.makedirs(extract, exist_ok=True)
        for e in entries:
            target = os.path.join(extract, e["path"].lstrip("/"))
            if e["type"] == "dir":
                os.makedirs(target, exist_ok=True)
            elif e["type"] == "file":
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as f:
                    f.write(e["data"])
        # modes last, so read-only directories do not stop the files going in
        for e in reversed(entries):
            if e["type"] in ("dir", "file"):
                os.chmod(os.path.join(extract, e["path"].lstrip("/")), e["mode"])
        sdir = os.path.join(extract + ".scripts")
        os.makedirs(sdir, exist_ok=True)
        for k, s in meta["scripts"].items():
            with open(os.path.join(sdir, k), "wb") as f:
                f.write(s)
    return 1 if notes else 0


# ---------------------------------------------------------------- package specs

def solowg_spec(arch, binary, release=None, src=None):
    variables, defines = read_makefile(SOLOWG_MAKEFILE)
    pkg = define_vars(defines.get("Package/solowg", ""))
    for need in ("PKG_VERSION", "PKG_LICENSE", "PKG_MAINTAINER"):
        if not variables.get(need):
            die("%s is not set in openwrt/feed/net/solowg/Makefile" % need)
    if release is not None:
        variables["PKG_RELEASE"] = release
    version = make_version(variables["PKG_VERSION"], variables.get("PKG_RELEASE", ""))
    check_version(version)
    if "Package/solowg/install" not in defines or "Package/solowg/description" not in defines:
        die("openwrt/feed/net/solowg/Makefile lacks Package/solowg/install or description")
    if not os.path.isfile(binary):
        die("binary %s does not exist" % binary)
    tree = solowg_tree(defines, binary, src or REPO)
    conffiles = [l.strip() for l in defines.get("Package/solowg/conffiles", "").split("\n")
                 if l.strip()]
    # package-pack.mk: conffiles the package does not ship are listed for sysupgrade to keep
    missing = [c for c in conffiles if not (tree.entries.get(c.strip("/"), (0, None))[1] is not None)]
    if missing:
        tree.mkdir("lib/upgrade/keep.d")
        tree.add_file("lib/upgrade/keep.d/solowg", 0o644, "".join(c + "\n" for c in missing).encode())
    userid = pkg.get("USERID", "")
    if "$(" in userid:
        die("cannot expand USERID %s" % userid)
    inputs = [SOLOWG_MAKEFILE, binary]
    postinst_pkg = make_script(defines.get("Package/solowg/postinst"))
    return {
        "name": "solowg", "version": version, "arch": arch,
        "depends": depends_list(pkg.get("DEPENDS", "")),
        "provides": [],
        "source": SOURCE["solowg"], "license": variables["PKG_LICENSE"],
        "license_files": variables.get("PKG_LICENSE_FILES", ""), "section": pkg.get("SECTION", ""),
        "maintainer": variables["PKG_MAINTAINER"], "url": pkg.get("URL", variables.get("PKG_URL", "")),
        "userid": userid,
        "description": defines["Package/solowg/description"], "conffiles": conffiles,
        "postinst_pkg": postinst_pkg, "inputs": inputs,
    }, tree


def luci_spec():
    variables, _ = read_makefile(LUCI_MAKEFILE)
    if variables.get("LUCI_PKGARCH", "all") != "all":
        die("luci-app/Makefile sets LUCI_PKGARCH to %s; only 'all' is supported" %
            variables["LUCI_PKGARCH"])
    if not variables.get("LUCI_DESCRIPTION") or not variables.get("PKG_LICENSE"):
        die("luci-app/Makefile must set LUCI_DESCRIPTION and PKG_LICENSE")
    # luci.mk: PKG_RELEASE?=1, VERSION is PKG_VERSION[-rPKG_RELEASE] when PKG_VERSION is set,
    # else the version it derives from git
    if variables.get("PKG_VERSION"):
        version = make_version(variables["PKG_VERSION"], variables.get("PKG_RELEASE", "1"))
    else:
        version = luci_src_version()
    check_version(version)
    tree = luci_tree(LUCI_DIR)
    # luci.mk would name "OpenWrt LuCI community" and the LuCI project's address, which do not
    # maintain this app: use the app's own LUCI_MAINTAINER/LUCI_URL, else solowg's maintainer.
    sol_vars, _ = read_makefile(SOLOWG_MAKEFILE)
    maintainer = variables.get("LUCI_MAINTAINER") or variables.get("PKG_MAINTAINER") or \
        sol_vars.get("PKG_MAINTAINER", "")
    return {
        "name": "luci-app-solowg", "version": version, "arch": "all",
        "depends": depends_list(variables.get("LUCI_DEPENDS", "")),
        "provides": [],
        "source": SOURCE["luci-app-solowg"], "license": variables["PKG_LICENSE"],
        "license_files": variables.get("PKG_LICENSE_FILES", ""), "section": "luci",
        "maintainer": maintainer, "url": variables.get("LUCI_URL", ""), "userid": "",
        # luci.mk's description define is "   $(strip $(LUCI_DESCRIPTION))"
        "description": "   " + " ".join(variables["LUCI_DESCRIPTION"].split()),
        "conffiles": [], "postinst_pkg": LUCI_POSTINST_PKG, "inputs": [LUCI_MAKEFILE],
    }, tree


# luci.mk's names for the languages we translate (LUCI_LANG.<code>); a po/<lang>/ not listed
# here is an error, not a guess.
LUCI_LANG = {"de": "Deutsch (German)"}


def expand(value, variables):
    """$(NAME) references to the Makefile's own simple variables (PKG_PO_VERSION's)."""
    def sub(m):
        if m.group(1) not in variables:
            die("cannot expand $(%s)" % m.group(1))
        return variables[m.group(1)]
    return re.sub(r"\$\(([A-Za-z0-9_]+)\)", sub, value)


def luci_i18n_spec(lang, po2lmo):
    """luci.mk's LuciTranslation: luci-i18n-BASENAME-LANG with BASENAME the app's name less
    luci-app-, holding po/LANG/*.po compiled by po2lmo to /usr/lib/lua/luci/i18n/NAME.LANG.lmo
    and a uci-defaults script that adds the language to LuCI's list. It depends on the app,
    has no postinst part of its own, and carries PKG_PO_VERSION (else the last po/ commit's
    date)."""
    variables, _ = read_makefile(LUCI_MAKEFILE)
    app = variables.get("LUCI_NAME", "luci-app-solowg")
    basename = re.sub(r"^luci-[a-z]+-", "", app)
    if lang not in LUCI_LANG:
        die("no language name for po/%s (add it to LUCI_LANG as luci.mk has it)" % lang)
    po_dir = os.path.join(LUCI_DIR, "po", lang)
    pos = sorted(f for f in os.listdir(po_dir) if f.endswith(".po")) if os.path.isdir(po_dir) else []
    if not pos:
        die("no .po file in luci-app/po/%s" % lang)
    if not po2lmo or not os.access(po2lmo, os.X_OK):
        die("luci-i18n packages need --po2lmo (LuCI's compiler, tests/openwrt/po2lmo.sh builds it)")
    if variables.get("PKG_PO_VERSION"):
        version = expand(variables["PKG_PO_VERSION"], variables)
    else:
        out = git("log", "-1", "--format=%ct %h", "--abbrev=7", "--", "po", cwd=LUCI_DIR)
        if not out:
            die("no PKG_PO_VERSION and no git history of luci-app/po")
        ct, h = out.split()
        t = datetime.datetime.fromtimestamp(int(ct), datetime.timezone.utc)
        version = "%s.%05d~%s" % (t.strftime("%y.%j"), int(ct) % 86400, h)
    check_version(version)
    name = "luci-i18n-%s-%s" % (basename, lang)
    tree = Tree()
    tree.mkdir("etc/uci-defaults")
    # echo "uci set luci.languages.<lang, - as _>='<name>'; uci commit luci" > file
    tree.add_file("etc/uci-defaults/" + name, 0o644,
                  ("uci set luci.languages.%s='%s'; uci commit luci\n" %
                   (lang.replace("-", "_"), LUCI_LANG[lang])).encode())
    tree.mkdir("usr/lib/lua/luci/i18n")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for po in pos:
            lmo = os.path.join(tmp, "%s.%s.lmo" % (po[:-3], lang))
            r = subprocess.run([po2lmo, os.path.join(po_dir, po), lmo], capture_output=True, text=True)
            if r.returncode != 0 or not os.path.isfile(lmo):
                die("po2lmo %s failed: %s" % (po, r.stderr.strip()))
            with open(lmo, "rb") as f:
                tree.add_file("usr/lib/lua/luci/i18n/" + os.path.basename(lmo), 0o644, f.read())
    sol_vars, _ = read_makefile(SOLOWG_MAKEFILE)
    return {
        "name": name, "version": version, "arch": "all",
        "depends": ["libc", app], "provides": [],
        "source": SOURCE["luci-app-solowg"], "license": variables["PKG_LICENSE"],
        "license_files": variables.get("PKG_LICENSE_FILES", ""), "section": "luci",
        "maintainer": variables.get("LUCI_MAINTAINER") or sol_vars.get("PKG_MAINTAINER", ""),
        "url": variables.get("LUCI_URL", ""), "userid": "",
        "description": "    Translation for %s - %s" % (app, LUCI_LANG[lang]),
        "conffiles": [], "postinst_pkg": None,
        "inputs": [LUCI_MAKEFILE] + [os.path.join(po_dir, po) for po in pos],
    }, tree


def add_apk_view(p, tree):
    """What OpenWrt 25.12 adds for apk: the lists under /lib/apk/packages/ that functions.sh
    and sysupgrade read, the implicit virtual provide NAME-any, noarch for 'all'."""
    name = p["name"]
    tree.mkdir("lib/apk/packages")
    if p["userid"]:
        # apk has no Require-User field: add_group_and_user reads NAME.rusers instead. It is
        # written before the file list is made, so the list names it (package-pack.mk).
        tree.add_file("lib/apk/packages/%s.rusers" % name, 0o644, (p["userid"] + "\n").encode())
    listed = "".join("/%s\n" % f for f in tree.files())
    tree.add_file("lib/apk/packages/%s.list" % name, 0o644, listed.encode())
    if p["conffiles"]:
        tree.add_file("lib/apk/packages/%s.conffiles" % name, 0o644,
                      "".join(c + "\n" for c in p["conffiles"]).encode())
        static = ""
        for c in p["conffiles"]:
            e = tree.entries.get(c.strip("/"))
            if e and e[1] is not None:
                static += "%s %s\n" % (c, hashlib.sha256(e[1]).hexdigest())
        if static:
            tree.add_file("lib/apk/packages/%s.conffiles_static" % name, 0o644, static.encode())
    p["apk"] = {
        "name": name, "version": p["version"],
        "description": " ".join(p["description"].split()),
        "arch": "noarch" if p["arch"] == "all" else p["arch"],
        "license": p["license"], "origin": p["source"], "maintainer": p["maintainer"],
        "url": p["url"], "depends": p["depends"], "provides": [name + "-any"],
        "scripts": apk_scripts(name, p["postinst_pkg"]),
    }


def copy_tree(tree):
    t = Tree()
    t.entries = dict(tree.entries)
    return t


def build(args):
    if args.package == "solowg":
        if not args.arch or not args.binary:
            die("solowg needs --arch and --binary")
        if not re.match(r"^[a-z0-9][a-z0-9_.+-]*$", args.arch) or args.arch in ("all", "noarch"):
            die("bad architecture %r" % args.arch)
        problem = elf_check(args.binary, args.arch)
        if problem and not args.allow_non_elf:
            die("%s: %s (--allow-non-elf packages it anyway, for tests)" % (args.binary, problem))
        p, tree = solowg_spec(args.arch, args.binary, args.release, args.src)
    else:
        if args.release is not None or args.src:
            die("--release and --src are for the solowg package")
        if args.arch not in (None, "all"):
            die("%s is architecture 'all'" % args.package)
        m = re.match(r"^luci-i18n-solowg-([a-z]{2}(?:[-_][A-Za-z]+)?)$", args.package)
        if m:
            p, tree = luci_i18n_spec(m.group(1), args.po2lmo)
        elif args.package == "luci-app-solowg":
            p, tree = luci_spec()
        else:
            die("unknown package %s" % args.package)
    p["epoch"] = source_date_epoch(p["inputs"])
    os.makedirs(args.out, exist_ok=True)
    written = []
    if args.format in ("ipk", "both"):
        path = os.path.join(args.out, "%s_%s_%s.ipk" % (p["name"], p["version"], p["arch"]))
        data = build_ipk(p, tree)
        with open(path, "wb") as f:
            f.write(data)
        written.append((path, len(data)))
    if args.format in ("apk", "both"):
        atree = copy_tree(tree)
        add_apk_view(p, atree)
        path = os.path.join(args.out, "%s-%s.apk" % (p["name"], p["version"]))
        data = build_apk(p, atree)
        with open(path, "wb") as f:
            f.write(data)
        written.append((path, len(data)))
    for path, size in written:
        print("%s %d" % (path, size))


def release_arg(value):
    if not re.match(r"^[0-9]+$", value):
        raise argparse.ArgumentTypeError("a release is a number")
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("package", nargs="?",
                    help="solowg, luci-app-solowg or luci-i18n-solowg-LANG (po/LANG)")
    ap.add_argument("--po2lmo", metavar="PATH", help="LuCI's po2lmo, for luci-i18n-solowg-LANG")
    ap.add_argument("--arch", help="OpenWrt package architecture, e.g. mips_24kc")
    ap.add_argument("--binary", help="the solowg executable for that architecture")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--format", choices=["ipk", "apk", "both"], default="both")
    ap.add_argument("--allow-non-elf", action="store_true",
                    help="package a --binary that is not an ELF of the architecture (tests only)")
    ap.add_argument("--release", metavar="N", type=release_arg,
                    help="PKG_RELEASE instead of openwrt/feed/net/solowg/Makefile's (tests only: a second version "
                    "of the same build, to upgrade to)")
    ap.add_argument("--src", metavar="DIR",
                    help="the tree the install recipe's $(SOLOWG_SRC) names instead of this "
                    "repository, as the Makefile's SOLOWG_SRC (tests only: changed files/)")
    ap.add_argument("--check", nargs="+", metavar="FILE.apk", help="verify and list apk packages")
    ap.add_argument("--extract", metavar="DIR", help="with one --check file: write its files here "
                    "(and its scripts to DIR.scripts)")
    args = ap.parse_args()
    if args.check:
        if args.package:
            ap.error("--check takes no package name")
        if args.extract and len(args.check) != 1:
            ap.error("--extract needs exactly one --check file")
        sys.exit(max(check_apk(f, args.extract) for f in args.check))
    if not args.package or not args.out:
        ap.error("give a package name and --out (or --check)")
    build(args)


if __name__ == "__main__":
    main()
