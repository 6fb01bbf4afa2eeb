package main

// "up --with kueue": Kueue's manager (sigs.k8s.io/kueue, built by
// "build-addon kueue" into bin/kueue/manager) with its CRDs and webhooks, the
// ProvisioningRequest CRD of k8s.io/autoscaler/cluster-autoscaler/apis (so
// Kueue's ProvisioningRequest admission check controller starts), and Kueue's
// own serving certificates issued by testenv's CA.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	kueueNamespace = "kueue-system"
	// Kueue reads the certificate of its metrics server from this fixed path
	// whenever its internal certificate management is off (which it must be:
	// that one issues certificates for a Service DNS name, never 127.0.0.1).
	kueueMetricsCertPath = "/etc/kueue/metrics/certs"
)

func init() {
	registerAddon("kueue", &addon{start: startKueue})
	subcommands["kueue"] = runKueue
}

func startKueue(ctx context.Context, u *upper, admin string) error {
	e, err := u.newKBEnv("kueue", admin, 1)
	if err != nil {
		return err
	}
	healthPort := e.ports[0]
	if err := createNamespace(ctx, e.dyn, kueueNamespace); err != nil {
		return err
	}
	if err := installKubebuilder(ctx, e, "kueue-"); err != nil {
		return err
	}
	// Kueue sets up its ProvisioningRequest controllers only if the API is
	// served when it starts.
	provreq, err := crdFiles(filepath.Join(e.binDir, "provisioningrequest-crd"))
	if err != nil {
		return err
	}
	if err := createCRDs(ctx, e.dyn, provreq); err != nil {
		return err
	}

	// Only the batch/job integration: the others need their own CRDs
	// (JobSet, Kubeflow, Ray, ...), which testenv does not install.
	config := filepath.Join(e.stateDir, "config.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %q
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
integrations:
  frameworks:
  - batch/job
`, kueueNamespace, healthPort, e.webhookPort, e.certDir)), 0o644); err != nil {
		return err
	}
	// VisibilityOnDemand off: its API server reads certificates from the
	// fixed path /visibility and would need an APIService; nothing here uses it.
	// "testenv kueue" (runKueue) execs bin/kueue/manager.
	if err := u.spawn("kueue", []string{"KUBECONFIG=" + e.admin},
		"--metrics-cert-dir="+e.certDir, "--",
		"--config="+config,
		"--feature-gates=VisibilityOnDemand=false",
	); err != nil {
		return err
	}
	if err := u.waitHTTP(ctx, "kueue", &plainHTTP, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), "ok"); err != nil {
		return err
	}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": "testenv-webhook-probe"}}}
	return u.waitDryRun(ctx, "kueue", e.dyn,
		schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}, probe)
}

// runKueue is the "kueue" subcommand: "--metrics-cert-dir=DIR -- KUEUE FLAGS".
// It mounts DIR over Kueue's fixed metrics certificate path in a mount
// namespace of its own (so clusters side by side never share it) and execs
// bin/kueue/manager.
func runKueue(args []string) int {
	if len(args) < 2 || !strings.HasPrefix(args[0], "--metrics-cert-dir=") || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "usage: testenv kueue --metrics-cert-dir=DIR -- [kueue manager flags]")
		return 2
	}
	if err := bindOver(strings.TrimPrefix(args[0], "--metrics-cert-dir="), kueueMetricsCertPath); err != nil {
		fmt.Fprintln(os.Stderr, "testenv kueue:", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv kueue:", err)
		return 1
	}
	// Exec, not a child: the pid testenv recorded stays Kueue's own.
	exe := filepath.Join(filepath.Dir(self), "kueue", "manager")
	err = syscall.Exec(exe, append([]string{exe}, args[2:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "testenv kueue: exec %s: %v\n", exe, err)
	return 1
}
