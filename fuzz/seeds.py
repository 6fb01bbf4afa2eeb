#!/usr/bin/env python3
"""Regenerates the seed corpora in fuzz/corpus/<target>/ from the project's test data.

Run from anywhere: `python3 fuzz/seeds.py`. It rewrites only the files it generates (named
seed-*); hand-written seeds and reproducers of findings (other names) are left alone. Sources:
  quantity  quoted strings of tests/model/quantity_test.cc, quantities in examples/ and scenarios
  duration  quoted strings of tests/base/time_test.cc, durations and timestamps in test data
  state     tests/scenarios/*/state.yaml, examples/seed/state.yaml, and the raw-string objects of
            tests/kube/codec_test.cc, documents_test.cc and dra_codec_test.cc
  config    tests/scenarios/*/config.yaml, examples/seed/config.yaml, tests/kube/testdata/config/
"""
import hashlib
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
MAX_FILE = 16 * 1024  # keep every seed small; libFuzzer's default -max_len follows the corpus


def write(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX_FILE:
        return
    path = CORPUS / target / f"seed-{name}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def short_hash(data):
    return hashlib.sha1(data.encode() if isinstance(data, str) else data).hexdigest()[:8]


def cpp_strings(path):
    """Ordinary "..." string literals of a C++ file (no escapes beyond \\" and \\\\)."""
    text = "\n".join(l for l in path.read_text().splitlines() if not l.startswith("#include"))
    return [s.replace('\\"', '"').replace("\\\\", "\\")
            for s in re.findall(r'(?<![R\w])"((?:[^"\\\n]|\\.)*)"', text)]


def cpp_raw_strings(path):
    return re.findall(r'R"\((.*?)\)"', path.read_text(), flags=re.S)


def clean():
    for f in CORPUS.glob("*/seed-*"):
        f.unlink()


def scalars_of(paths, key_re):
    """Values of YAML keys matching key_re, as written (quotes stripped)."""
    out = set()
    for p in paths:
        for m in re.finditer(r"(?:^|[\s{,])(" + key_re + r")\s*:\s*([^,}\n#]+)", p.read_text(),
                             flags=re.M):
            v = m.group(2).strip().strip("'\"")
            if v and not v.startswith(("{", "[", "&", "*")):
                out.add(v)
    return out


def main():
    clean()
    yaml_files = sorted({p.resolve() for p in ROOT.glob("tests/scenarios/*/*.yaml")} |
                        set(ROOT.glob("examples/seed/*.yaml")) |
                        set(ROOT.glob("tests/kube/testdata/**/*.yaml")))

    # quantity
    values = set(cpp_strings(ROOT / "tests/model/quantity_test.cc"))
    values |= scalars_of(yaml_files, r"cpu|memory|pods|ephemeral-storage|nvidia\.com/gpu")
    for v in sorted(values):
        if len(v) <= 64:
            write("quantity", short_hash(v), v)

    # duration (+ RFC 3339)
    values = set(cpp_strings(ROOT / "tests/base/time_test.cc"))
    values |= scalars_of(yaml_files, r"\w*(?:[Tt]ime|[Tt]imeout|[Dd]elay|[Ii]nterval|[Ii]dle|"
                                     r"[Mm]ax|[Ii]nitial|now|gpu-spot)")
    for v in sorted(values):
        if len(v) <= 64:
            write("duration", short_hash(v), v)

    # state
    seen = set()
    for p in sorted(ROOT.glob("tests/scenarios/*/state.yaml")) + [ROOT / "examples/seed/state.yaml"]:
        data = p.read_bytes()
        if data in seen:
            continue
        seen.add(data)
        label = p.parent.name
        write("state", f"{label}.yaml", data)
    for test in ("codec_test.cc", "documents_test.cc", "dra_codec_test.cc"):
        for i, s in enumerate(cpp_raw_strings(ROOT / "tests/kube" / test)):
            ext = "json" if s.lstrip().startswith(("{", "[")) else "yaml"
            write("state", f"{test.removesuffix('.cc')}-{i}.{ext}", s)

    # config
    seen = set()
    for p in sorted(ROOT.glob("tests/scenarios/*/config.yaml")) + \
            [ROOT / "examples/seed/config.yaml"] + sorted(ROOT.glob("tests/kube/testdata/config/*")):
        data = p.read_bytes()
        if data in seen:
            continue
        seen.add(data)
        label = p.stem if "testdata" in p.parts else p.parent.name
        write("config", f"{label}.yaml", data)


if __name__ == "__main__":
    main()
