package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The state directory of one testenv cluster:
//
//	<dir>/.tidepool-testenv   marker: only directories carrying it are ever removed
//	<dir>/pids                "<name> <pid> <starttime>" per started process
//	<dir>/env                 shell-sourceable endpoints (KUBECONFIG=..., ...)
//	<dir>/admin.kubeconfig    cluster-admin (O=system:masters) kubeconfig
//	<dir>/pki/                CA, serving and client certificates, SA keys
//	<dir>/kubeconfig/         kubeconfigs of the components
//	<dir>/etcd/               etcd data
//	<dir>/logs/<name>.log     stdout+stderr of each process
//	<dir>/launch/<name>.json  the arguments and extra environment each was started with
//	                          (so "restart" can start it again the same way)
const (
	markerFile = ".tidepool-testenv"
	pidsFile   = "pids"
)

func defaultDir() string {
	if d := os.Getenv("TESTENV_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("tidepool-testenv-%d", os.Getuid()))
}

// proc is one recorded process. The start time (clock ticks since boot, from
// /proc/<pid>/stat) guards against a recycled pid: a pid only counts as ours
// while its start time is still the recorded one.
type proc struct {
	name  string
	pid   int
	start uint64
}

func procStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	// After "(comm)" come fields 3.. of proc(5); starttime is field 22.
	if len(f) < 20 {
		return 0, errors.New("short stat")
	}
	if f[0] == "Z" || f[0] == "X" { // zombie or dead: not running
		return 0, errors.New("zombie")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func (p proc) alive() bool {
	st, err := procStartTime(p.pid)
	return err == nil && st == p.start
}

func readPids(dir string) ([]proc, error) {
	f, err := os.Open(filepath.Join(dir, pidsFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ps []proc
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		pid, err1 := strconv.Atoi(fs[1])
		st, err2 := strconv.ParseUint(fs[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		ps = append(ps, proc{fs[0], pid, st})
	}
	return ps, sc.Err()
}

func appendPid(dir string, p proc) error {
	f, err := os.OpenFile(filepath.Join(dir, pidsFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%s %d %d\n", p.name, p.pid, p.start); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stopProcs stops the processes one by one in reverse start order (kwok and
// the controllers first, etcd last, so the apiserver can still reach etcd
// while it shuts down): SIGTERM, then SIGKILL if it is still there after grace.
func stopProcs(ps []proc, grace time.Duration, logf func(string, ...any)) {
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		if !p.alive() {
			continue
		}
		logf("stopping %s (pid %d)", p.name, p.pid)
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
		if waitGone(p, grace) {
			continue
		}
		logf("%s (pid %d) still running after %v, sending SIGKILL", p.name, p.pid, grace)
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		waitGone(p, 5*time.Second)
	}
}

// waitGone waits up to d for p to exit.
func waitGone(p proc, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for p.alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func anyAlive(ps []proc) bool {
	for _, p := range ps {
		if p.alive() {
			return true
		}
	}
	return false
}

// removeStateDir deletes dir, but only if it is a testenv state directory.
func removeStateDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, markerFile)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("%s has no %s marker; not removing it", dir, markerFile)
		}
		return err
	}
	return os.RemoveAll(dir)
}

// runDown stops what "up" started in the state dir and removes the dir.
func runDown(args []string) int {
	dir := defaultDir()
	grace := 10 * time.Second
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--dir" && i+1 < len(args):
			i++
			dir = args[i]
		case strings.HasPrefix(a, "--dir="):
			dir = strings.TrimPrefix(a, "--dir=")
		case a == "--keep-logs":
			// handled below
		default:
			fmt.Fprintf(os.Stderr, "usage: testenv down [--dir DIR] [--keep-logs]\n")
			return 2
		}
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "testenv: "+format+"\n", a...) }
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		logf("nothing to stop: %s does not exist", dir)
		return 0
	}
	ps, err := readPids(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		logf("reading %s: %v", filepath.Join(dir, pidsFile), err)
		return 1
	}
	if len(ps) == 0 {
		logf("nothing recorded as running in %s", dir)
	}
	stopProcs(ps, grace, logf)
	if anyAlive(ps) {
		logf("some processes could not be stopped; keeping %s", dir)
		return 1
	}
	for _, a := range args {
		if a == "--keep-logs" {
			_ = os.Remove(filepath.Join(dir, pidsFile))
			logf("stopped; logs kept in %s", filepath.Join(dir, "logs"))
			return 0
		}
	}
	if err := removeStateDir(dir); err != nil {
		logf("%v", err)
		return 1
	}
	logf("stopped and removed %s", dir)
	return 0
}

// launch is how a component was started: its arguments after the subcommand
// name and the environment added to testenv's own.
type launch struct {
	Args []string `json:"args"`
	Env  []string `json:"env,omitempty"`
	// Exe, when set, is the program to run (an add-on's own binary) with
	// Args; otherwise it is "<testenv> <name> Args...".
	Exe string `json:"exe,omitempty"`
}

func writeLaunch(dir, name string, l launch) error {
	if err := os.MkdirAll(filepath.Join(dir, "launch"), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "launch", name+".json"), b, 0o644)
}

func readLaunch(dir, name string) (launch, error) {
	var l launch
	b, err := os.ReadFile(filepath.Join(dir, "launch", name+".json"))
	if err != nil {
		return l, err
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("%s: %w", filepath.Join(dir, "launch", name+".json"), err)
	}
	return l, nil
}

// startComponent starts "<self> <name> args..." (or "<l.Exe> args...") in dir, in its own session (so
// it outlives its starter and gets no terminal signals), appending its output
// to logs/<name>.log after a "# <time> <note><name> <args>" line, and records
// its pid in the pids file.
func startComponent(self, dir, name string, l launch, note string) (*exec.Cmd, proc, error) {
	logFile, err := os.OpenFile(filepath.Join(dir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, proc{}, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "# %s %s%s %s\n", time.Now().Format(time.RFC3339), note, name, strings.Join(l.Args, " "))
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, proc{}, err
	}
	defer devnull.Close()
	cmd := exec.Command(self, append([]string{name}, l.Args...)...)
	if l.Exe != "" {
		cmd = exec.Command(l.Exe, l.Args...)
	}
	cmd.Dir = dir
	cmd.Stdin = devnull
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), l.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, proc{}, fmt.Errorf("start %s: %w", name, err)
	}
	st, err := procStartTime(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, proc{}, fmt.Errorf("start %s: %w", name, err)
	}
	p := proc{name: name, pid: cmd.Process.Pid, start: st}
	if err := appendPid(dir, p); err != nil {
		_ = cmd.Process.Kill()
		return nil, proc{}, err
	}
	return cmd, p, nil
}
