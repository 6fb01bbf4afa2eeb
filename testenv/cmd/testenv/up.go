package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Fixed, made-up address ranges. Nothing ever dials them: the service range
// only feeds ClusterIP allocation. Pod IPs come from a loopback range so that
// even an accidental apiserver proxy request stays on this machine.
const (
	serviceCIDR   = "10.96.0.0/16"
	serviceIP     = "10.96.0.1"
	podCIDR       = "127.64.0.0/16"
	kwokNodeIP    = "127.0.0.1"
	kwokSelector  = "kwok.x-k8s.io/node=fake"
	saIssuer      = "https://kubernetes.default.svc.cluster.local"
	clusterDomain = "cluster.local"
)

type upOptions struct {
	dir       string
	stagesDir string
	timeout   time.Duration
	verbosity int
	// apiserverArgs (--apiserver-arg, repeatable) are appended to
	// kube-apiserver's flags, after testenv's own, so one may override them.
	apiserverArgs stringList
	// controllerManagerArgs (--controller-manager-arg) likewise for
	// kube-controller-manager.
	controllerManagerArgs stringList
	// with: the add-ons to start beside the control plane (addons.go).
	with withList
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }

func (l *stringList) Set(v string) error {
	// One flag with its value, or kube-apiserver would take the flag after
	// it as the value: --apiserver-arg=--watch-cache=false.
	if !strings.HasPrefix(v, "--") || !strings.Contains(v, "=") {
		return fmt.Errorf("%q: want --name=value", v)
	}
	*l = append(*l, v)
	return nil
}

type ports struct {
	etcdClient, etcdPeer, apiserver, scheduler, controllerManager, kwok int
}

type upper struct {
	opt   upOptions
	self  string
	ports ports
	pki   *pki
	start time.Time
	procs []proc
	// exited is closed when the named child exits.
	exited map[string]chan struct{}
}

func (u *upper) logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "testenv: "+format+"\n", a...)
}

func (u *upper) path(elem ...string) string {
	return filepath.Join(append([]string{u.opt.dir}, elem...)...)
}

func runUp(args []string) int {
	// Output piped into something that quits early (| head) must not kill
	// "up" halfway; a failed write to stderr is harmless.
	signal.Ignore(syscall.SIGPIPE)
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	opt := upOptions{}
	fs.StringVar(&opt.dir, "dir", defaultDir(), "state directory (data, certs, logs, pids); env TESTENV_DIR")
	fs.StringVar(&opt.stagesDir, "stages", "", "directory with kwok Stage files (*.yaml); default: ../kwok next to the binary's bin/ directory")
	fs.DurationVar(&opt.timeout, "timeout", 180*time.Second, "give up if the cluster is not ready within this time")
	fs.IntVar(&opt.verbosity, "v", 1, "klog verbosity of the Kubernetes components")
	fs.Var(&opt.apiserverArgs, "apiserver-arg", "an extra kube-apiserver flag, `--name=value` (repeatable; after testenv's own, so it may override one)")
	fs.Var(&opt.controllerManagerArgs, "controller-manager-arg", "an extra kube-controller-manager flag, `--name=value` (repeatable, like --apiserver-arg)")
	fs.Var(&opt.with, "with", "start an add-on too: "+strings.Join(addonNames(), ", ")+" (repeatable or comma-separated)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	if opt.stagesDir == "" {
		opt.stagesDir = filepath.Join(filepath.Dir(filepath.Dir(self)), "kwok")
	}
	if abs, err := filepath.Abs(opt.dir); err == nil {
		opt.dir = abs
	}
	u := &upper{opt: opt, self: self, start: time.Now(), exited: map[string]chan struct{}{}}
	kubeconfig, err := u.run()
	if err != nil {
		u.logf("FAILED: %v", err)
		if len(u.procs) > 0 {
			stopProcs(u.procs, 10*time.Second, u.logf)
			_ = os.Remove(u.path(pidsFile))
			u.logf("stopped what was started; logs kept in %s", u.path("logs"))
		}
		return 1
	}
	u.logf("ready in %.1fs; stop with testenv/down", time.Since(u.start).Seconds())
	// The kubeconfig path is the last line, and the only one on stdout:
	// KUBECONFIG=$(testenv/up) works.
	fmt.Println(kubeconfig)
	return 0
}

