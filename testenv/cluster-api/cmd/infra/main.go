// Command infra is testenv's minimal Cluster API provider: an infrastructure
// provider whose machines are kwok Nodes in the same API server, and a no-op
// control plane provider for a cluster that already runs (the management
// cluster is the workload cluster).
//
//   - TestenvMachine: gets spec.providerID testenv://<namespace>/<name> and
//     status.initialization.provisioned at once (the "VM" exists); its Node,
//     annotated for kwok, named after it and carrying that providerID, the
//     capacity, labels and taints of its spec, appears spec.bootDelay (default
//     --boot-delay) after the TestenvMachine was created (the kubelet joins).
//     Deleting it deletes the Node. With spec.failureReason it fails instead: status.failureReason
//     and failureMessage are set (Cluster API marks the Machine failed) and no Node appears.
//   - TestenvMachineTemplate: status.capacity and status.nodeInfo from the
//     template, for autoscaling from zero.
//   - TestenvCluster: status.initialization.provisioned.
//   - TestenvControlPlane: status.initialization.controlPlaneInitialized,
//     status.version, spec.controlPlaneEndpoint = the API server, and the
//     <cluster>-kubeconfig Secret Cluster API reads the workload cluster with.
//
// The objects are handled as unstructured: the CRDs in ../../crd are the
// schema.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	infraGroup   = "infrastructure.testenv.tidepool.dev"
	cpGroup      = "controlplane.testenv.tidepool.dev"
	apiVersion   = "v1alpha1"
	finalizer    = infraGroup + "/node"
	providerIDs  = "testenv://"
	kwokNodeAnno = "kwok.x-k8s.io/node"
	clusterLabel = "cluster.x-k8s.io/cluster-name"
)

func gvk(group, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: apiVersion, Kind: kind}
}

type provider struct {
	c          client.Client
	bootDelay  time.Duration
	kubeconfig []byte // admin kubeconfig: what the <cluster>-kubeconfig Secrets hold
	host       string // API server host and port, for controlPlaneEndpoint
	port       int64
}

func main() {
	var healthAddr string
	var bootDelay time.Duration
	// controller-runtime registers --kubeconfig on the default flag set.
	flag.StringVar(&healthAddr, "health-addr", "127.0.0.1:0", "address of /healthz and /readyz")
	flag.DurationVar(&bootDelay, "boot-delay", 2*time.Second, "default time from a TestenvMachine's creation to its Node's (spec.bootDelay overrides it)")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	kubeconfig := ""
	if f := flag.Lookup("kubeconfig"); f != nil {
		kubeconfig = f.Value.String()
	}
	if err := run(kubeconfig, healthAddr, bootDelay); err != nil {
		fmt.Fprintln(os.Stderr, "testenv cluster-api infra:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, healthAddr string, bootDelay time.Duration) error {
	if kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required (the cluster's kubeconfig: management = workload cluster)")
	}
	if bootDelay < 0 {
		return fmt.Errorf("--boot-delay %v: want >= 0", bootDelay)
	}
	raw, err := os.ReadFile(kubeconfig)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", kubeconfig, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return fmt.Errorf("%s: server %q: %w", kubeconfig, cfg.Host, err)
	}
	host, portStr, err := net.SplitHostPort(u.Host)
	if err != nil {
		return fmt.Errorf("%s: server %q: %w", kubeconfig, cfg.Host, err)
	}
	port, _ := strconv.ParseInt(portStr, 10, 32)

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		HealthProbeBindAddress: healthAddr,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		LeaderElection:         false,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	p := &provider{c: mgr.GetClient(), bootDelay: bootDelay, kubeconfig: raw, host: host, port: port}
	for _, c := range []struct {
		gvk schema.GroupVersionKind
		r   func(context.Context, *unstructured.Unstructured) (reconcile.Result, error)
	}{
		{gvk(infraGroup, "TestenvMachine"), p.machine},
		{gvk(infraGroup, "TestenvMachineTemplate"), p.machineTemplate},
		{gvk(infraGroup, "TestenvCluster"), p.cluster},
		{gvk(cpGroup, "TestenvControlPlane"), p.controlPlane},
	} {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(c.gvk)
		if err := ctrl.NewControllerManagedBy(mgr).Named(c.gvk.Kind).For(obj).Complete(p.reconciler(c.gvk, c.r)); err != nil {
			return err
		}
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// reconciler fetches the object of a request and hands it to r.
func (p *provider) reconciler(k schema.GroupVersionKind, r func(context.Context, *unstructured.Unstructured) (reconcile.Result, error)) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(k)
		if err := p.c.Get(ctx, req.NamespacedName, obj); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		return r(ctx, obj)
	})
}

