/*
 * net/net.h: the door of platform/net/, a sandbox's network: namespaces, veth links, nftables rules, the hub namespace and the
 * services on it (the build proxy, the git server).
 *
 * Other wings include this header alone (tests/layout/wings.py); the headers it names are the
 * wing's contract, each with its own comment. The wing's other headers are its own.
 */
#ifndef ABX_NET_NET_H
#define ABX_NET_NET_H

#include "network.h"
#include "netns.h"
#include "build_proxy.h"
#include "git_server.h"

#endif
