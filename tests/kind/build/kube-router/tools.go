//go:build tools

// Package kuberouter pins github.com/cloudnativelabs/kube-router/v2, whose firewall
// (NetworkPolicy controller: iptables + ipset) scenario 19 runs on the kind cluster, so its
// command can be built from the Go module proxy.
//
// Why not sigs.k8s.io/kube-network-policies (v0.7.0/v0.8.0, the ones the proxy serves): it
// diverts packets with the nftables `queue` expression, and this machine's kernel is built
// without it (CONFIG_NFT_QUEUE is not set): its nftables batch fails with "netlink receive:
// no such file or directory". The kernel has the xtables NFQUEUE target, ip_set and xt_set,
// which is what kube-router uses.
package kuberouter

import _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
