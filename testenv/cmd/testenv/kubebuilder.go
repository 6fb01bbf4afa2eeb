package main

// Helpers of the add-ons built from kubebuilder-style controller managers
// (Kueue, Cluster API): an upstream manager built as a binary of its own (its
// own Go module, because its k8s.io/* versions differ from the control
// plane's) into bin/<name>/manager by "build-addon NAME", next to the CRDs and
// webhook manifests it ships (copied there from the Go module cache by the
// same script).
//
// Such a manager ships crd/kustomization.yaml, listing the CRDs and the
// patches that turn on conversion webhooks, and webhook/manifests.yaml, its
// admission webhook configurations. installKubebuilder applies them with
// every webhook Service reference turned into a URL on 127.0.0.1 and the
// caBundle of testenv's CA: nothing here can reach a Service.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

var (
	gvrCRD       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrMutating  = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	gvrValidting = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	gvrNamespace = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// kbEnv is what a kubebuilder add-on's start function works with.
type kbEnv struct {
	dyn         dynamic.Interface
	admin       string // admin kubeconfig path
	caPEM       []byte
	binDir      string // bin/<name>/: the manager binary and its manifests
	stateDir    string // <state>/<name>/: its config and certificates
	certDir     string // <state>/<name>/certs: tls.crt, tls.key of its webhook server
	webhookPort int
	ports       []int // more free ports on 127.0.0.1, as many as asked for
	verbosity   int
}

var plainHTTP = http.Client{Timeout: 2 * time.Second}

// newKBEnv checks that bin/<name>/manager is built, picks the webhook port
// and morePorts others, and issues the webhook server's certificate (for
// 127.0.0.1, from testenv's CA) into certDir, under the names
// controller-runtime expects.
func (u *upper) newKBEnv(name, admin string, morePorts int) (kbEnv, error) {
	e := kbEnv{admin: admin, binDir: filepath.Join(filepath.Dir(u.self), name),
		stateDir: u.path(name), certDir: u.path(name, "certs"), verbosity: u.opt.verbosity}
	if _, err := os.Stat(filepath.Join(e.binDir, "manager")); err != nil {
		return e, fmt.Errorf("%s is not built (run testenv/build --with %s): %w", filepath.Join(e.binDir, "manager"), name, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		return e, err
	}
	if e.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return e, err
	}
	if e.caPEM, err = os.ReadFile(u.pki.path("ca.crt")); err != nil {
		return e, err
	}
	ports, err := freePorts(1 + morePorts)
	if err != nil {
		return e, err
	}
	e.webhookPort, e.ports = ports[0], ports[1:]
	if err := os.MkdirAll(e.certDir, 0o700); err != nil {
		return e, err
	}
	p := &pki{dir: e.certDir, caCert: u.pki.caCert, caKey: u.pki.caKey}
	if err := p.issue(certSpec{name: "tls", cn: name + "-webhook", server: true,
		ips: []net.IP{net.ParseIP("127.0.0.1")}, dns: []string{"localhost"}}); err != nil {
		return e, fmt.Errorf("webhook certificate: %w", err)
	}
	return e, nil
}

// freePorts picks n free ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ps []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ps = append(ps, l.Addr().(*net.TCPAddr).Port)
	}
	return ps, nil
}

