/* bench/router --tx-paths, in the guest: sends N UDP datagrams of LEN payload bytes from
 * SRC:51999 to DST:9 over IFACE, in sendmmsg batches of 32, by one of these ways:
 *   udp     a connected UDP socket (what solowg does where the NIC has no checksum offload,
 *           so no UDP GSO): the kernel builds the headers and sums while it copies;
 *   packet  an AF_PACKET socket: Ethernet, IPv4 and UDP headers and the UDP checksum made
 *           here, the frame handed to the NIC's queue (no routing, netfilter or neighbour
 *           code on the way);
 *   bypass  packet with PACKET_QDISC_BYPASS (no qdisc either);
 *   build   what packet does in user space, without sending: the part to subtract.
 * The host counts the guest's instructions around two such runs; their difference over the
 * datagrams' difference is the cost per datagram. Exits 1 on any error. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32
#define HDRS (14 + 20 + 8)
static uint8_t frames[BATCH][2048];

/* The ones' complement sum of p[0..n) added to s, in 32-bit words as a router's sender
 * would do it (not folded). */
static uint32_t sum(const uint8_t *p, size_t n, uint32_t s) {
	uint64_t a = s;
	for (; n >= 4; n -= 4, p += 4)
		a += (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	for (; n > 1; n -= 2, p += 2)
		a += (uint32_t)p[0] << 8 | p[1];
	if (n)
		a += (uint32_t)p[0] << 8;
	while (a >> 32)
		a = (a & 0xffffffff) + (a >> 32);
	return (uint32_t)((a & 0xffff) + (a >> 16));
}

static uint16_t fold(uint32_t s) {
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void put16(uint8_t *p, unsigned v) {
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The IPv4 and UDP headers of frame f (after its Ethernet header), checksums included. */
static void headers(uint8_t *f, const uint8_t src[4], const uint8_t dst[4], unsigned id, int len) {
	uint8_t *ip = f + 14, *udp = ip + 20;
	memset(ip, 0, 28);
	ip[0] = 0x45;
	put16(ip + 2, 20 + 8 + (unsigned)len);
	put16(ip + 4, id);
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	put16(ip + 10, fold(sum(ip, 20, 0)));
	put16(udp, 51999);
	put16(udp + 2, 9);
	put16(udp + 4, 8 + (unsigned)len);
	uint16_t c = fold(sum(udp, 8 + (size_t)len, sum(ip + 12, 8, 17 + 8 + (unsigned)len)));
	put16(udp + 6, c ? c : 0xffff);
}

int main(int argc, char **argv) {
	if (argc != 8) {
		fprintf(stderr, "usage: txpath udp|packet|bypass|build N LEN IFACE SRC DST DSTMAC\n");
		return 2;
	}
	const char *way = argv[1], *ifname = argv[4];
	long n = atol(argv[2]);
	int len = atoi(argv[3]);
	uint8_t src[4], dst[4], mac[6];
	unsigned m[6];
	if (n < 0 || len < 0 || len > 2048 - HDRS || inet_pton(AF_INET, argv[5], src) != 1 ||
	    inet_pton(AF_INET, argv[6], dst) != 1 ||
	    sscanf(argv[7], "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6) {
		fprintf(stderr, "txpath: bad arguments\n");
		return 2;
	}
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)m[i];
	int udp = !strcmp(way, "udp"), build = !strcmp(way, "build");
	if (!udp && !build && strcmp(way, "packet") && strcmp(way, "bypass")) {
		fprintf(stderr, "txpath: unknown way %s\n", way);
		return 2;
	}
	int fd, hl = udp ? 0 : HDRS, big = 4 << 20;
	if (udp) {
		struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(9)};
		struct sockaddr_in from = {.sin_family = AF_INET, .sin_port = htons(51999)};
		memcpy(&to.sin_addr, dst, 4);
		memcpy(&from.sin_addr, src, 4);
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0 || bind(fd, (void *)&from, sizeof from) || connect(fd, (void *)&to, sizeof to)) {
			perror("txpath: udp socket");
			return 1;
		}
	} else {
		/* build makes the same socket, so both have the same fixed costs. */
		fd = socket(AF_PACKET, SOCK_RAW, 0);
		struct sockaddr_ll at = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP)};
		at.sll_ifindex = (int)if_nametoindex(ifname);
		struct ifreq ifr = {0};
		strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
		if (fd < 0 || !at.sll_ifindex || bind(fd, (void *)&at, sizeof at) ||
		    ioctl(fd, SIOCGIFHWADDR, &ifr)) {
			perror("txpath: packet socket");
			return 1;
		}
		int one = 1;
		if (!strcmp(way, "bypass") &&
		    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one)) {
			perror("txpath: PACKET_QDISC_BYPASS");
			return 1;
		}
		for (int i = 0; i < BATCH; i++) {
			memcpy(frames[i], mac, 6);
			memcpy(frames[i] + 6, ifr.ifr_hwaddr.sa_data, 6);
			frames[i][12] = 0x08;
			frames[i][13] = 0x00;
		}
	}
	/* A full send buffer blocks rather than drops: every datagram reaches the NIC. */
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	memset(msgs, 0, sizeof msgs);
	for (int i = 0; i < BATCH; i++) {
		memset(frames[i] + hl, 0x5a, (size_t)len);
		iov[i].iov_base = frames[i];
		iov[i].iov_len = (size_t)(hl + len);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	unsigned id = 1;
	long sent = 0, refused = 0;
	while (sent < n) {
		int k = n - sent < BATCH ? (int)(n - sent) : BATCH;
		if (hl)
			for (int i = 0; i < k; i++)
				headers(frames[i], src, dst, id++ & 0xffff, len);
		int r = build ? k : sendmmsg(fd, msgs, (unsigned)k, 0);
		if (r < 0 && errno == ENOBUFS) {
			/* Past the qdisc (bypass) a full NIC queue refuses the frame: wait a little. */
			struct timespec pause = {0, 200000};
			nanosleep(&pause, NULL);
			refused++;
			continue;
		}
		if (r <= 0) {
			perror("txpath: sendmmsg");
			return 1;
		}
		sent += r;
	}
	printf("sent %ld, refused %ld times\n", sent, refused);
	return 0;
}
