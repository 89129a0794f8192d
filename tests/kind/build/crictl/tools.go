//go:build tools

// Package crictl pins sigs.k8s.io/cri-tools so its crictl command can be built
// from the Go module proxy (kind load uses crictl inside the node).
package crictl

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