// readDocs reads every YAML document of a file as an object.
func readDocs(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// kustomization is the part of a kubebuilder kustomization.yaml used here:
// resources, and patches either in files (path) or inline (patch).
type kustomization struct {
	Resources []string `json:"resources"`
	Patches   []struct {
		Path  string `json:"path"`
		Patch string `json:"patch"`
	} `json:"patches"`
}

func readKustomization(dir string) (kustomization, error) {
	var k kustomization
	p := filepath.Join(dir, "kustomization.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		return k, err
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return k, fmt.Errorf("%s: %w", p, err)
	}
	if len(k.Resources) == 0 {
		return k, fmt.Errorf("%s lists no resources", p)
	}
	return k, nil
}

// installKubebuilder creates the CRDs listed in bin/<name>/crd/kustomization.yaml
// (with the conversion webhooks its patches enable) and the webhook
// configurations of bin/<name>/webhook/manifests.yaml (with the inline patches
// of the kustomization.yaml there; names prefixed with namePrefix, as the
// upstream kustomization does), all pointing at 127.0.0.1:e.webhookPort.
func installKubebuilder(ctx context.Context, e kbEnv, namePrefix string) error {
	crdDir, webhookDir := filepath.Join(e.binDir, "crd"), filepath.Join(e.binDir, "webhook")
	webhookURL := fmt.Sprintf("https://127.0.0.1:%d", e.webhookPort)
	k, err := readKustomization(crdDir)
	if err != nil {
		return err
	}
	clientConfig := func(path string) map[string]any {
		return map[string]any{"url": webhookURL + path, "caBundle": base64.StdEncoding.EncodeToString(e.caPEM)}
	}
	// Conversion webhooks: CRD name -> spec.conversion.
	conversion := map[string]map[string]any{}
	for _, p := range k.Patches {
		docs, err := readDocs(filepath.Join(crdDir, p.Path))
		if err != nil {
			return err
		}
		for _, d := range docs {
			conv, found, _ := unstructured.NestedMap(d.Object, "spec", "conversion")
			spec, _, _ := unstructured.NestedMap(d.Object, "spec")
			if !found || len(spec) != 1 {
				return fmt.Errorf("%s: only patches that set spec.conversion are understood", p.Path)
			}
			path, _, _ := unstructured.NestedString(conv, "webhook", "clientConfig", "service", "path")
			if path == "" {
				return fmt.Errorf("%s: conversion webhook without a service path", p.Path)
			}
			if err := unstructured.SetNestedField(conv, clientConfig(path), "webhook", "clientConfig"); err != nil {
				return err
			}
			conversion[d.GetName()] = conv
		}
	}
	var crds []*unstructured.Unstructured
	for _, r := range k.Resources {
		docs, err := readDocs(filepath.Join(crdDir, r))
		if err != nil {
			return err
		}
		crds = append(crds, docs...)
	}
	for _, c := range crds {
		if conv, ok := conversion[c.GetName()]; ok {
			if err := unstructured.SetNestedField(c.Object, conv, "spec", "conversion"); err != nil {
				return err
			}
			delete(conversion, c.GetName())
		}
	}
	if len(conversion) > 0 {
		return fmt.Errorf("conversion patches for CRDs not in %s: %v", crdDir, conversion)
	}
	if err := createCRDs(ctx, e.dyn, crds); err != nil {
		return err
	}

	wk, err := readKustomization(webhookDir)
	if err != nil {
		return err
	}
	webhookFile := filepath.Join(webhookDir, "manifests.yaml")
	hooks, err := readDocs(webhookFile)
	if err != nil {
		return err
	}
	// Inline patches: per webhook configuration and webhook name, the
	// fields to set (the namespaceSelectors Kueue adds, for instance).
	overlay := map[string]map[string]map[string]any{}
	for _, p := range wk.Patches {
		if p.Patch == "" {
			return fmt.Errorf("%s: only inline webhook patches are understood", filepath.Join(webhookDir, "kustomization.yaml"))
		}
		var doc unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(p.Patch), &doc.Object); err != nil {
			return fmt.Errorf("%s: patch: %w", filepath.Join(webhookDir, "kustomization.yaml"), err)
		}
		key := doc.GetKind() + "/" + doc.GetName()
		if overlay[key] == nil {
			overlay[key] = map[string]map[string]any{}
		}
		list, _, _ := unstructured.NestedSlice(doc.Object, "webhooks")
		for _, w := range list {
			wm, _ := w.(map[string]any)
			name, _ := wm["name"].(string)
			overlay[key][name] = wm
		}
	}
	for _, h := range hooks {
		gvr := gvrMutating
		switch h.GetKind() {
		case "MutatingWebhookConfiguration":
		case "ValidatingWebhookConfiguration":
			gvr = gvrValidting
		default:
			return fmt.Errorf("%s: unexpected kind %q", webhookFile, h.GetKind())
		}
		patches := overlay[h.GetKind()+"/"+h.GetName()]
		delete(overlay, h.GetKind()+"/"+h.GetName())
		h.SetName(namePrefix + h.GetName())
		list, _, _ := unstructured.NestedSlice(h.Object, "webhooks")
		for i, w := range list {
			wm := w.(map[string]any)
			path, _, _ := unstructured.NestedString(wm, "clientConfig", "service", "path")
			if path == "" {
				return fmt.Errorf("%s: webhook %v has no service path", webhookFile, wm["name"])
			}
			wm["clientConfig"] = clientConfig(path)
			name, _ := wm["name"].(string)
			for f, v := range patches[name] {
				wm[f] = v
			}
			delete(patches, name)
			list[i] = wm
		}
		if len(patches) > 0 {
			return fmt.Errorf("%s: patches for webhooks not in %s", filepath.Join(webhookDir, "kustomization.yaml"), h.GetName())
		}
		if err := unstructured.SetNestedSlice(h.Object, list, "webhooks"); err != nil {
			return err
		}
		if _, err := e.dyn.Resource(gvr).Create(ctx, h, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("%s %s: %w", h.GetKind(), h.GetName(), err)
		}
	}
	if len(overlay) > 0 {
		return fmt.Errorf("%s: patches for webhook configurations not in %s", filepath.Join(webhookDir, "kustomization.yaml"), webhookFile)
	}
	return nil
}