// setStatus writes obj's status to fields (merged over what is there) if
// that changes anything.
func (p *provider) setStatus(ctx context.Context, obj *unstructured.Unstructured, fields map[string]any) error {
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	changed := false
	for k, v := range fields {
		if !reflect.DeepEqual(status[k], v) {
			status[k] = v
			changed = true
		}
	}
	if !changed {
		return nil
	}
	obj.Object["status"] = status
	return p.c.Status().Update(ctx, obj)
}

func (p *provider) machine(ctx context.Context, m *unstructured.Unstructured) (reconcile.Result, error) {
	node := &corev1.Node{}
	node.Name = m.GetName()
	if m.GetDeletionTimestamp() != nil {
		if err := p.c.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		if controllerutil.RemoveFinalizer(m, finalizer) {
			return reconcile.Result{}, p.c.Update(ctx, m)
		}
		return reconcile.Result{}, nil
	}
	providerID := providerIDs + m.GetNamespace() + "/" + m.GetName()
	have, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
	if controllerutil.AddFinalizer(m, finalizer) || have != providerID {
		if have != "" && have != providerID {
			return reconcile.Result{}, fmt.Errorf("%s/%s: spec.providerID is %q, want %q", m.GetNamespace(), m.GetName(), have, providerID)
		}
		if err := unstructured.SetNestedField(m.Object, providerID, "spec", "providerID"); err != nil {
			return reconcile.Result{}, err
		}
		if err := p.c.Update(ctx, m); err != nil {
			return reconcile.Result{}, err
		}
	}
	if reason, _, _ := unstructured.NestedString(m.Object, "spec", "failureReason"); reason != "" {
		// A cloud that cannot provision the machine: Cluster API copies the failure to the
		// Machine (status.deprecated.v1beta1.failureReason, phase Failed); no Node ever appears.
		message, _, _ := unstructured.NestedString(m.Object, "spec", "failureMessage")
		return reconcile.Result{}, p.setStatus(ctx, m, map[string]any{
			"failureReason": reason, "failureMessage": message,
		})
	}
	if err := p.setStatus(ctx, m, map[string]any{
		"initialization": map[string]any{"provisioned": true},
		"addresses": []any{
			map[string]any{"type": "InternalIP", "address": "127.0.0.1"},
			map[string]any{"type": "Hostname", "address": m.GetName()},
		},
	}); err != nil {
		return reconcile.Result{}, err
	}

	delay := p.bootDelay
	if s, ok, _ := unstructured.NestedString(m.Object, "spec", "bootDelay"); ok {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return reconcile.Result{}, fmt.Errorf("%s/%s: spec.bootDelay %q: want a duration >= 0 such as 5s", m.GetNamespace(), m.GetName(), s)
		}
		delay = d
	}
	if wait := time.Until(m.GetCreationTimestamp().Add(delay)); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	err := p.c.Get(ctx, types.NamespacedName{Name: node.Name}, node)
	if err == nil || !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	node, err = nodeFor(m, providerID)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, client.IgnoreAlreadyExists(p.c.Create(ctx, node))
}

