/*
 * nft.h: apply an nftables script inside a network namespace with libnftables (the library the
 * `nft` program is built on, Debian's libnftables1, which the nftables package depends on),
 * loaded with dlopen on first use.
 *
 * Why:     `nft -f -` is a fork of serve, an exec and the dynamic link of nft with its libraries:
 *          about 13 ms of each sandbox create here; the library call parses and sends the same
 *          script (the text `nft -f -` reads: libnftables(3) nft_run_cmd_from_buffer) with no
 *          process. The calling thread enters the namespace for the call and returns (as netns.h),
 *          so the library's netlink socket belongs to that namespace.
 * Errors:  0 applied; -1 refused, with the library's message (newlines as spaces) in out; 1 when
 *          libnftables cannot be loaded: the caller runs `nft -f -` itself.
 */
#ifndef ABX_NET_NFT_H
#define ABX_NET_NFT_H

#include <stddef.h>

/* Apply `text` (an nft script, as `nft -f -` reads it) in namespace `netns_fd`. Not thread-safe
 * with itself: the caller serializes (network.c g_apply). */
int abx_nft_apply(int netns_fd, const char *text, char *out, size_t outlen);

#endif
