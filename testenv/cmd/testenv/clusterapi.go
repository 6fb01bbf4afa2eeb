package main

// "up --with cluster-api": the Cluster API core manager (sigs.k8s.io/cluster-api,
// built by "build-addon cluster-api" into bin/cluster-api/manager) with its
// CRDs and webhooks, and testenv's own minimal provider
// (bin/cluster-api/infra, source and CRDs in cluster-api/): TestenvMachines
// whose Nodes are kwok Nodes, and a no-op TestenvControlPlane for a cluster
// whose workload cluster is this same API server.

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func init() {
	registerAddon("cluster-api", &addon{start: startClusterAPI})
}

func startClusterAPI(ctx context.Context, u *upper, admin string) error {
	e, err := u.newKBEnv("cluster-api", admin, 3)
	if err != nil {
		return err
	}
	healthPort, diagPort, infraHealthPort := e.ports[0], e.ports[1], e.ports[2]
	if err := installKubebuilder(ctx, e, "capi-"); err != nil {
		return err
	}
	// testenv's provider: its CRDs live in the source tree, next to bin/.
	own, err := crdFiles(filepath.Join(filepath.Dir(filepath.Dir(u.self)), "cluster-api", "crd"))
	if err != nil {
		return err
	}
	if err := createCRDs(ctx, e.dyn, own); err != nil {
		return err
	}
	env := []string{"KUBECONFIG=" + e.admin}
	// The core manager's webhook server has no host flag: it listens on all
	// interfaces of this port (the only testenv port that does).
	if err := u.spawnExe("cluster-api", filepath.Join(e.binDir, "manager"), env,
		fmt.Sprintf("--webhook-port=%d", e.webhookPort),
		"--webhook-cert-dir="+e.certDir,
		fmt.Sprintf("--health-addr=127.0.0.1:%d", healthPort),
		fmt.Sprintf("--diagnostics-address=127.0.0.1:%d", diagPort),
		"--insecure-diagnostics",
		"--leader-elect=false",
		fmt.Sprintf("--v=%d", e.verbosity),
	); err != nil {
		return err
	}
	if err := u.spawnExe("cluster-api-infra", filepath.Join(e.binDir, "infra"), env,
		"--kubeconfig="+e.admin,
		fmt.Sprintf("--health-addr=127.0.0.1:%d", infraHealthPort),
	); err != nil {
		return err
	}
	if err := u.waitHTTP(ctx, "cluster-api", &plainHTTP, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), "ok"); err != nil {
		return err
	}
	if err := u.waitHTTP(ctx, "cluster-api-infra", &plainHTTP, fmt.Sprintf("http://127.0.0.1:%d/readyz", infraHealthPort), "ok"); err != nil {
		return err
	}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "testenv-webhook-probe", "namespace": "default"},
		"spec": map[string]any{"paused": true, "infrastructureRef": map[string]any{
			"apiGroup": "infrastructure.testenv.tidepool.dev", "kind": "TestenvCluster", "name": "testenv-webhook-probe"}}}}
	return u.waitDryRun(ctx, "cluster-api", e.dyn,
		schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}, probe)
}
