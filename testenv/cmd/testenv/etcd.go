package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// runEtcd runs a single-member etcd embedded in this process, plain HTTP on
// loopback (only the apiserver talks to it). Test data, so fsync is off.
func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "etcd data directory (required)")
	clientURL := fs.String("listen-client-url", "http://127.0.0.1:2379", "client URL (loopback only)")
	peerURL := fs.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL (loopback only)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	fsync := fs.Bool("fsync", false, "fsync writes (off: faster, fine for throwaway test data)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		return 2
	}
	cu, err := url.Parse(*clientURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 2
	}
	pu, err := url.Parse(*peerURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 2
	}

	cfg := embed.NewConfig()
	cfg.Name = "testenv"
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = *logLevel
	cfg.UnsafeNoFsync = !*fsync
	// Compact old revisions now and then so a long-running env does not grow
	// without bound; keeps well over what a watch test needs.
	cfg.AutoCompactionMode = embed.CompactorModeRevision
	cfg.AutoCompactionRetention = "10000"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd: start:", err)
		return 1
	}
	defer e.Close()

	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcd: ready, serving clients on %s\n", cu)
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "etcd: not ready after 60s")
		e.Server.Stop()
		return 1
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcd: %v, shutting down\n", s)
		return 0
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcd: serve:", err)
		return 1
	}
}
