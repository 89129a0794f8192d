//go:build tools

// Package containerd pins containerd v2 so the node image's container runtime (containerd,
// its runc shim and ctr) is built from the Go module proxy. containerd 2.1+ passes a
// container's lifecycle.stopSignal (KEP-4960, ContainerStopSignals) to the runtime; Debian
// bookworm's containerd 1.6 ignores it.
package containerd

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
