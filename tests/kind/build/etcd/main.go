// Command etcd is the etcd server (go.etcd.io/etcd/server/v3/etcdmain) built
// from the Go module proxy for the offline kind node image.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