func (u *upper) run() (string, error) {
	if err := u.claimDir(); err != nil {
		return "", err
	}
	stages, err := filepath.Glob(filepath.Join(u.opt.stagesDir, "*.yaml"))
	if err != nil || len(stages) == 0 {
		return "", fmt.Errorf("no kwok stage files (*.yaml) in %s", u.opt.stagesDir)
	}
	sort.Strings(stages)

	// Ctrl-C or SIGTERM while starting: stop the children, keep logs.
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, u.opt.timeout)
	defer cancelTimeout()

	u.logf("state dir %s", u.opt.dir)
	u.logf("logs in %s", u.path("logs"))
	for _, d := range []string{"logs", "etcd", "kubeconfig", "home"} {
		if err := os.MkdirAll(u.path(d), 0o755); err != nil {
			return "", err
		}
	}
	if err := u.pickPorts(); err != nil {
		return "", err
	}
	if err := u.writeCerts(); err != nil {
		return "", fmt.Errorf("certificates: %w", err)
	}

	// etcd
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", u.ports.etcdClient)
	if err := u.spawn("etcd", nil,
		"--data-dir="+u.path("etcd"),
		"--listen-client-url="+etcdURL,
		fmt.Sprintf("--listen-peer-url=http://127.0.0.1:%d", u.ports.etcdPeer),
	); err != nil {
		return "", err
	}
	plain := &http.Client{Timeout: 2 * time.Second}
	if err := u.waitHTTP(ctx, "etcd", plain, etcdURL+"/health", `"health":"true"`); err != nil {
		return "", err
	}

	// kube-apiserver
	apiURL := fmt.Sprintf("https://127.0.0.1:%d", u.ports.apiserver)
	p := u.pki.path
	if len(u.opt.apiserverArgs) > 0 {
		u.logf("extra kube-apiserver flags: %s", u.opt.apiserverArgs.String())
	}
	if len(u.opt.controllerManagerArgs) > 0 {
		u.logf("extra kube-controller-manager flags: %s", u.opt.controllerManagerArgs.String())
	}
	if err := u.spawn("kube-apiserver", nil,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", u.ports.apiserver),
		"--cert-dir="+u.path("pki", "apiserver-generated"),
		"--tls-cert-file="+p("apiserver.crt"),
		"--tls-private-key-file="+p("apiserver.key"),
		"--client-ca-file="+p("ca.crt"),
		// Front proxy (request-header authentication): the scheduler and
		// controller-manager read this CA from the
		// extension-apiserver-authentication ConfigMap, and log errors
		// without it.
		"--requestheader-client-ca-file="+p("front-proxy/ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+p("front-proxy/front-proxy-client.crt"),
		"--proxy-client-key-file="+p("front-proxy/front-proxy-client.key"),
		"--kubelet-client-certificate="+p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p("apiserver-kubelet-client.key"),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--service-account-issuer="+saIssuer,
		"--service-account-key-file="+p("sa.pub"),
		"--service-account-signing-key-file="+p("sa.key"),
		"--service-cluster-ip-range="+serviceCIDR,
		// The "kubernetes" Service would get 127.0.0.1 as its endpoint,
		// which EndpointSlice validation refuses; nothing in-cluster needs it.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		fmt.Sprintf("--v=%d", u.opt.verbosity),
	); err != nil {
		return "", err
	}
	adminClient, err := u.tlsClient("admin")
	if err != nil {
		return "", err
	}
	if err := u.waitHTTP(ctx, "kube-apiserver", adminClient, apiURL+"/readyz", "ok"); err != nil {
		return "", err
	}

	// kubeconfigs for the clients
	kc := func(name string) string { return u.path("kubeconfig", name+".kubeconfig") }
	admin := u.path("admin.kubeconfig")
	for _, k := range []struct{ path, user, cert string }{
		{admin, "admin", "admin"},
		{kc("kube-scheduler"), "system:kube-scheduler", "kube-scheduler-client"},
		{kc("kube-controller-manager"), "system:kube-controller-manager", "kube-controller-manager-client"},
		{kc("kwok"), "kwok", "kwok-client"},
	} {
		if err := u.pki.kubeconfig(k.path, apiURL, k.user, k.cert); err != nil {
			return "", err
		}
	}

	// kube-scheduler, kube-controller-manager and kwok, side by side.
	schedConfig := u.path("kube-scheduler-config.yaml")
	if err := os.WriteFile(schedConfig, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: false
`, kc("kube-scheduler"))), 0o644); err != nil {
		return "", err
	}
	serving := func(name string) []string {
		return []string{
			"--bind-address=127.0.0.1",
			"--tls-cert-file=" + p(name+"-serving.crt"),
			"--tls-private-key-file=" + p(name+"-serving.key"),
			"--client-ca-file=" + p("ca.crt"),
			"--authentication-kubeconfig=" + kc(name),
			"--authorization-kubeconfig=" + kc(name),
		}
	}
	if err := u.spawn("kube-scheduler", nil, append(serving("kube-scheduler"),
		"--config="+schedConfig,
		fmt.Sprintf("--secure-port=%d", u.ports.scheduler),
		fmt.Sprintf("--v=%d", u.opt.verbosity),
	)...); err != nil {
		return "", err
	}
	if err := u.spawn("kube-controller-manager", nil, append(serving("kube-controller-manager"),
		"--kubeconfig="+kc("kube-controller-manager"),
		fmt.Sprintf("--secure-port=%d", u.ports.controllerManager),
		"--leader-elect=false",
		"--controllers=*",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+p("sa.key"),
		"--root-ca-file="+p("ca.crt"),
		"--cluster-signing-cert-file="+p("ca.crt"),
		"--cluster-signing-key-file="+p("ca.key"),
		"--cluster-name=tidepool-testenv",
		"--profiling=false",
		fmt.Sprintf("--v=%d", u.opt.verbosity),
	)...); err != nil {
		return "", err
	}
	kwokArgs := []string{
		"--kubeconfig=" + kc("kwok"),
		"--manage-nodes-with-annotation-selector=" + kwokSelector,
		"--node-ip=" + kwokNodeIP,
		"--cidr=" + podCIDR,
		fmt.Sprintf("--server-address=127.0.0.1:%d", u.ports.kwok),
		"--node-lease-duration-seconds=40",
	}
	for _, s := range stages {
		kwokArgs = append(kwokArgs, "--config="+s)
	}
	extra, err := u.addonKwokArgs()
	if err != nil {
		return "", err
	}
	kwokArgs = append(kwokArgs, extra...)
	// kwok also reads ~/.kwok/kwok.yaml if it exists; give it an empty home.
	if err := u.spawn("kwok", []string{"HOME=" + u.path("home")}, kwokArgs...); err != nil {
		return "", err
	}

	caPool := x509.NewCertPool()
	caPEM, err := os.ReadFile(p("ca.crt"))
	if err != nil {
		return "", err
	}
	caPool.AppendCertsFromPEM(caPEM)
	verified := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: caPool, ServerName: "127.0.0.1"},
	}}
	if err := u.waitHTTP(ctx, "kube-scheduler", verified, fmt.Sprintf("https://127.0.0.1:%d/healthz", u.ports.scheduler), "ok"); err != nil {
		return "", err
	}
	if err := u.waitHTTP(ctx, "kube-controller-manager", verified, fmt.Sprintf("https://127.0.0.1:%d/healthz", u.ports.controllerManager), "ok"); err != nil {
		return "", err
	}
	if err := u.waitHTTP(ctx, "kwok", plain, fmt.Sprintf("http://127.0.0.1:%d/healthz", u.ports.kwok), "ok"); err != nil {
		return "", err
	}
	// Pods can only be created once the namespace has its "default"
	// ServiceAccount (serviceaccount controller) and kube-root-ca.crt
	// (root CA publisher): wait for both, proving the controllers run.
	if err := u.waitDefaultNamespace(ctx, admin); err != nil {
		return "", err
	}
	if err := u.startAddons(ctx, admin); err != nil {
		return "", err
	}

	env := fmt.Sprintf("KUBECONFIG=%s\nTESTENV_DIR=%s\nTESTENV_APISERVER=%s\nTESTENV_ETCD=%s\nTESTENV_CA=%s\nTESTENV_LOGS=%s\n",
		admin, u.opt.dir, apiURL, etcdURL, p("ca.crt"), u.path("logs"))
	if err := os.WriteFile(u.path("env"), []byte(env), 0o644); err != nil {
		return "", err
	}
	u.logf("kube-apiserver %s (etcd %s, kube-scheduler :%d, kube-controller-manager :%d, kwok :%d)",
		apiURL, etcdURL, u.ports.scheduler, u.ports.controllerManager, u.ports.kwok)
	u.logf("endpoints also in %s", u.path("env"))
	return admin, nil
}

// claimDir makes u.opt.dir ours: refuses if a previous "up" is still running
// there, cleans it if what it recorded is dead (stale state).
func (u *upper) claimDir() error {
	d := u.opt.dir
	if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(d, 0o755); err != nil {
		if !errors.Is(err, os.ErrExist) {
			return err
		}
		if _, err := os.Stat(filepath.Join(d, markerFile)); err != nil {
			if entries, _ := os.ReadDir(d); len(entries) > 0 {
				return fmt.Errorf("%s exists and is not a testenv state directory (no %s); choose another TESTENV_DIR", d, markerFile)
			}
		}
		ps, _ := readPids(d)
		var running []string
		for _, p := range ps {
			if p.alive() {
				running = append(running, fmt.Sprintf("%s pid %d", p.name, p.pid))
			}
		}
		if len(running) > 0 {
			return fmt.Errorf("a testenv cluster is already running in %s (%s); run testenv/down first",
				d, strings.Join(running, ", "))
		}
		u.logf("removing stale state in %s (its processes are gone)", d)
		if err := removeStateDir(d); err != nil {
			return err
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("%s: %w (another testenv/up running?)", d, err)
		}
	}
	return os.WriteFile(filepath.Join(d, markerFile), []byte("state of a tidepool testenv cluster; testenv/down removes it\n"), 0o644)
}

func (u *upper) pickPorts() error {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	next := func() (int, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		ls = append(ls, l)
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	for _, p := range []*int{&u.ports.etcdClient, &u.ports.etcdPeer, &u.ports.apiserver,
		&u.ports.scheduler, &u.ports.controllerManager, &u.ports.kwok} {
		n, err := next()
		if err != nil {
			return err
		}
		*p = n
	}
	return nil
}

func (u *upper) writeCerts() error {
	p, err := newPKI(u.path("pki"), "tidepool-testenv-ca")
	if err != nil {
		return err
	}
	u.pki = p
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	specs := []certSpec{
		{name: "apiserver", cn: "kube-apiserver", server: true,
			ips: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc." + clusterDomain}},
		{name: "admin", cn: "kubernetes-admin", orgs: []string{"system:masters"}, client: true},
		{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}, client: true},
		{name: "kube-scheduler-client", cn: "system:kube-scheduler", client: true},
		{name: "kube-controller-manager-client", cn: "system:kube-controller-manager", client: true},
		// kwok plays every kubelet; it needs to write any node and pod status.
		{name: "kwok-client", cn: "kwok", orgs: []string{"system:masters"}, client: true},
		{name: "kube-scheduler-serving", cn: "kube-scheduler", server: true, ips: loopback, dns: []string{"localhost"}},
		{name: "kube-controller-manager-serving", cn: "kube-controller-manager", server: true, ips: loopback, dns: []string{"localhost"}},
	}
	specs = append(specs, u.addonCerts()...)
	for _, s := range specs {
		if err := p.issue(s); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	if err := p.serviceAccountKeys(); err != nil {
		return err
	}
	// A CA of its own for the front proxy, as kubeadm does: a client
	// certificate from the main CA must not be able to pose as the proxy.
	fp, err := newPKI(u.path("pki", "front-proxy"), "tidepool-testenv-front-proxy-ca")
	if err != nil {
		return err
	}
	return fp.issue(certSpec{name: "front-proxy-client", cn: "front-proxy-client", client: true})
}

// spawn starts "<self> <name> args..." in its own session (so it outlives
// "up" and gets no terminal signals), output to logs/<name>.log, and records
// its pid.
func (u *upper) spawn(name string, extraEnv []string, args ...string) error {
	// Recorded with the others in launch/, so "restart" keeps them.
	switch name {
	case "kube-apiserver":
		args = append(args, u.opt.apiserverArgs...)
	case "kube-controller-manager":
		args = append(args, u.opt.controllerManagerArgs...)
	}
	return u.spawnExe(name, "", extraEnv, args...)
}

// spawnExe is spawn for a program other than this binary (exe "": this one).
func (u *upper) spawnExe(name, exe string, extraEnv []string, args ...string) error {
	l := launch{Args: args, Env: extraEnv, Exe: exe}
	cmd, p, err := startComponent(u.self, u.opt.dir, name, l, "")
	if err != nil {
		return err
	}
	if err := writeLaunch(u.opt.dir, name, l); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	u.procs = append(u.procs, p)
	done := make(chan struct{})
	u.exited[name] = done
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	u.logf("started %s (pid %d)", name, p.pid)
	return nil
}

func (u *upper) tlsClient(cert string) (*http.Client, error) {
	pair, err := tls.LoadX509KeyPair(u.pki.path(cert+".crt"), u.pki.path(cert+".key"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(u.pki.caCert)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}},
	}}, nil
}

// waitHTTP polls url until it answers 200 with a body containing want.
func (u *upper) waitHTTP(ctx context.Context, name string, c *http.Client, url, want string) error {
	t0 := time.Now()
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(want)) {
				u.logf("%s ready (%.1fs)", name, time.Since(t0).Seconds())
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, firstLines(string(body), 12))
		} else {
			last = err.Error()
		}
		if err := u.pause(ctx, name); err != nil {
			return fmt.Errorf("%s not ready at %s: %w; last answer: %s", name, url, err, last)
		}
	}
}

func (u *upper) waitDefaultNamespace(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	t0 := time.Now()
	for {
		_, err1 := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		_, err2 := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err1 == nil && err2 == nil {
			u.logf("namespace default has its ServiceAccount and kube-root-ca.crt (%.1fs)", time.Since(t0).Seconds())
			return nil
		}
		for _, e := range []error{err1, err2} {
			if e != nil && !apierrors.IsNotFound(e) && ctx.Err() == nil {
				u.logf("waiting for namespace default: %v", e)
			}
		}
		if err := u.pause(ctx, "kube-controller-manager"); err != nil {
			return fmt.Errorf("namespace default not set up by kube-controller-manager: %w (sa: %v, configmap: %v)", err, err1, err2)
		}
	}
}

// pause waits a little; it fails if the context ends or any child exited.
func (u *upper) pause(ctx context.Context, waitingFor string) error {
	select {
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			u.showLog(waitingFor)
			return fmt.Errorf("timed out after %v", u.opt.timeout)
		}
		return errors.New("interrupted")
	case <-time.After(200 * time.Millisecond):
	}
	for name, ch := range u.exited {
		select {
		case <-ch:
			u.showLog(name)
			return fmt.Errorf("%s exited (log: %s)", name, u.path("logs", name+".log"))
		default:
		}
	}
	return nil
}

func (u *upper) showLog(name string) {
	b, err := os.ReadFile(u.path("logs", name+".log"))
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	u.logf("last lines of %s:", u.path("logs", name+".log"))
	for _, l := range lines {
		fmt.Fprintln(os.Stderr, "    "+l)
	}
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, " | ")
}
