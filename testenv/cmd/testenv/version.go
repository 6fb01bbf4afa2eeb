package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// runVersion prints the pinned versions this binary was built from, read
// from the module build info (so it cannot drift from go.mod).
func runVersion(args []string) int {
	fmt.Printf("go: %s\n", runtime.Version())
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return 1
	}
	want := map[string]bool{
		"k8s.io/kubernetes": true, "k8s.io/client-go": true,
		"sigs.k8s.io/kwok": true, "go.etcd.io/etcd/server/v3": true,
	}
	for _, m := range bi.Deps {
		if !want[m.Path] {
			continue
		}
		v := m.Version
		if m.Replace != nil {
			v = m.Replace.Version
		}
		fmt.Printf("%s: %s\n", m.Path, v)
	}
	return 0
}
