// Command etcd runs the etcd server of go.etcd.io/etcd/server/v3 (pinned in go.mod).
// The etcd binary's own main lives in the root module, whose local replaces a dependency
// cannot use; this calls the same entry point.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
