# Sourced by testenv/build (uses its GO and gobuild): build_addon NAME builds
# the add-on of `testenv/up --with NAME` into bin/NAME/: the upstream
# controller manager from the pinned module in NAME/ (its own go.mod: its
# k8s.io/* versions differ from the control plane's), and the CRDs and webhook
# manifests that module ships, copied from the Go module cache so that bin/
# is self-contained.
#   kueue        bin/kueue/manager (sigs.k8s.io/kueue/cmd/kueue), crd/, webhook/,
#                provisioningrequest-crd/ (k8s.io/autoscaler/cluster-autoscaler/apis)
#   cluster-api  bin/cluster-api/manager (sigs.k8s.io/cluster-api/core), crd/, webhook/,
#                bin/cluster-api/infra (testenv's own provider, cluster-api/cmd/infra)

# addon_module DIR MODULE FIELD: the module's Version or Dir (in the module
# cache) in DIR's build list.
addon_module() { (cd "$here/$1" && "$GO" list -mod=readonly -m -f "{{.$3}}" "$2"); }

# addon_manifests NAME SRC DEST: copy a directory of the module cache (read-only
# there) to bin/NAME/DEST.
addon_manifests() {
  rm -rf "${here:?}/bin/$1/$3"
  cp -R "$2" "$here/bin/$1/$3"
  chmod -R u+w "$here/bin/$1/$3"
}

build_addon() {
  local ld="${TESTENV_LDFLAGS--s -w}" v mm dir
  mkdir -p "$here/bin/$1"
  case "$1" in
    kueue)
      v="$(addon_module kueue sigs.k8s.io/kueue Version)"
      gobuild kueue/manager kueue -ldflags="$ld -X sigs.k8s.io/kueue/pkg/version.GitVersion=$v" sigs.k8s.io/kueue/cmd/kueue
      dir="$(addon_module kueue sigs.k8s.io/kueue Dir)"
      addon_manifests kueue "$dir/config/components/crd" crd
      addon_manifests kueue "$dir/config/components/webhook" webhook
      addon_manifests kueue "$(addon_module kueue k8s.io/autoscaler/cluster-autoscaler/apis Dir)/config/crd" \
        provisioningrequest-crd
      ;;
    cluster-api)
      v="$(addon_module cluster-api sigs.k8s.io/cluster-api Version)"
      mm="${v#v}"
      gobuild cluster-api/manager cluster-api -ldflags="$ld -X sigs.k8s.io/cluster-api/version.gitVersion=$v \
-X sigs.k8s.io/cluster-api/version.gitMajor=${mm%%.*} -X sigs.k8s.io/cluster-api/version.gitMinor=$(cut -d. -f2 <<<"$mm")" \
        sigs.k8s.io/cluster-api/core
      gobuild cluster-api/infra cluster-api -ldflags="$ld" ./cmd/infra
      dir="$(addon_module cluster-api sigs.k8s.io/cluster-api Dir)"
      addon_manifests cluster-api "$dir/core/config/crd" crd
      addon_manifests cluster-api "$dir/core/config/webhook" webhook
      ;;
    *)
      echo "testenv/build: no build for add-on '$1'" >&2
      return 2
      ;;
  esac
}
