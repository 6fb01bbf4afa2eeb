// Command render prints the manifests of a Helm chart the way `helm template` does, using the
// Helm Go module, because no helm binary is packaged in the registries tidepool builds from.
//
//	render --chart deploy/helm/tidepool [--name tidepool] [--namespace kube-system] \
//	       [-f values.yaml ...] [--set key=value ...] > tidepool.yaml
//
// Documents come in Helm's install order (namespaces, RBAC, config, workloads), each preceded
// by "# Source: <chart>/templates/<file>". NOTES.txt and files starting with "_" are skipped.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "render: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	chartDir := flag.String("chart", "", "chart directory (required)")
	name := flag.String("name", "tidepool", "release name")
	namespace := flag.String("namespace", "kube-system", "release namespace")
	var valueFiles, sets listFlag
	flag.Var(&valueFiles, "f", "values file (repeatable; later files win)")
	flag.Var(&sets, "set", "key=value override (repeatable; applied after -f)")
	flag.Parse()
	if *chartDir == "" || flag.NArg() != 0 {
		flag.Usage()
		return fmt.Errorf("--chart is required and no positional arguments are accepted")
	}

	chrt, err := loader.Load(*chartDir)
	if err != nil {
		return fmt.Errorf("loading chart %s: %w", *chartDir, err)
	}

	overrides := map[string]interface{}{}
	for _, f := range valueFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		m := map[string]interface{}{}
		if err := yaml.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("values file %s: %w", f, err)
		}
		overrides = chartutil.CoalesceTables(m, overrides)
	}
	for _, s := range sets {
		if err := strvals.ParseInto(s, overrides); err != nil {
			return fmt.Errorf("--set %s: %w", s, err)
		}
	}

	if err := chartutil.ProcessDependencies(chrt, overrides); err != nil {
		return err
	}
	caps := chartutil.DefaultCapabilities
	vals, err := chartutil.ToRenderValues(chrt, overrides, chartutil.ReleaseOptions{
		Name: *name, Namespace: *namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return err
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return err
	}

	// Keep only manifests, drop notes and partials; SortManifests splits multi-document files
	// and orders by kind the way `helm install` and `helm template` do.
	for k := range files {
		base := path.Base(k)
		if strings.HasSuffix(k, "NOTES.txt") || strings.HasPrefix(base, "_") {
			delete(files, k)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return err
	}
	// Within a kind SortManifests keeps map order, which varies from run to run; order equal
	// kinds by file name, then content, so the output is byte-for-byte reproducible.
	rank := func(kind string) int {
		for i, k := range releaseutil.InstallOrder {
			if k == kind {
				return i
			}
		}
		return len(releaseutil.InstallOrder)
	}
	sort.SliceStable(manifests, func(i, j int) bool {
		a, b := manifests[i], manifests[j]
		ra, rb := rank(a.Head.Kind), rank(b.Head.Kind)
		if ra != rb {
			return ra < rb
		}
		if a.Head.Kind != b.Head.Kind {
			return a.Head.Kind < b.Head.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Content < b.Content
	})
	var out bytes.Buffer
	for _, m := range manifests {
		content := strings.TrimSpace(m.Content)
		if content == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", m.Name, content)
	}
	_, err = os.Stdout.Write(out.Bytes())
	return err
}