// createCRDs creates the CRDs and waits until each is Established.
func createCRDs(ctx context.Context, dyn dynamic.Interface, crds []*unstructured.Unstructured) error {
	for _, c := range crds {
		if c.GetKind() != "CustomResourceDefinition" {
			return fmt.Errorf("%s: want a CustomResourceDefinition, got %q", c.GetName(), c.GetKind())
		}
		if _, err := dyn.Resource(gvrCRD).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("CRD %s: %w", c.GetName(), err)
		}
	}
	for _, c := range crds {
		for {
			got, err := dyn.Resource(gvrCRD).Get(ctx, c.GetName(), metav1.GetOptions{})
			if err == nil && conditionTrue(got, "Established") {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not Established: %w", c.GetName(), ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func conditionTrue(o *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// crdFiles lists the *.yaml files of dir, sorted.
func crdFiles(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRD files (*.yaml) in %s", dir)
	}
	sort.Strings(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		docs, err := readDocs(f)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	return out, nil
}

func createNamespace(ctx context.Context, dyn dynamic.Interface, name string) error {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	_, err := dyn.Resource(gvrNamespace).Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// waitDryRun retries a server-side dry-run create of obj until it succeeds:
// the apiserver has reached the component's admission webhooks (and they
// accepted it).
func (u *upper) waitDryRun(ctx context.Context, name string, dyn dynamic.Interface, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	t0 := time.Now()
	ri := dyn.Resource(gvr)
	var r dynamic.ResourceInterface = ri
	if obj.GetNamespace() != "" {
		r = ri.Namespace(obj.GetNamespace())
	}
	for {
		_, err := r.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			u.logf("%s webhooks answer (%.1fs)", name, time.Since(t0).Seconds())
			return nil
		}
		if perr := u.pause(ctx, name); perr != nil {
			return fmt.Errorf("%s webhooks not reachable: %w; last error: %v", name, perr, err)
		}
	}
}

// bindOver runs the rest of this process (and what it execs) in a private
// mount namespace in which dir is mounted over target. For components that
// read files from a fixed absolute path.
func bindOver(dir, target string) error {
	// The namespace belongs to the calling thread; exec keeps it.
	runtime.LockOSThread()
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		return fmt.Errorf("a private mount namespace (needs root or CAP_SYS_ADMIN): %w", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("mount point %s: %w", target, err)
	}
	if err := syscall.Mount(dir, target, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s over %s: %w", dir, target, err)
	}
	return nil
}