// nodeFor is the kwok Node of TestenvMachine m.
func nodeFor(m *unstructured.Unstructured, providerID string) (*corev1.Node, error) {
	name := m.GetName()
	where := m.GetNamespace() + "/" + name
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnno: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Spec: corev1.NodeSpec{ProviderID: providerID},
	}
	labels, _, err := unstructured.NestedStringMap(m.Object, "spec", "nodeLabels")
	if err != nil {
		return nil, fmt.Errorf("%s: spec.nodeLabels: %w", where, err)
	}
	for k, v := range labels {
		node.Labels[k] = v
	}
	capacity, _, err := unstructured.NestedMap(m.Object, "spec", "capacity")
	if err != nil {
		return nil, fmt.Errorf("%s: spec.capacity: %w", where, err)
	}
	if len(capacity) > 0 {
		node.Status.Capacity = corev1.ResourceList{}
		for k, v := range capacity {
			q, err := resource.ParseQuantity(fmt.Sprint(v))
			if err != nil {
				return nil, fmt.Errorf("%s: spec.capacity.%s %v: %w", where, k, v, err)
			}
			node.Status.Capacity[corev1.ResourceName(k)] = q
		}
		node.Status.Allocatable = node.Status.Capacity.DeepCopy()
	}
	taints, _, err := unstructured.NestedSlice(m.Object, "spec", "nodeTaints")
	if err != nil {
		return nil, fmt.Errorf("%s: spec.nodeTaints: %w", where, err)
	}
	for _, t := range taints {
		tm, _ := t.(map[string]any)
		key, _ := tm["key"].(string)
		value, _ := tm["value"].(string)
		effect, _ := tm["effect"].(string)
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)})
	}
	return node, nil
}

func (p *provider) machineTemplate(ctx context.Context, t *unstructured.Unstructured) (reconcile.Result, error) {
	capacity, _, _ := unstructured.NestedMap(t.Object, "spec", "template", "spec", "capacity")
	fields := map[string]any{"nodeInfo": map[string]any{"architecture": "amd64", "operatingSystem": "linux"}}
	if len(capacity) > 0 {
		fields["capacity"] = capacity
	}
	return reconcile.Result{}, p.setStatus(ctx, t, fields)
}

func (p *provider) cluster(ctx context.Context, c *unstructured.Unstructured) (reconcile.Result, error) {
	return reconcile.Result{}, p.setStatus(ctx, c, map[string]any{
		"initialization": map[string]any{"provisioned": true},
	})
}

// controlPlane reports the running API server as an initialized control
// plane and writes the kubeconfig Secret of the Cluster that owns it.
func (p *provider) controlPlane(ctx context.Context, cp *unstructured.Unstructured) (reconcile.Result, error) {
	endpoint := map[string]any{"host": p.host, "port": p.port}
	if have, _, _ := unstructured.NestedMap(cp.Object, "spec", "controlPlaneEndpoint"); !reflect.DeepEqual(have, endpoint) {
		if err := unstructured.SetNestedMap(cp.Object, endpoint, "spec", "controlPlaneEndpoint"); err != nil {
			return reconcile.Result{}, err
		}
		if err := p.c.Update(ctx, cp); err != nil {
			return reconcile.Result{}, err
		}
	}
	cluster := ""
	for _, o := range cp.GetOwnerReferences() {
		if o.Kind == "Cluster" {
			cluster = o.Name
		}
	}
	if cluster == "" {
		return reconcile.Result{}, nil // Cluster API sets the owner; that update brings us back
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: cluster + "-kubeconfig", Namespace: cp.GetNamespace(),
			Labels: map[string]string{clusterLabel: cluster}},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{"value": p.kubeconfig},
	}
	if err := p.c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, err
	}
	version, _, _ := unstructured.NestedString(cp.Object, "spec", "version")
	return reconcile.Result{}, p.setStatus(ctx, cp, map[string]any{
		"initialization": map[string]any{"controlPlaneInitialized": true},
		"version":        version,
	})
}
