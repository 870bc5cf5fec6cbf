// Command etcd is etcd's server, built from go.etcd.io/etcd/server/v3 at the
// version kubernetes pins, for envtest (.ci/k8s.sh).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
