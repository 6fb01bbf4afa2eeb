package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kwokmetrics "sigs.k8s.io/kwok/kustomize/metrics/resource"
	kwokusage "sigs.k8s.io/kwok/kustomize/metrics/usage"
)

// "up --with metrics": the resource metrics API (metrics.k8s.io), as the HPA
// controller in kube-controller-manager reads it.
//
//   - kwok emulates each node's kubelet /metrics/resource: kwok's own Metric
//     (its module's kustomize/metrics/resource) served at
//     /metrics/nodes/<node>/metrics/resource on kwok's port, over TLS with a
//     certificate from testenv's CA, and kwok's ClusterResourceUsage
//     "usage-from-annotation" (kustomize/metrics/usage): a container uses the
//     CPU and memory in its pod's annotations kwok.x-k8s.io/usage-cpu and
//     kwok.x-k8s.io/usage-memory (default 1m and 1Mi). Both are passed as
//     --config files, as is the Stage kwok/metrics/node-metrics-endpoint.yaml,
//     which gives every managed node the annotation
//     metrics.k8s.io/resource-metrics-path and kwok's port as its kubelet port.
//   - metrics-server (bin/metrics-server, its own module in
//     testenv/metrics-server) scrapes those endpoints every 10 s and serves
//     metrics.k8s.io/v1beta1 on 127.0.0.1; the APIService
//     v1beta1.metrics.k8s.io points kube-apiserver's aggregator at it through
//     the ExternalName Service kube-system/metrics-server (a ClusterIP would
//     never be reachable here), with testenv's CA as its caBundle.
const (
	metricsServerName    = "metrics-server"
	metricsResolution    = "10s"
	metricsAPIService    = "v1beta1.metrics.k8s.io"
	metricsServingCert   = "metrics-server-serving"
	metricsClientCert    = "metrics-server-client"
	kwokServingCert      = "kwok-serving"
	metricsAddonStageDir = "metrics"
)

func init() {
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	registerAddon("metrics", &addon{
		certs: []certSpec{
			// The aggregator checks the name <service>.<namespace>.svc.
			{name: metricsServingCert, cn: metricsServerName, server: true, ips: loopback,
				dns: []string{"localhost", "metrics-server.kube-system.svc"}},
			// As kwokctl runs it: with cluster-admin rights (nodes, pods, the
			// extension-apiserver-authentication ConfigMap, token and access reviews).
			{name: metricsClientCert, cn: "system:metrics-server", orgs: []string{"system:masters"}, client: true},
			// kwok's server plays every kubelet at the nodes' InternalIP 127.0.0.1.
			{name: kwokServingCert, cn: "kwok", server: true, ips: loopback, dns: []string{"localhost"}},
		},
		kwokArgs: metricsKwokArgs,
		start:    startMetricsServer,
	})
}

func metricsKwokArgs(u *upper) ([]string, error) {
	dir := u.path("kwok-metrics")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{
		"metrics-resource.yaml":      kwokmetrics.DefaultMetricsResource,
		"usage-from-annotation.yaml": kwokusage.DefaultUsageFromAnnotation,
	}
	args := []string{
		"--tls-cert-file=" + u.pki.path(kwokServingCert+".crt"),
		"--tls-private-key-file=" + u.pki.path(kwokServingCert+".key"),
		fmt.Sprintf("--node-port=%d", u.ports.kwok),
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "--config="+p)
	}
	stages, err := filepath.Glob(filepath.Join(u.opt.stagesDir, metricsAddonStageDir, "*.yaml"))
	if err != nil || len(stages) == 0 {
		return nil, fmt.Errorf("no kwok stage files in %s", filepath.Join(u.opt.stagesDir, metricsAddonStageDir))
	}
	for _, s := range stages {
		args = append(args, "--config="+s)
	}
	return args, nil
}

func startMetricsServer(ctx context.Context, u *upper, admin string) error {
	exe, err := u.addonBinary(metricsServerName)
	if err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	port := ports[0]
	kubeconfig := u.path("kubeconfig", metricsServerName+".kubeconfig")
	apiURL := fmt.Sprintf("https://127.0.0.1:%d", u.ports.apiserver)
	if err := u.pki.kubeconfig(kubeconfig, apiURL, "system:metrics-server", metricsClientCert); err != nil {
		return err
	}
	p := u.pki.path
	if err := u.spawnExe(metricsServerName, exe, nil,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file="+p(metricsServingCert+".crt"),
		"--tls-private-key-file="+p(metricsServingCert+".key"),
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		// Each kwok node: InternalIP 127.0.0.1, kubelet port from its status
		// (kwok's port, set by the node-metrics-endpoint Stage), path from its
		// annotation; kwok's certificate is from testenv's CA.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-use-node-status-port",
		fmt.Sprintf("--kubelet-port=%d", u.ports.kwok),
		"--kubelet-certificate-authority="+p("ca.crt"),
		"--metric-resolution="+metricsResolution,
		"--kubelet-request-timeout=5s",
		fmt.Sprintf("--v=%d", u.opt.verbosity),
	); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(p("ca.crt"))
	if err != nil {
		return err
	}
	if err := registerMetricsAPI(ctx, cs, dyn, port, caPEM); err != nil {
		return err
	}
	return u.waitAPIServiceAvailable(ctx, dyn, metricsAPIService)
}

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// registerMetricsAPI creates the Service and the APIService that send
// metrics.k8s.io to metrics-server on 127.0.0.1:port.
func registerMetricsAPI(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, port int, caPEM []byte) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: metricsServerName, Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": metricsServerName}},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "127.0.0.1",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := cs.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("service %s/%s: %w", metav1.NamespaceSystem, metricsServerName, err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": metricsAPIService, "labels": map[string]any{"k8s-app": metricsServerName}},
		"spec": map[string]any{
			"group":                "metrics.k8s.io",
			"version":              "v1beta1",
			"groupPriorityMinimum": int64(100),
			"versionPriority":      int64(100),
			"caBundle":             base64.StdEncoding.EncodeToString(caPEM),
			"service": map[string]any{
				"name": metricsServerName, "namespace": metav1.NamespaceSystem, "port": int64(port),
			},
		},
	}}
	if _, err := dyn.Resource(apiServiceGVR).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("APIService %s: %w", metricsAPIService, err)
	}
	return nil
}

// waitAPIServiceAvailable waits for the aggregator to mark the APIService
// Available (it reached the server behind it).
func (u *upper) waitAPIServiceAvailable(ctx context.Context, dyn dynamic.Interface, name string) error {
	t0 := time.Now()
	last := "not seen yet"
	for {
		obj, err := dyn.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] != "Available" {
					continue
				}
				if m["status"] == "True" {
					u.logf("APIService %s available (%.1fs)", name, time.Since(t0).Seconds())
					return nil
				}
				last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
			}
		} else {
			last = err.Error()
		}
		if err := u.pause(ctx, metricsServerName); err != nil {
			return fmt.Errorf("APIService %s not available: %w; last: %s", name, err, last)
		}
	}
}
