# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# udebug.h and libudebug's ubus part, which netifd, procd and logd link: not in
# ../shared/openwrt-src (OpenWrt's udebug package), so written here. The ring buffers
# themselves are libubox's; this part only turns them on when udebugd asks over ubus, and
# no udebugd runs in the tests, so it registers nothing and the rings stay off, as on a
# router without udebugd. A stand-in, for linking only.
ARCHIVE=libubox
DEPS="libubox ubus"
recipe_build() {
	mkdir -p "$PREFIX/include"
	cat >"$PREFIX/include/udebug.h" <<'H'
#ifndef SOLOWG_TEST_UDEBUG_H
#define SOLOWG_TEST_UDEBUG_H
#include <stdbool.h>
#include <libubox/udebug.h>
#include <libubox/blob.h>
#include <libubus.h>

struct udebug_ubus;
typedef void (*udebug_config_cb)(struct udebug_ubus *ctx, struct blob_attr *data, bool enabled);

struct udebug_ubus {
	struct ubus_context *ubus;
	const char *service;
	udebug_config_cb cb;
};

struct udebug_ubus_ring {
	struct udebug_buf *buf;
	const struct udebug_buf_meta *meta;
	unsigned int default_entries;
	unsigned int default_size;
};

void udebug_ubus_init(struct udebug_ubus *ctx, struct ubus_context *ubus, const char *service,
		      udebug_config_cb cb);
void udebug_ubus_free(struct udebug_ubus *ctx);
void udebug_ubus_ring_init(struct udebug *ud, struct udebug_ubus_ring *ring);
void udebug_ubus_apply_config(struct udebug *ud, struct udebug_ubus_ring *rings, int n,
			      struct blob_attr *data, bool enabled);
void udebug_netlink_msg(struct udebug_buf *buf, uint16_t proto, const void *data, size_t len);
#endif
H
	cat >udebug-ubus.c <<'C'
#include <udebug.h>

void udebug_ubus_init(struct udebug_ubus *ctx, struct ubus_context *ubus, const char *service,
		      udebug_config_cb cb)
{
	ctx->ubus = ubus;
	ctx->service = service;
	ctx->cb = cb;
}

void udebug_ubus_free(struct udebug_ubus *ctx)
{
	ctx->ubus = NULL;
}

void udebug_ubus_ring_init(struct udebug *ud, struct udebug_ubus_ring *ring)
{
	(void)ud;
	(void)ring;
}

void udebug_ubus_apply_config(struct udebug *ud, struct udebug_ubus_ring *rings, int n,
			      struct blob_attr *data, bool enabled)
{
	(void)data;
	for (int i = 0; i < n; i++) {
		if (!enabled) {
			udebug_buf_free(rings[i].buf);
			continue;
		}
		if (udebug_buf_valid(rings[i].buf))
			continue;
		udebug_buf_init(rings[i].buf, rings[i].default_entries, rings[i].default_size);
		udebug_buf_add(ud, rings[i].buf, rings[i].meta);
	}
}

/* A netlink message into a ring that is on (only when udebugd turned it on). */
void udebug_netlink_msg(struct udebug_buf *buf, uint16_t proto, const void *data, size_t len)
{
	if (!udebug_buf_valid(buf))
		return;
	udebug_entry_init(buf);
	udebug_entry_append(buf, &proto, sizeof(proto));
	udebug_entry_append(buf, data, len);
	udebug_entry_add(buf);
}
C
	# shellcheck disable=SC2086 # CFLAGS/LDFLAGS are word lists
	cc $CFLAGS -fPIC -shared -o "$PREFIX/lib/libudebug.so" udebug-ubus.c $LDFLAGS \
		-Wl,-rpath,"$PREFIX/lib" -lubus -lubox
}
