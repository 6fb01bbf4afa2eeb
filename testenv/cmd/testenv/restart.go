package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// runRestart stops one running component of the cluster in --dir and starts
// it again with the arguments "up" started it with: what a control-plane
// restart looks like to clients (connections refused while it is down, open
// watches cut, then a fresh watch cache). For kube-apiserver it waits until
// /readyz answers ok again.
//
//	testenv restart [--dir DIR] [--down 5s] [--timeout 120s] [--kill] COMPONENT
func runRestart(args []string) int {
	fs := flag.NewFlagSet("restart", flag.ContinueOnError)
	dir := fs.String("dir", defaultDir(), "state directory of the cluster; env TESTENV_DIR")
	down := fs.Duration("down", 0, "how long the component stays stopped before it is started again")
	timeout := fs.Duration("timeout", 120*time.Second, "give up if it is not ready again within this time")
	kill := fs.Bool("kill", false, "SIGKILL instead of SIGTERM (a crash rather than a shutdown)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: testenv restart [--dir DIR] [--down DURATION] [--timeout DURATION] [--kill] COMPONENT")
		return 2
	}
	name := resolve(fs.Arg(0))
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "testenv: "+format+"\n", a...) }
	if err := restart(*dir, name, *down, *timeout, *kill, logf); err != nil {
		logf("restart %s: %v", name, err)
		return 1
	}
	return 0
}

func restart(dir, name string, down, timeout time.Duration, kill bool, logf func(string, ...any)) error {
	ps, err := readPids(dir)
	if err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Join(dir, pidsFile), err)
	}
	var running *proc
	for i := range ps {
		if ps[i].name == name && ps[i].alive() {
			running = &ps[i]
		}
	}
	if running == nil {
		return fmt.Errorf("no running %s recorded in %s", name, filepath.Join(dir, pidsFile))
	}
	l, err := readLaunch(dir, name)
	if err != nil {
		return fmt.Errorf("how %s was started is not recorded (a cluster from an older testenv?): %w", name, err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	t0 := time.Now()
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	logf("stopping %s (pid %d, %v)", name, running.pid, sig)
	_ = syscall.Kill(running.pid, sig)
	if !waitGone(*running, 30*time.Second) {
		_ = syscall.Kill(running.pid, syscall.SIGKILL)
		if !waitGone(*running, 5*time.Second) {
			return fmt.Errorf("pid %d does not go away", running.pid)
		}
	}
	if down > 0 {
		logf("%s stopped; starting it again in %v", name, down)
		time.Sleep(down)
	}

	logPath := filepath.Join(dir, "logs", name+".log")
	cmd, p, err := startComponent(self, dir, name, l, "restart ")
	if err != nil {
		return err
	}
	// The child outlives this command (its own session); do not wait for it.
	_ = cmd.Process.Release()
	logf("started %s again (pid %d)", name, p.pid)

	if name != "kube-apiserver" {
		return nil
	}
	url, err := apiserverURL(l.Args)
	if err != nil {
		return err
	}
	c, err := adminHTTPClient(filepath.Join(dir, "pki"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				logf("kube-apiserver ready again, %.1fs after it was stopped", time.Since(t0).Seconds())
				return nil
			}
		}
		if !p.alive() {
			return fmt.Errorf("kube-apiserver exited while starting; see %s", logPath)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready within %v; see %s", timeout, logPath)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// apiserverURL is https://127.0.0.1:<--secure-port> from the recorded flags.
func apiserverURL(args []string) (string, error) {
	for _, a := range args {
		if port, ok := strings.CutPrefix(a, "--secure-port="); ok {
			return "https://127.0.0.1:" + port, nil
		}
	}
	return "", fmt.Errorf("no --secure-port among the recorded kube-apiserver flags")
}

func adminHTTPClient(pkiDir string) (*http.Client, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s: no certificate", filepath.Join(pkiDir, "ca.crt"))
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}},
	}}, nil
}
