// Command testenv is a multi-call binary that runs a real Kubernetes control
// plane for tidepool's tests: etcd (embedded), kube-apiserver, kube-scheduler,
// kube-controller-manager and kwok (the fake kubelet), plus "up", which starts
// all of them as child processes of this same binary.
//
// One binary instead of five: the Kubernetes components share most of their
// packages, so one link covers them all (see README.md for the measurements).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// subcommands maps a name to its entry point. Each entry point receives the
// arguments after the subcommand name and returns the process exit code.
var subcommands = map[string]func(args []string) int{
	"etcd":                    runEtcd,
	"kube-apiserver":          runAPIServer,
	"kube-scheduler":          runScheduler,
	"kube-controller-manager": runControllerManager,
	"kwok":                    runKwok,
	"up":                      runUp,
	"down":                    runDown,
	"restart":                 runRestart,
	"version":                 runVersion,
}

// aliases lets the short names from the README work too.
var aliases = map[string]string{
	"apiserver":          "kube-apiserver",
	"scheduler":          "kube-scheduler",
	"controller-manager": "kube-controller-manager",
}

func usage() {
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: testenv <%s> [flags]\n", strings.Join(names, "|"))
}

func main() {
	// Called through a symlink named after a component (busybox style)?
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if _, ok := subcommands[resolve(name)]; !ok {
		if len(os.Args) < 2 {
			usage()
			os.Exit(2)
		}
		name, args = os.Args[1], os.Args[2:]
	}
	run, ok := subcommands[resolve(name)]
	if !ok {
		fmt.Fprintf(os.Stderr, "testenv: unknown subcommand %q\n", name)
		usage()
		os.Exit(2)
	}
	// The upstream commands read os.Args themselves (cobra, kwok's config
	// flags), so make them see "<binary> <their flags>".
	os.Args = append([]string{os.Args[0] + " " + resolve(name)}, args...)
	os.Exit(run(args))
}

func resolve(name string) string {
	if a, ok := aliases[name]; ok {
		return a
	}
	return name
}
