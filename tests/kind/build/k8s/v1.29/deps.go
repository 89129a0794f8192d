//go:build tools

// Package deps pins the command packages the node image is built from, so
// `go mod tidy` records every module they need in go.sum.
package deps

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-proxy/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kubeadm/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
	_ "k8s.io/kubectl/pkg/cmd"
)
