package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// An add-on is an optional part of the cluster that "up --with NAME" starts
// beside the control plane (metrics-server, Kueue, Cluster API, ...). Each
// one lives in a file of its own and registers itself in init(), so adding
// one does not touch up.go. Every hook is optional; up calls them in this
// order, only for the add-ons named with --with:
//
//	certs      extra certificates, issued from testenv's CA with the others
//	kwokArgs   extra kwok flags (kwok is started once, with all of them)
//	start      after the control plane is ready (default namespace set up);
//	           starts its processes with u.spawnExe and waits for them
type addon struct {
	certs    []certSpec
	kwokArgs func(u *upper) ([]string, error)
	start    func(ctx context.Context, u *upper, adminKubeconfig string) error
}

var addons = map[string]*addon{}

func registerAddon(name string, a *addon) {
	if _, dup := addons[name]; dup {
		panic("testenv: add-on registered twice: " + name)
	}
	addons[name] = a
}

func addonNames() []string {
	names := make([]string, 0, len(addons))
	for n := range addons {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// withList is the --with flag: add-on names, repeatable or comma-separated,
// each known and named once.
type withList []string

func (l *withList) String() string { return strings.Join(*l, ",") }

func (l *withList) Set(v string) error {
	for _, name := range strings.Split(v, ",") {
		if _, ok := addons[name]; !ok {
			return fmt.Errorf("unknown add-on %q (known: %s)", name, strings.Join(addonNames(), ", "))
		}
		if l.has(name) {
			return fmt.Errorf("add-on %q named twice", name)
		}
		*l = append(*l, name)
	}
	return nil
}

func (l withList) has(name string) bool {
	for _, n := range l {
		if n == name {
			return true
		}
	}
	return false
}

// enabled: the add-ons named with --with, in the order given.
func (u *upper) enabled() []*addon {
	var out []*addon
	for _, n := range u.opt.with {
		out = append(out, addons[n])
	}
	return out
}

func (u *upper) addonCerts() []certSpec {
	var out []certSpec
	for _, a := range u.enabled() {
		out = append(out, a.certs...)
	}
	return out
}

func (u *upper) addonKwokArgs() ([]string, error) {
	var out []string
	for i, a := range u.enabled() {
		if a.kwokArgs == nil {
			continue
		}
		args, err := a.kwokArgs(u)
		if err != nil {
			return nil, fmt.Errorf("add-on %s: %w", u.opt.with[i], err)
		}
		out = append(out, args...)
	}
	return out, nil
}

func (u *upper) startAddons(ctx context.Context, adminKubeconfig string) error {
	for i, a := range u.enabled() {
		if a.start == nil {
			continue
		}
		if err := a.start(ctx, u, adminKubeconfig); err != nil {
			return fmt.Errorf("add-on %s: %w", u.opt.with[i], err)
		}
	}
	return nil
}

// addonBinary is bin/<name> beside bin/testenv (testenv/build builds each
// add-on there, from a Go module of its own).
func (u *upper) addonBinary(name string) (string, error) {
	p := filepath.Join(filepath.Dir(u.self), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is not built (run testenv/build): %w", p, err)
	}
	return p, nil
}
